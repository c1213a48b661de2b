"""The probes of alignment, rounding and the result's bits: how many bits
below the largest exponent a term keeps, whether a sticky bit records the
rest, the final rounding, the result's width, product normalization, the
alignment floor and product limits; candidates told apart by running the
model on the rows seen.  A mixin of the probing session
(:mod:`fpsim.mma.probe`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..formats import Format
from ._probe_findings import Finding
from ._probe_io import Row, codes_equal, to_dtype
from .model import MMAModel
from .params import ALIGN_FRACTION_BITS, MMAParams

__all__ = ["AlignmentAndRounding", "ROUNDINGS", "snap", "result_bits_of", "cand_text"]

ROUNDINGS = ("rtz", "rne", "rup", "rdn")
_MAX_TERM_DEPTH = 40  # deepest alignment bit the extra-bits probe looks for


class AlignmentAndRounding:
    """Stages: :meth:`rounding_probe`, :meth:`result_bits_probe`,
    :meth:`extra_bits_probe`, :meth:`aligned_family` (which runs the join,
    normalization, floor and limit probes in order)."""

    # -- product range helpers ----------------------------------------------------

    def prod_lo(self) -> int:
        """Exponent of the smallest power-of-two product."""
        fin = self.fin
        return 2 * (fin.emin - (fin.mantissa_bits if self.caller.subnormals else 0))

    def prod_hi(self) -> int:
        return 2 * self.fin.emax

    def rounding_probe(self, r_bits: int | None) -> str | None:
        """Ties at the result's last bit, both signs, even and odd: the
        four rounding modes send them four different ways."""
        fout = self.fout
        r = fout.mantissa_bits if r_bits is None else r_bits
        U = math.ldexp(1.0, 1 - r)  # ulp of the sum 2 + ...
        rows = []
        for sign in (1.0, -1.0):
            for odd in (0, 1):
                c = sign * (1 + odd * U + U / 2)
                rows.append(Row.of({0: sign * 1.0}, c, f"{'odd' if odd else 'even'} tie"))
        rows, d = self.call(rows, "rounding")
        dirs = []
        for r_, x in zip(rows, d):
            exact = r_.products[0][1] + r_.c
            lo = math.copysign(abs(exact) - U / 2, exact)
            hi = math.copysign(abs(exact) + U / 2, exact)
            dirs.append("down" if x == lo else "up" if x == hi else "?")
        table = {"rtz": ["down"] * 4, "rne": ["down", "up", "down", "up"],
                 "rup": ["up", "up", "down", "down"], "rdn": ["down", "down", "up", "up"]}
        mode = next((m for m, pat in table.items() if pat == dirs), None)
        how = ("ties 2 + ulp/2 (even), 2 + 3ulp/2 (odd) and their negatives went "
               f"{'/'.join(dirs)} in magnitude")
        if mode is None and dirs == ["up"] * 4:
            how += ": ties away from zero, not one of rtz, rne, rup, rdn"
        self.f["rounding"] = Finding(mode, how, self.evidence(rows, d))
        return mode

    def result_bits_probe(self, F: int | None, block: int) -> int | None:
        """Sums exact in the alignment: ``n = 2**j`` copies of ``2**e`` and
        one ``2**(e-t)``: the output keeps the bit ``j + t`` below its
        leading one iff the result has that many fraction bits."""
        fout = self.fout
        e = min(self.prod_hi(), fout.emax - 8) - 6
        depth = fout.mantissa_bits + 1
        jmax = max(0, int(math.log2(max(block - 1, 1))))
        rows = []
        for j in range(jmax + 1):
            for t in range(1, (F if F is not None else depth) + 1):
                if j + t > depth:
                    break
                prods = {p: math.ldexp(1.0, e) for p in range(2 ** j)}
                prods[2 ** j] = math.ldexp(1.0, e - t)
                rows.append(Row.of(prods, 0.0, f"bit {j + t}"))
        rows, d = self.call(rows, "result bits")
        exact_bits, lost_bits = set(), set()
        for r, x in zip(rows, d):
            bit = int(r.note.split()[1])
            want = sum(v for _, v in r.products)
            (exact_bits if x == want else lost_bits).add(bit)
        if not rows:
            return None
        kept = max((b for b in exact_bits if all(c in exact_bits for c in range(1, b + 1))),
                   default=0)
        if lost_bits and min(lost_bits) <= kept:
            how = "irregular: some bits kept below a lost one"
        elif not lost_bits:
            kept_text = "the output's own" if kept >= fout.mantissa_bits else f"at least {kept}"
            how = f"every bit up to {kept} below the leading one kept: {kept_text}"
        else:
            how = f"bits 1..{kept} below the leading one kept, bit {kept + 1} lost"
        value = kept if lost_bits else (kept if kept < fout.mantissa_bits else None)
        pick = [i for i, r in enumerate(rows) if int(r.note.split()[1]) in (kept, kept + 1)]
        self.f["result_bits"] = Finding(result_bits_of(value, fout), how,
                                        self.evidence(rows, d, pick))
        return value

    def extra_bits_probe(self) -> tuple[int | None, bool]:
        """``+2**e``, ``-2**e`` and ``2**(e-t)`` for t = 1, 2, ...: the small
        term survives the alignment to ``2**e`` iff ``t <= 23 + extra_bits``
        (with a sticky bit, one step more, and beyond it the sticky unit)."""
        fout = self.fout
        e = min(self.prod_hi(), fout.emax - 4)
        floor = fout.emin if not self.f["output_subnormals"].value else (
            fout.emin - fout.mantissa_bits)
        lowest = max(self.prod_lo(), floor)
        ts = [t for t in range(1, _MAX_TERM_DEPTH + 1) if e - t >= lowest]
        rows = [Row.of({0: math.ldexp(1.0, e), 1: -math.ldexp(1.0, e),
                        2: math.ldexp(1.0, e - t)}, 0.0, f"t={t}") for t in ts]
        rows, d = self.call(rows, "extra alignment bits")
        kept = [x == math.ldexp(1.0, e - t) for t, x in zip(ts, d)]
        T = 0
        while T < len(kept) and kept[T]:
            T += 1
        if T == len(kept):
            self.f["extra_bits"] = Finding(None, f"every term down to 2^-{ts[-1] if ts else 0} "
                                           "relative survives: beyond the probe's range",
                                           self.evidence(rows, d, [len(rows) - 1]))
            return None, False
        rest = d[T:]
        last = ts[T - 1] if T else 0
        if all(x == 0 for x in rest):
            F, sticky = last, False
            how = (f"+2^e, -2^e, 2^(e-t): the small term survives for t <= {F}, gives 0 beyond: "
                   f"{F} bits below the largest exponent")
        elif T and all(x == math.ldexp(1.0, e - last) for x in rest):
            F, sticky = last - 1, True
            how = (f"+2^e, -2^e, 2^(e-t): exact for t <= {last}, then always 2^(e-{last}): "
                   f"{F} bits and a sticky bit")
        else:
            self.f["extra_bits"] = Finding(None, "irregular survival of small terms",
                                           self.evidence(rows, d, list(range(T, T + 3))))
            return None, False
        pick = [max(T - 1, 0), T]
        self.f["extra_bits"] = Finding(F - ALIGN_FRACTION_BITS, how, self.evidence(rows, d, pick))
        self.f["sticky_bit"] = Finding(sticky, "from the same rows: " + (
            "a cut term leaves one unit below the grid" if sticky else "a cut term leaves nothing"))
        return F, sticky

    # -- model-based refinement -----------------------------------------------------

    def eliminate(self, base: MMAParams, candidates: list[dict[str, Any]],
                  rows: Sequence[Row], what: str) -> tuple[list[dict[str, Any]], list[Row],
                                                           np.ndarray]:
        """The candidates (changes to ``base``) whose model gives every
        output the callable gave on ``rows``."""
        rows, d = self.call(rows, what)
        if not rows:
            return candidates, rows, d
        a, b, c, _ = self.seen[-1]
        keep = []
        for cand in candidates:
            try:
                params = base.replace(**cand)
            except ValueError:
                continue
            got = MMAModel(params)(self._as_in(a), self._as_in(b), self._as_out(c),
                                   chain=self.chained)
            if codes_equal(got.astype(np.float64), d).all():
                keep.append(cand)
        return keep, rows, d

    def _as_in(self, x: np.ndarray) -> np.ndarray:
        return to_dtype(x, self.fin)

    def _as_out(self, x: np.ndarray) -> np.ndarray:
        return to_dtype(x, self.fout)

    def aligned_family(self, block: int, structure: dict[str, Any]) -> None:
        F, sticky = self.extra_bits_probe()
        if F is None:
            self.rounding_probe(None)
            return
        extra = F - ALIGN_FRACTION_BITS
        if not -ALIGN_FRACTION_BITS < extra <= 8:
            self.f["extra_bits"].how += " (outside the model's range -22..8)"
            self.rounding_probe(None)
            return
        r_bits = self.result_bits_probe(F, block)
        rounding = self.rounding_probe(r_bits)
        if rounding is None:
            return
        base = MMAParams(self.fin.name, self.fout.name, k=block, extra_bits=extra,
                         sticky_bit=sticky, rounding=rounding,
                         result_bits=result_bits_of(r_bits, self.fout), **self.subnormal_flags())
        base = self.join_probe(base, F, r_bits)
        if base is None:
            return
        base = self.normalize_probe(base, F)
        base = self.tiny_probe(base, F, r_bits)
        self.params = self.limited_probe(base)

    def _scale(self) -> int:
        """Exponent around which the join and grouping rows are built."""
        return min(self.prod_hi() - 2, self.fout.emax - 12)

    def normalize_probe(self, base: MMAParams, F: int) -> MMAParams:
        """``1.5*1.5 = 2.25`` and its negative, beside small terms at the
        bottom of the grid: a unit that renormalizes products of 2 or more
        aligns to one exponent higher and loses them."""
        eb = self._scale() - 2
        s = math.ldexp(1.0, eb)
        half = eb // 2
        big = (1.5 * math.ldexp(1.0, half), 1.5 * math.ldexp(1.0, eb - half))
        nbig = (-big[0], big[1])
        rows = []
        for delta in (-2, -1, 0, 1, 2):
            for m in (1, 1.5):
                rows.append(Row.of({0: big, 1: nbig, 2: m * math.ldexp(1.0, -F + delta) * s},
                                   0.0, "2.25 cancelled"))
        rows += self.random_rows(60, positions=base.k, full_mantissas=True, eb=eb)
        keep, rows, d = self.eliminate(base, [{"normalize_products": False},
                                              {"normalize_products": True}], rows,
                                       "product normalization")
        value = keep[0]["normalize_products"] if len(keep) == 1 else (
            False if keep else None)
        how = ("products 1.5 × 1.5 = 2.25 cancelled beside small terms at the bottom of the "
               "grid: " + ("kept, so a product of 2 or more keeps the operands' exponent"
                           if value is False else "lost, so such products are renormalized"
                           if value else "not decided"))
        self.f["normalize_products"] = Finding(value, how, self.evidence(rows, d, limit=2))
        return base.replace(normalize_products=bool(value))

    def tiny_probe(self, base: MMAParams, F: int, r_bits: int | None) -> MMAParams:
        """Terms whose largest exponent ``E`` is tiny: a unit with a lower
        bound on the alignment exponent cuts a term ``2**(E - F)`` there that
        it keeps higher up (seen through the output's rounding), and a late
        join of a zero ``c`` at 2**-126 shifts tiny sums."""
        fin, fout = self.fin, self.fout
        late = base.c_joins == "last" or base.accumulation == "odd_even"
        vis = fout.emin - fout.mantissa_bits + 1 if self.f["output_subnormals"].value else \
            fout.emin
        lo = max(vis, self.prod_lo() + F, 2 * fin.emin)
        hi = min(0, fout.emax - 4)
        zero_c_matters = late and 2 * fin.emin < -126
        if lo > hi and not zero_c_matters:
            self.f["min_align_exponent"] = Finding(None, "not observable with these formats "
                                                   "(no row has all its terms low enough)")
            return base.replace(min_align_exponent=None, zero_c_at_emin=False)
        r = fout.mantissa_bits if r_bits is None else r_bits
        rows = []
        for E in range(lo, hi + 1):
            big = math.ldexp(1.0, E)
            tiny = math.ldexp(1.0, E - F)
            ulp = math.ldexp(1.0, max(E, fout.emin) - r)
            rows.append(Row.of({0: big, 1: -tiny}, 0.0, f"E={E}"))
            rows.append(Row.of({0: big, 1: tiny}, 0.0, f"E={E}"))
            rows.append(Row.of({0: big, 1: ulp / 2, 2: tiny}, 0.0, f"E={E}"))
        lsb = fout.emin - fout.mantissa_bits
        for odd in (0, 1):
            for sign in (1, -1):
                for st in (1, -1):
                    for delta in range(1, 13):
                        prods = {0: sign * math.ldexp(1.0, lsb + 9),
                                 1: sign * math.ldexp(1.0, lsb - 1),
                                 2: st * math.ldexp(1.0, lsb - 1 - delta)}
                        if odd:
                            prods[3 % base.k if base.k > 3 else 2] = sign * math.ldexp(1.0, lsb)
                        rows.append(Row.of(prods, 0.0, "tie at the output's last bit"))
        rows += self.random_rows(60, positions=base.k, full_mantissas=False,
                                 eb=max(lo, self.prod_lo() + 8))
        rows_b, d = self.call(rows, "tiny sums")
        if not rows_b:
            return base
        a, b, c, _ = self.seen[-1]

        def agrees(params: MMAParams) -> np.ndarray:
            got = MMAModel(params)(self._as_in(a), self._as_in(b), self._as_out(c),
                                   chain=self.chained)
            return codes_equal(got.astype(np.float64), d)

        cands: list[dict[str, Any]] = []
        for zc in ((False, True) if zero_c_matters else (False,)):
            cands.append({"min_align_exponent": None, "zero_c_at_emin": zc})
            ok = agrees(base.replace(min_align_exponent=None, zero_c_at_emin=zc))
            # the lowest E from which every survival row agrees with no bound
            E_rows = [(int(rw.note[2:]), bool(x)) for rw, x in zip(rows_b, ok)
                      if rw.note.startswith("E=")]
            bad = [E for E, x in E_rows if not x]
            if bad:
                m = max(bad) + 1
                cands += [{"min_align_exponent": m + j, "zero_c_at_emin": zc}
                          for j in (-1, 0, 1)]
        keep = []
        for cand in cands:
            try:
                params = base.replace(**cand)
            except ValueError:
                continue
            if agrees(params).all():
                keep.append(cand)
        how = ("a term at the bottom of the grid beside 2^E for each E down to the output's "
               "smallest, seen through the rounding; ties at the output's last bit with tiny "
               "terms")
        if not keep:
            self.f["min_align_exponent"] = Finding(None, how + ": no candidate reproduces them",
                                                   self.evidence(rows_b, d, limit=3))
            return base
        best = keep[0]
        self.f["min_align_exponent"] = Finding(best["min_align_exponent"], how + (
            "" if len(keep) == 1 else f" ({len(keep)} candidates agree)"))
        if zero_c_matters:
            self.f["zero_c_at_emin"] = Finding(best["zero_c_at_emin"], "from the same rows")
        return base.replace(**best)

    def limited_probe(self, base: MMAParams) -> MMAParams:
        """Products at or beyond the output's overflow threshold, cancelling:
        a limited unit gives NaN or inf, an exact one the difference."""
        fout = self.fout
        e = fout.emax + 1
        if self.prod_hi() < e:
            return base
        big = math.ldexp(1.0, e)
        rows = [Row.of({0: big, 1: -big}, 0.0, "huge products cancelling"),
                Row.of({0: big, 1: -big / 2}, 0.0, "huge products, finite sum")]
        keep, rows, d = self.eliminate(base, [{"products_limited": False},
                                              {"products_limited": True}], rows,
                                       "product overflow")
        value = keep[0]["products_limited"] if len(keep) == 1 else None
        how = ("2^(emax+1) - 2^(emax+1) and 2^(emax+1) - 2^emax: " + (
            "special results, so huge products overflow before the sum" if value else
            "the exact sums, so products are not limited" if value is False else
            "not decided"))
        self.f["products_limited"] = Finding(value, how, self.evidence(rows, d))
        return base.replace(products_limited=bool(value))


def snap(x: float, fmt: Format) -> float:
    """``x`` cut to ``fmt``'s precision (toward zero) and range."""
    if x == 0:
        return 0.0
    e = max(math.frexp(abs(x))[1] - 1, fmt.emin)
    q = math.ldexp(1.0, e - fmt.mantissa_bits)
    v = math.copysign(math.floor(abs(x) / q) * q, x)
    return math.copysign(min(abs(v), float(fmt.max)), v)


def result_bits_of(r: int | None, fout: Format) -> int | None:
    return None if r is None or r >= fout.mantissa_bits else r


def cand_text(c: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in c.items())


