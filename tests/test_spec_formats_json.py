"""spec/formats.json, the machine-readable description of the formats,
agrees with the code in both directions and with itself.

* it validates against spec/formats.schema.json;
* every format fpsim knows is described, and every described format is
  known to fpsim, with the same parameters, aliases, limits and codes;
* its limits and codes follow from its own parameters by the independent
  derivation of tests/oracle.py (which never imports fpsim), so the file is
  a specification a reimplementation can trust, not a dump of the code.
"""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from pathlib import Path

import jsonschema
import pytest

import fpsim

from oracle import FormatSpec

SPEC = Path(__file__).resolve().parent.parent / "spec"
DOC = json.loads((SPEC / "formats.json").read_text(encoding="utf-8"))
SCHEMA = json.loads((SPEC / "formats.schema.json").read_text(encoding="utf-8"))


def problems_against_code(doc) -> list[str]:
    """Disagreements between a formats document and fpsim."""
    found = []
    described = {f["name"]: f for f in doc["formats"]}
    known = {f.name: f for f in fpsim.formats()}
    found += [f"{n}: known to fpsim, missing from the spec" for n in sorted(set(known) - set(
        described))]
    found += [f"{n}: in the spec, unknown to fpsim" for n in sorted(set(described) - set(known))]
    for name in sorted(set(known) & set(described)):
        f, d = known[name], described[name]
        params = {"width": f.width, "sign_bits": int(f.signed), "exponent_bits": f.exponent_bits,
                  "mantissa_bits": f.mantissa_bits, "bias": f.bias,
                  "specials": f.specials.value, "subnormals": f.subnormals,
                  "infinities": f.infinities, "code_parity": f.code_parity,
                  "aliases": list(f.aliases)}
        found += [f"{name}.{k}: spec {d[k]!r}, code {v!r}" for k, v in params.items()
                  if d[k] != v]
        lim = d["limits"]
        limits = {"precision": f.precision, "emin": f.emin, "emax": f.emax, "max": f.max,
                  "min_normal": f.min_normal, "eps": f.eps,
                  "min_subnormal": f.min_subnormal if f.subnormals else None}
        for k, v in limits.items():
            spec_value = lim[k] if lim[k] is None or isinstance(lim[k], int) else Fraction(lim[k])
            if spec_value != v:
                found.append(f"{name}.limits.{k}: spec {lim[k]!r}, code {v}")
        codes = d["codes"]
        code_checks = {"max": f.max_code, "positive_infinity": f.inf_code,
                       "default_nan": f.default_nan_code}
        for k, v in code_checks.items():
            got = None if codes[k] is None else int(codes[k], 16)
            if got != v:
                found.append(f"{name}.codes.{k}: spec {codes[k]}, code {v}")
    return found


def test_the_description_validates_against_its_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(DOC)


def test_the_schema_rejects_a_malformed_description():
    bad = copy.deepcopy(DOC)
    bad["formats"][0]["limits"]["max"] = 65504.0     # a float, not an exact rational
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(SCHEMA).validate(bad)


def test_spec_and_code_agree_in_both_directions():
    assert problems_against_code(DOC) == []


def test_a_missing_format_or_a_wrong_limit_is_found():
    missing = copy.deepcopy(DOC)
    missing["formats"] = [f for f in missing["formats"] if f["name"] != "e4m3"]
    assert problems_against_code(missing) == ["e4m3: known to fpsim, missing from the spec"]
    extra = copy.deepcopy(DOC)
    extra["formats"].append(dict(extra["formats"][0], name="fp8_new"))
    assert problems_against_code(extra) == ["fp8_new: in the spec, unknown to fpsim"]
    wrong = copy.deepcopy(DOC)
    for f in wrong["formats"]:
        if f["name"] == "fp16":
            f["limits"]["max"] = "65505"
    assert problems_against_code(wrong) == ["fp16.limits.max: spec '65505', code 65504"]


@pytest.mark.parametrize("d", DOC["formats"], ids=lambda d: d["name"])
def test_limits_and_codes_follow_from_the_parameters(d):
    spec = FormatSpec(d["name"], d["exponent_bits"], d["mantissa_bits"], d["bias"],
                      d["specials"], signed=bool(d["sign_bits"]), subnormals=d["subnormals"],
                      infinities=d["infinities"] and d["specials"] != "ieee")
    lim, codes = d["limits"], d["codes"]
    assert d["width"] == spec.width
    assert Fraction(lim["max"]) == spec.max
    assert Fraction(lim["min_normal"]) == spec.min_normal
    if d["subnormals"]:
        assert Fraction(lim["min_subnormal"]) == spec.min_sub
    assert Fraction(lim["eps"]) == Fraction(1, 2 ** spec.m)
    assert lim["precision"] == spec.p and lim["emin"] == spec.emin and lim["emax"] == spec.emax
    assert Fraction(lim["overflow_threshold_rne"]) == spec.max + spec.ulp_at_max / 2
    assert spec.value(int(codes["max"], 16)) == spec.max
    assert spec.value(int(codes["min_normal"], 16)) == spec.min_normal
    if codes["min_subnormal"] is not None:
        assert spec.value(int(codes["min_subnormal"], 16)) == spec.min_sub
    if codes["one"] is not None:
        assert spec.value(int(codes["one"], 16)) == 1
    for key, sign in (("positive_zero", 0), ("negative_zero", 1)):
        if codes[key] is not None:
            assert spec.decode(int(codes[key], 16)) == ("finite", sign, 0)
    for key, sign in (("positive_infinity", 0), ("negative_infinity", 1)):
        assert (codes[key] is not None) == (spec.has_inf and (spec.signed or not sign))
        if codes[key] is not None:
            assert spec.decode(int(codes[key], 16))[:2] == ("inf", sign)
    assert (codes["default_nan"] is not None) == spec.has_nan
    if codes["default_nan"] is not None:
        assert spec.is_nan(int(codes["default_nan"], 16))
    assert (codes["negative_zero"] is not None) == (spec.has_neg_zero and spec.subnormals)
