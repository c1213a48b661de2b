#!/usr/bin/env bash
# Build the table dump of the IEEE P3109 working group's C++ reference
# (github.com/awf/p3109-cpp, header-only over MPFR) and compare every table
# with fpsim (tests/test_p3109_cpp.py).  Run by `tox -e p3109cpp`; not part
# of CI: the dump takes about 40 minutes on one core.
#
# Needs g++ (C++20), MPFR and GMP: on Debian `apt-get install g++ libmpfr-dev
# libgmp-dev libboost-dev`.  The reference's source comes from P3109CPP_SRC
# (a checkout), else it is cloned at the commit below (network needed).
# The dump resumes: tables already written are kept.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${P3109CPP_WORK:-$root/.tox/p3109cpp-work}"
src="${P3109CPP_SRC:-$work/src}"
commit=9042910
if [ ! -f "$src/p3109.h" ]; then
    git clone --quiet https://github.com/awf/p3109-cpp "$src"
    git -C "$src" checkout --quiet "$commit"
fi
mkdir -p "$work/build"
g++ -std=c++20 -O2 -I"$src" "$here/dump.cpp" -o "$work/build/dump" -lmpfr -lgmp
out="${FPSIM_P3109CPP_OUT:-$work/out}"
"$work/build/dump" --out "$out"
cd "$root"
FPSIM_P3109CPP_OUT="$out" python -m pytest tests/test_p3109_cpp.py -s -p no:cacheprovider "$@"
