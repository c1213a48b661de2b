// dump.cpp -- exhaustive result tables from the IEEE P3109 C++ reference implementation
// (github.com/awf/p3109-cpp), for comparison with another implementation.
//
// Build (from /tmp/p3109cpp):
//   g++ -std=c++20 -O2 -Isrc dump.cpp -o build/dump -lmpfr -lgmp
//
// Usage:
//   build/dump [--out DIR] [--formats f1,f2,...] [--ops add,subtract,...] [--phase N] [--no-resume]
//
// Output layout (all under DIR, default /tmp/p3109cpp/out):
//   {add,subtract,multiply,divide}/{format}/{mode}/{sat}.u8   65536 bytes, index = x*256 + y
//   sqrt/{format}/{mode}/{sat}.u8                            256 bytes,   index = x
//   convert/{format}/{mode}/{sat}.u8                         one byte per sample of convert_input.u32
//   convert_input.u32                                        float32 bit patterns, little-endian uint32
//   decode/{format}.f64                                      Decode(code) for all 256 codes, little-endian double
//   skipped.txt                                              combinations not written, with reason
//   manifest.tsv                                             one line per written file: op format mode sat seconds
//
// Every result byte is the .codepoint of the value returned by the library call; nothing is computed
// outside the library except the loop over operands.

#include "p3109.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace p3109;

// ---------------------------------------------------------------------------------------------
// Formats, rounding modes, saturation modes

template <unsigned P, Signedness S, Domain D>
using B8 = binary<8, P, S, D>;

template <typename RM>
struct RMName;
#define RMNAME(T)                                                                                                      \
  template <>                                                                                                          \
  struct RMName<T> {                                                                                                   \
    static constexpr const char *value = #T;                                                                           \
  };
RMNAME(NearestTiesToEven)
RMNAME(NearestTiesToAway)
RMNAME(TowardZero)
RMNAME(TowardPositive)
RMNAME(TowardNegative)
RMNAME(TowardMaxMagnitude)
RMNAME(ToOdd)

template <typename SM>
struct SMName;
template <>
struct SMName<SatFinite> {
  static constexpr const char *value = "SatFinite";
};
template <>
struct SMName<SatPropagate> {
  static constexpr const char *value = "SatPropagate";
};
template <>
struct SMName<OvfInf> {
  static constexpr const char *value = "OvfInf";
};

// Does the library accept this (format, rounding, saturation) combination?
// Project<Format>(X, ProjectionSpec<RM,SM>) carries  requires(Format::is_extended || SM == SatFinite).
template <typename F, typename RM, typename SM>
constexpr bool accepted = requires(mpfr_float X) { Project<F>(X, ProjectionSpec<RM, SM>{}); };

// ---------------------------------------------------------------------------------------------
// Jobs

enum class Kind { Binary, Unary, Convert };

struct Job {
  std::string op, fmt, mode, sat;
  Kind kind;
  bool accepted;
  std::string reject_reason;
  std::function<std::uint64_t(std::uint64_t, std::uint64_t)> fn; // (x, y) codes, or (float bits, 0)
  bool priority = false;
  int phase = 0;
};

static std::vector<Job> g_jobs;

static float bits_to_float(std::uint64_t b)
{
  std::uint32_t u = static_cast<std::uint32_t>(b);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <typename F, typename RM, typename SM>
void register_combo()
{
  const std::string fmt = F::name();
  const std::string mode = RMName<RM>::value;
  const std::string sat = SMName<SM>::value;
  auto add_job = [&](const char *op, Kind kind, auto fn) {
    Job j;
    j.op = op;
    j.fmt = fmt;
    j.mode = mode;
    j.sat = sat;
    j.kind = kind;
    j.accepted = accepted<F, RM, SM>;
    if (!j.accepted)
      j.reject_reason = "rejected by library at compile time: Project<Format> requires(Format::is_extended || "
                        "SM == SatFinite)";
    j.fn = fn;
    g_jobs.push_back(std::move(j));
  };
  if constexpr (accepted<F, RM, SM>)
  {
    using PS = ProjectionSpec<RM, SM>;
    add_job("add", Kind::Binary, [](std::uint64_t x, std::uint64_t y) { return Add<F>(F{x}, F{y}, PS{}).codepoint; });
    add_job("subtract", Kind::Binary,
      [](std::uint64_t x, std::uint64_t y) { return Subtract<F>(F{x}, F{y}, PS{}).codepoint; });
    add_job("multiply", Kind::Binary,
      [](std::uint64_t x, std::uint64_t y) { return Multiply<F>(F{x}, F{y}, PS{}).codepoint; });
    add_job("divide", Kind::Binary,
      [](std::uint64_t x, std::uint64_t y) { return Divide<F>(F{x}, F{y}, PS{}).codepoint; });
    add_job("sqrt", Kind::Unary, [](std::uint64_t x, std::uint64_t) { return Sqrt<F>(F{x}, PS{}).codepoint; });
    add_job("convert", Kind::Convert,
      [](std::uint64_t b, std::uint64_t) { return ConvertFromIEEE754<F>(bits_to_float(b), PS{}).codepoint; });
  }
  else
  {
    auto none = [](std::uint64_t, std::uint64_t) -> std::uint64_t { return 0; };
    for (const char *op : {"add", "subtract", "multiply", "divide"})
      add_job(op, Kind::Binary, none);
    add_job("sqrt", Kind::Unary, none);
    add_job("convert", Kind::Convert, none);
  }
}

template <typename F, typename RM>
void register_rm()
{
  register_combo<F, RM, SatFinite>();
  register_combo<F, RM, SatPropagate>();
  register_combo<F, RM, OvfInf>();
}

// decode tables and convert-sample helpers, per format
struct FormatInfo {
  std::string name;
  std::function<double(std::uint64_t)> decode; // library Decode, converted to double (exact for K=8)
};
static std::vector<FormatInfo> g_formats;

template <typename F>
void register_format()
{
  g_formats.push_back({F::name(), [](std::uint64_t c) { return Decode<F>(F{c}).template convert_to<double>(); }});
  register_rm<F, NearestTiesToEven>();
  register_rm<F, NearestTiesToAway>();
  register_rm<F, TowardZero>();
  register_rm<F, TowardPositive>();
  register_rm<F, TowardNegative>();
  register_rm<F, TowardMaxMagnitude>();
  register_rm<F, ToOdd>();
}

template <unsigned P>
void register_p()
{
  if constexpr (P <= 7)
  {
    register_format<B8<P, Signedness::Signed, Domain::Extended>>();
    register_format<B8<P, Signedness::Signed, Domain::Finite>>();
  }
  register_format<B8<P, Signedness::Unsigned, Domain::Extended>>();
  register_format<B8<P, Signedness::Unsigned, Domain::Finite>>();
}

template <unsigned... Ps>
void register_all(std::integer_sequence<unsigned, Ps...>)
{
  (register_p<Ps + 1>(), ...);
}

// ---------------------------------------------------------------------------------------------
// convert input sample

static std::uint32_t fbits(float f)
{
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

static std::vector<std::uint32_t> make_convert_input()
{
  std::set<std::uint32_t> s;
  auto add_with_neighbours = [&](float f) {
    for (float g : {f, -f})
    {
      s.insert(fbits(g));
      s.insert(fbits(std::nextafter(g, std::numeric_limits<float>::infinity())));
      s.insert(fbits(std::nextafter(g, -std::numeric_limits<float>::infinity())));
    }
  };
  auto add_double = [&](double d) {
    float f = static_cast<float>(d);
    if (static_cast<double>(f) == d)
      add_with_neighbours(f);
    else
    { // not exact in float32 (does not happen for K=8 formats): add both float roundings
      add_with_neighbours(std::nextafter(f, std::numeric_limits<float>::infinity()));
      add_with_neighbours(std::nextafter(f, -std::numeric_limits<float>::infinity()));
      add_with_neighbours(f);
    }
  };

  for (const auto &fi : g_formats)
  {
    std::vector<double> vals;
    for (std::uint64_t c = 0; c < 256; ++c)
    {
      double v = fi.decode(c);
      if (std::isfinite(v))
        vals.push_back(v);
    }
    std::sort(vals.begin(), vals.end());
    vals.erase(std::unique(vals.begin(), vals.end()), vals.end());
    // exact values (and their negations) and float32 neighbours
    for (double v : vals)
      add_double(v);
    // midpoints between consecutive values, with neighbours
    for (size_t i = 0; i + 1 < vals.size(); ++i)
      add_double((vals[i] + vals[i + 1]) / 2);
    // beyond max: the midpoint/next step above MaxFinite, and multiples
    const double M = vals.back();
    const double step = vals.size() >= 2 ? M - vals[vals.size() - 2] : M;
    for (double k : {0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0})
      add_double(M + k * step);
    for (double k : {1.0 + 1.0 / 1024, 1.125, 1.5, 2.0, 4.0, 16.0, 256.0, 65536.0})
      add_double(M * k);
    // below min positive: fractions of the smallest positive value
    double minpos = 0;
    for (double v : vals)
      if (v > 0)
      {
        minpos = v;
        break;
      }
    for (double k : {0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.25, 1.5, 1.75})
      add_double(minpos * k);
  }
  // specials
  for (std::uint32_t b : {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
         0x7fbfffffu, 0x7fffffffu, 0xffffffffu, 0xff800001u, 0x7f7fffffu, 0xff7fffffu, 0x00800000u, 0x80800000u,
         0x00800001u, 0x007fffffu, 0x807fffffu})
    s.insert(b);
  // float32 subnormals
  for (std::uint32_t b : {0x1u, 0x2u, 0x3u, 0x4u, 0x7u, 0x10u, 0x100u, 0x1000u, 0x10000u, 0x100000u, 0x200000u,
         0x3fffffu, 0x400000u, 0x400001u, 0x600000u, 0x7ffffeu})
  {
    s.insert(b);
    s.insert(b | 0x80000000u);
  }
  // powers of two across the whole float32 range, and neighbours
  for (int e = -149; e <= 127; ++e)
    add_with_neighbours(std::ldexp(1.0f, e));

  std::vector<std::uint32_t> out(s.begin(), s.end());
  std::mt19937 rng(3109u);
  for (int i = 0; i < 100000; ++i)
    out.push_back(static_cast<std::uint32_t>(rng()));
  return out;
}

// ---------------------------------------------------------------------------------------------
// running

static void write_file(const fs::path &p, const std::vector<std::uint8_t> &data)
{
  fs::create_directories(p.parent_path());
  fs::path tmp = p;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(reinterpret_cast<const char *>(data.data()), static_cast<std::streamsize>(data.size()));
    if (!f)
      throw std::runtime_error("write failed: " + tmp.string());
  }
  fs::rename(tmp, p);
}

static std::string job_key(const Job &j) { return j.op + "/" + j.fmt + "/" + j.mode + "/" + j.sat; }

static std::set<std::string> split_csv(const std::string &s)
{
  std::set<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty())
      out.insert(item);
  return out;
}

int main(int argc, char **argv)
{
  ensure_mpfr_precision();

  fs::path outdir = "/tmp/p3109cpp/out";
  std::set<std::string> only_formats, only_ops;
  bool resume = true;
  int only_phase = 0;
  for (int i = 1; i < argc; ++i)
  {
    std::string a = argv[i];
    if (a == "--out" && i + 1 < argc)
      outdir = argv[++i];
    else if (a == "--formats" && i + 1 < argc)
      only_formats = split_csv(argv[++i]);
    else if (a == "--ops" && i + 1 < argc)
      only_ops = split_csv(argv[++i]);
    else if (a == "--phase" && i + 1 < argc)
      only_phase = std::atoi(argv[++i]);
    else if (a == "--no-resume")
      resume = false;
    else
    {
      std::cerr << "unknown argument " << a << "\n";
      return 2;
    }
  }
  fs::create_directories(outdir);

  register_all(std::make_integer_sequence<unsigned, 8>{});

  // decode tables
  for (const auto &fi : g_formats)
  {
    std::vector<std::uint8_t> buf(256 * 8);
    for (std::uint64_t c = 0; c < 256; ++c)
    {
      double v = fi.decode(c);
      std::memcpy(&buf[c * 8], &v, 8);
    }
    write_file(outdir / "decode" / (fi.name + ".f64"), buf);
  }

  // convert input
  const std::vector<std::uint32_t> conv_in = make_convert_input();
  {
    std::vector<std::uint8_t> buf(conv_in.size() * 4);
    for (size_t i = 0; i < conv_in.size(); ++i)
      for (int b = 0; b < 4; ++b)
        buf[i * 4 + b] = static_cast<std::uint8_t>(conv_in[i] >> (8 * b));
    write_file(outdir / "convert_input.u32", buf);
  }
  std::cerr << "convert_input: " << conv_in.size() << " samples (" << conv_in.size() - 100000
            << " structured + 100000 random)\n";

  // ordering: phase 1 = priority formats, binary ops + sqrt; phase 2 = priority formats, convert;
  //           phase 3 = other formats, binary ops + sqrt;     phase 4 = other formats, convert.
  const std::vector<std::string> prio = {
    "binary8p3se", "binary8p3sf", "binary8p3ue", "binary8p1se", "binary8p4uf", "binary8p8ue"};
  auto fmt_rank = [&](const std::string &f) {
    auto it = std::find(prio.begin(), prio.end(), f);
    if (it != prio.end())
      return static_cast<int>(it - prio.begin());
    for (size_t i = 0; i < g_formats.size(); ++i)
      if (g_formats[i].name == f)
        return 100 + static_cast<int>(i);
    return 1000;
  };
  for (auto &j : g_jobs)
  {
    j.priority = std::find(prio.begin(), prio.end(), j.fmt) != prio.end();
    j.phase = (j.priority ? 1 : 3) + (j.kind == Kind::Convert ? 1 : 0);
  }
  std::stable_sort(g_jobs.begin(), g_jobs.end(), [&](const Job &a, const Job &b) {
    if (a.phase != b.phase)
      return a.phase < b.phase;
    return fmt_rank(a.fmt) < fmt_rank(b.fmt);
  });

  // skipped.txt: rebuilt from a persistent record so reruns do not duplicate lines
  std::set<std::string> skipped_lines;
  const fs::path skipped_path = outdir / "skipped.txt";
  if (resume && fs::exists(skipped_path))
  {
    std::ifstream f(skipped_path);
    std::string line;
    while (std::getline(f, line))
      if (!line.empty())
        skipped_lines.insert(line);
  }
  auto flush_skipped = [&]() {
    std::ofstream f(skipped_path);
    for (const auto &l : skipped_lines)
      f << l << "\n";
  };

  // crash detection: if a previous run died in the middle of a job, record it as skipped
  const fs::path current_path = outdir / ".current";
  std::set<std::string> crashed;
  if (resume && fs::exists(current_path))
  {
    std::ifstream f(current_path);
    std::string key;
    std::getline(f, key);
    if (!key.empty())
    {
      crashed.insert(key);
      skipped_lines.insert(key + "\tprocess died while computing this combination (abort/assertion/signal)");
    }
  }
  for (const auto &l : skipped_lines)
    if (l.find("process died") != std::string::npos)
      crashed.insert(l.substr(0, l.find('\t')));
  flush_skipped();

  std::ofstream manifest(outdir / "manifest.tsv", std::ios::app);
  const auto t_all = std::chrono::steady_clock::now();
  size_t n_written = 0, n_rejected = 0, n_failed = 0, n_existing = 0;

  for (const auto &j : g_jobs)
  {
    if (!only_formats.empty() && !only_formats.count(j.fmt))
      continue;
    if (!only_ops.empty() && !only_ops.count(j.op))
      continue;
    if (only_phase && j.phase != only_phase)
      continue;
    const std::string key = job_key(j);
    if (!j.accepted)
    {
      skipped_lines.insert(key + "\t" + j.reject_reason);
      ++n_rejected;
      continue;
    }
    if (crashed.count(key))
      continue;
    const fs::path target = outdir / j.op / j.fmt / j.mode / (j.sat + ".u8");
    if (resume && fs::exists(target))
    {
      ++n_existing;
      continue;
    }
    {
      std::ofstream f(current_path);
      f << key << "\n";
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::uint8_t> buf;
    std::string err;
    try
    {
      if (j.kind == Kind::Binary)
      {
        buf.resize(65536);
        for (std::uint64_t x = 0; x < 256 && err.empty(); ++x)
          for (std::uint64_t y = 0; y < 256; ++y)
          {
            std::uint64_t r = j.fn(x, y);
            if (r > 255)
            {
              err = "result codepoint " + std::to_string(r) + " > 255 for x=" + std::to_string(x) +
                    " y=" + std::to_string(y);
              break;
            }
            buf[x * 256 + y] = static_cast<std::uint8_t>(r);
          }
      }
      else if (j.kind == Kind::Unary)
      {
        buf.resize(256);
        for (std::uint64_t x = 0; x < 256; ++x)
        {
          std::uint64_t r = j.fn(x, 0);
          if (r > 255)
          {
            err = "result codepoint " + std::to_string(r) + " > 255 for x=" + std::to_string(x);
            break;
          }
          buf[x] = static_cast<std::uint8_t>(r);
        }
      }
      else
      {
        buf.resize(conv_in.size());
        for (size_t i = 0; i < conv_in.size(); ++i)
        {
          std::uint64_t r;
          try
          {
            r = j.fn(conv_in[i], 0);
          }
          catch (const std::exception &e)
          {
            char hex[16];
            std::snprintf(hex, sizeof hex, "0x%08x", conv_in[i]);
            throw std::runtime_error(std::string(e.what()) + " (input " + hex + ")");
          }
          if (r > 255)
          {
            err = "result codepoint " + std::to_string(r) + " > 255 for input index " + std::to_string(i);
            break;
          }
          buf[i] = static_cast<std::uint8_t>(r);
        }
      }
    }
    catch (const std::exception &e)
    {
      err = std::string("exception: ") + e.what();
    }
    catch (...)
    {
      err = "unknown exception";
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!err.empty())
    {
      skipped_lines.insert(key + "\t" + err);
      flush_skipped();
      ++n_failed;
      std::cerr << "FAILED " << key << ": " << err << "\n";
    }
    else
    {
      write_file(target, buf);
      manifest << j.op << "\t" << j.fmt << "\t" << j.mode << "\t" << j.sat << "\t" << secs << "\n";
      manifest.flush();
      ++n_written;
      std::cerr << "wrote " << key << " (" << secs << " s)\n";
    }
    fs::remove(current_path);
  }
  flush_skipped();
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  std::cerr << "done: written " << n_written << ", already present " << n_existing << ", rejected " << n_rejected
            << ", failed " << n_failed << ", " << total << " s\n";
  return 0;
}
