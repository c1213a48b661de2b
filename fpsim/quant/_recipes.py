"""Libraries' quantization recipes as rows of data: ``recipe`` builds
the :class:`~fpsim.quant.Recipe` of ``(library, name, options)``, which
:func:`~fpsim.quant.quantize` runs (``quantize(x, recipe("torchao",
"mxfp8"))``).  No library has a code path of its own: each row sets the
fields of the steps it takes, and the steps are chosen by those fields.

The fields beyond the scaling groups and formats (defaults: fpsim's own
steps, the ``"spec"`` rows):

``ratio_format``
    The format the scale's ratio ``amax / max`` (or ``max / amax``) is
    computed in: None (the scale format), ``"input"`` (the tensor's own
    format: torchao's ``Float8Tensor``), or a format (``"fp64"``:
    ``torchao.float8``), converted to the scale format after.
``eps_on``
    ``"divisor"`` (the divisor of the division that can overflow is floored
    at ``eps``) or ``"amax"`` (amax is floored before the ratio).
``zero_scale``
    ``"one"`` (an all-zero group's scale is 1, no division: Transformer
    Engine) or ``"divide"`` (the division is made: 0 / 0 is NaN).
``scale_pow2``
    None, or ``"floor_log2"``: the scale becomes ``2**floor(RN(log2 s))``,
    the logarithm rounded to the scale format first (torchao's
    ``round_scales_to_power_of_2``).
``apply``
    How the scale reaches the elements: ``"reciprocal"`` (``x × RN(1 /
    s)``), ``"divide"`` (``x / s``) or ``"multiply"`` (``x × s``); None
    follows ``scale_rule``.
``clamp``
    Scaled values clamped to the element's range before the cast (NaN
    stays, an infinity becomes the largest value), as ``torch.clamp``.
``dequant``, ``dequant_format``, ``output``
    ``dequantize()``: ``"multiply"`` or ``"divide"`` by the scale, rounded
    in ``dequant_format`` (default: the output format), converted to
    ``output`` (``"input"``: the tensor's format).  None: exact, to
    float64 (fpsim's own).
``element_nan``
    None (fpsim's: a NaN element of a format without NaN is refused or, in
    MX blocks, code 0 with INVALID) or ``"all_ones"`` (torch's float8 casts:
    a NaN is its sign and an all-ones magnitude, FNUZ's 0x80; a NaN the
    element format cannot hold is code 0 of its sign).
``nan``
    The NaN rules of the CPU the library runs on (``"x86"``: an invalid
    operation gives the negative default NaN, whose E4M3 code is 0xFF).
``scale_rounding``, ``mx_inf``, ``mx_nan_divisor``
    MX: the E8M0 exponent rule (``fpsim.quant.SCALE_ROUNDINGS`` and
    ``"rceil_log2"``); an infinite block's exponent (``"max"``: 127;
    ``"exponent"``: the infinity's exponent field read as 2**128, so
    ``128 - emax``); what a NaN block's elements are divided by (``"one"``,
    or ``"inf"``: finite elements become ±0).
``tensor_scale``, ``block_scale_min``, ``multiplier``
    NVFP4: the tensor scale's form (``"encode"``: ``2688 / amax``,
    Transformer Engine; ``"decode"``: ``amax / 2688``; None: one level),
    the floor of the block scale before its E4M3 cast, and the elements'
    multiplier (``"quotient"``: ``s_enc / S_b``; ``"reciprocal"``: the
    reciprocal of the block scale, or of the tensor scale divided by it).
``bugs``
    The library's bugs the row reproduces (each named in ``fpsim.quant.BUGS`` with
    its source line); ``recipe(..., bugs=False)`` drops them all, a set
    keeps those named.

>>> from fpsim.quant import quantize, recipe
>>> r = recipe("torchao", "mxfp8", scale_rounding="rceil")
>>> r.scale_rounding, sorted(r.bugs), r.output
('rceil_log2', ['log2_rounded', 'rceil_code0_unscaled'], 'input')
>>> import numpy as np
>>> x = np.zeros((1, 32), np.float32); x[0, :3] = [2.0**-120, -2.0**-121, 3 * 2.0**-124]
>>> q = quantize(x, recipe("torchao", "mxfp8"))          # FLOOR, the divisor floored
>>> int(q.scale.view(np.uint8)[0, 0]), q.dequantize()[0, :2].tolist()   # halved
(0, [3.76158192263132e-37, -1.88079096131566e-37])
>>> q = quantize(x, recipe("spec", "mxfp8"))
>>> q.dequantize()[0, :2].tolist() == [2.0**-120, -2.0**-121]
True
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..formats import E2M1, E8M0, FP32, FP64
from ..formats import format as _lookup
from ._quantize import Recipe

__all__ = ["recipe", "LIBRARIES", "BUGS"]

LIBRARIES = ("spec", "te", "torchao", "modelopt", "compressed-tensors", "brevitas")
NAMES = ("fp8", "mxfp8", "mxfp6", "mxfp4", "mxint8", "nvfp4")

_TORCHAO = "torchao 0.18.0 (tools/quant_peers/torchao-0.18.0.md)"

#: Each bug a row can reproduce: where it is, and what it does.
BUGS: dict[str, str] = {
    "divisor_floor": "torchao 0.18.0 prototype/mx_formats/mx_tensor.py:359 (to_mx): the FP32 "
                     "divisor is clamped at 2**-126 while code 0 (2**-127) is stored, so "
                     "every element of a k = -127 block is halved",
    "rceil_code0_unscaled": "torchao 0.18.0 mx_tensor.py:186-203 (_to_mx_rceil): a block "
                            "whose code is 0 is multiplied by 1.0, not 2**127: every "
                            "element of a block with amax <= max * 2**-127 becomes +-0",
    "mx_even_fp4_width": "compressed-tensors 0.20.1 quantization/utils/mxfp_utils.py:147-149 "
                         "(generate_mx_scales): the MXFP8 scale is rounded up a binade at "
                         "amax / 2**e >= 1.75, E2M1's mantissa width, not E4M3's 1.9375",
    "inf_scale_stored_one": "compressed-tensors 0.20.1 compressors/mx_utils.py:18-30 "
                            "(compress_mx_scale): an infinite MX scale (a NaN or an "
                            "infinity in the block, or an amax that rounds up past the "
                            "input format's range) is stored as int32(127 + log2(inf)), "
                            "whose low byte on x86 is 0x7F: scale 1, the block's NaN or "
                            "overflow lost (its finite elements, divided by inf, read back "
                            "as 0); without it, OCP MX's NaN scale 0xFF",
    "negative_zero_held": "brevitas 0.13.4 core/quant/float.py FloatQuant (81-101) and "
                          "core/quant/int_base.py IntQuant (66-91), Q10b of "
                          "tools/quant_peers/brevitas-0.13.4.md: an element rounding to zero "
                          "from below is -0.0 in its float value, which E4M3FNUZ, E5M2FNUZ "
                          "(their 0x80 is NaN) and MXINT8 cannot hold: it dequantizes to -0",
    "mxint8_emax_one": "brevitas 0.13.4 core/scaling/int_scaling.py:43-58 "
                       "(PowerOfTwoIntScaling: max_int + 1 = 128): the MXINT8 scale over "
                       "integer codes is 2**(floor(log2 amax) - 7), one power of two below "
                       "OCP MX's 2**(floor(log2 amax) - 6): the largest element of every "
                       "block saturates",
    "nan_scale_lost": "ModelOpt 0.47.0 qtensor/mxfp8_tensor.py:42-66 (a NaN block: "
                      "descale > 0 is false, so -127, code 0, its elements x 2**127 clamped "
                      "to +-448) and mxfp4_tensor.py:74-80 (a NaN or infinite exponent cast "
                      "to uint8 is code 0, every element of the block -0)",
    "e2m1_ties_toward_zero": "ModelOpt 0.47.0 qtensor/mxfp4_tensor.py:46-53 (cast_fp4): the "
                             "ties 0.75, 1.75 and 3.5 round down, and +0 is stored as -0 "
                             "(the element cast is fpsim.quant._steps.CASTS['modelopt_mxfp4'])",
    "log2_rounded": "torchao 0.18.0 prototype/mx_formats/mx_tensor.py:176 (_to_mx_rceil, "
                    "RCEIL) and float8/float8_utils.py:246 "
                    "(_round_scale_down_to_power_of_2); ModelOpt 0.47.0 "
                    "qtensor/mxfp8_tensor.py:57-63 (_compute_e8m0_exponent) and "
                    "mxfp4_tensor.py:75 (quantize); brevitas 0.13.4 "
                    "core/restrict_val.py:187-210 (PowerOfTwoRestrictValue, in the "
                    "input's format): a scale's exponent is floor or ceil of torch.log2 "
                    "of a value, rounded to FP32 (brevitas: the input's format) first, "
                    "which lands on the integer just below (floor) or above (ceil) a "
                    "power of two: the scale is one power of two off the exact "
                    "floor(log2) or ceil(log2), too high (elements lose a bit) or too "
                    "low (the largest saturate)",
    "token_2d_tensor": "compressed-tensors 0.20.1 quantization/utils/helpers.py:161-192 "
                       "(compute_dynamic_scales_and_zp): TOKEN keeps axes 0 and 1 and "
                       "reduces the rest, so on a 2-D tensor (tokens, hidden) nothing is "
                       "left to reduce, `if not reduce_dims` takes aminmax of the whole "
                       "tensor: one scale, not one per token",
    "nan_element_bits": "torchao 0.18.0 prototype/custom_fp_utils.py:27-142 "
                        "(_f32_to_floatx_unpacked): a NaN reaches neither the saturation "
                        "nor the subnormal branch, and the normal branch turns its bits "
                        "into a number (0x7FC00000 -> E2M1 0x3, 1.5)",
}

#: The NaN torch.max(|x|) (a reduction over the whole tensor) returns on the
#: CPU, by input format (torch 2.13.0: tools/quant_peers/torchao-0.18.0.md §0;
#: FP16's read back through the scale it leads to).
_TORCH_MAX_NAN = {"fp32": 0xFFFFFFFF, "fp16": 0xFE00, "bf16": 0x7FC0}

_MX_DEFAULT = {"mxfp8": "e4m3", "mxfp6": "e2m3", "mxfp4": "e2m1"}
_MX_ELEMENTS = {"mxfp8": ("e4m3", "e5m2"), "mxfp6": ("e2m3", "e3m2"), "mxfp4": ("e2m1",)}


def _options(library: str, name: str, given: dict[str, Any], accepted: dict[str, tuple]
             ) -> dict[str, Any]:
    """``given`` checked against ``accepted`` (option -> allowed values;
    the first is the default), with the defaults filled in."""
    unknown = sorted(set(given) - set(accepted) - {"bugs"})
    if unknown:
        raise ValueError(f"recipe({library!r}, {name!r}): unknown option(s) {unknown}; "
                         f"accepted: {', '.join(accepted) or 'none'}, bugs")
    out = {}
    for key, allowed in accepted.items():
        value = given.get(key, allowed[0])
        if value not in allowed:
            raise ValueError(f"recipe({library!r}, {name!r}): {key}={value!r}; accepted "
                             + ", ".join(repr(a) for a in allowed))
        out[key] = value
    return out


def _spec(name: str, given: dict[str, Any]) -> Recipe:
    if name == "fp8":
        o = _options("spec", name, given, {"element": ("e4m3", "e5m2"),
                                           "scaling": ("tensor", "channel")})
        return Recipe(o["scaling"], FP32, element=_lookup(o["element"]), name=name,
                      source="fpsim (docs/quant.rst): scale = amax / max in FP32, elements "
                             "x × RN(1 / scale)")
    if name in _MX_DEFAULT:
        from ._mx import SCALE_ROUNDINGS

        o = _options("spec", name, given, {"element": _MX_ELEMENTS[name],
                                           "scale_rounding": SCALE_ROUNDINGS})
        o.setdefault("element", _MX_DEFAULT[name])
        return Recipe("mx", E8M0, scale_rounding=o["scale_rounding"], element=_lookup(
            o["element"]), name=name, source="OCP MX v1.0 §6.3 (fpsim/quant/_mx.py)")
    o = _options("spec", name, given, {})
    return Recipe("nvfp4", FP32, element=E2M1, name=name,
                  source="Transformer Engine's NVFP4 recipe (fpsim/quant/_nvfp4.py)")


def _te(name: str, given: dict[str, Any]) -> Recipe:
    if name == "fp8":
        o = _options("te", name, given, {"element": ("e4m3", "e5m2"),
                                         "scaling": ("tensor", "channel")})
        return Recipe(o["scaling"], FP32, "max/amax", element=_lookup(o["element"]),
                      library="te", name=name,
                      source="Transformer Engine compute_scale_from_amax: scale = max / amax "
                             "in FP32, 1 for a zero amax; elements x × scale")
    if name == "nvfp4":
        _options("te", name, given, {})
        return Recipe("nvfp4", FP32, element=E2M1, library="te", name=name,
                      source="Transformer Engine compute_global_encode_scaling_factor_FP4 "
                             "(fpsim/quant/_nvfp4.py)")
    raise ValueError(f"recipe('te', {name!r}): fpsim has Transformer Engine's 'fp8' and "
                     "'nvfp4' recipes")


def _torchao(name: str, given: dict[str, Any]) -> Recipe:
    common = dict(library="torchao", name=name, nan="x86", output="input",
                  element_nan="all_ones")
    if name in _MX_DEFAULT:
        o = _options("torchao", name, given, {
            "element": (_MX_DEFAULT[name],) + tuple(e for e in _MX_ELEMENTS[name]
                                                   if e != _MX_DEFAULT[name]),
            "scale_rounding": ("floor", "ceil", "even", "rceil"), "block_size": (32,)})
        elem = _lookup(o["element"])
        rceil = o["scale_rounding"] == "rceil"
        bugs = {"rceil_code0_unscaled", "log2_rounded"} if rceil else {"divisor_floor"}
        if not elem.has_nan:
            bugs.add("nan_element_bits")
        return Recipe("mx", E8M0, element=elem, block_size=32, inputs=("bf16", "fp32"),
                      scale_rounding="rceil_log2" if rceil else o["scale_rounding"],
                      mx_inf="max" if rceil else "exponent",
                      mx_nan_divisor="one" if rceil else "inf",
                      clamp=rceil or elem.has_nan, dequant="multiply", bugs=frozenset(bugs),
                      source=_TORCHAO + ": prototype/mx_formats/mx_tensor.py to_mx "
                             "(214-398), _to_mx_rceil (109-211), to_dtype (431-479)",
                      **common)
    if name == "nvfp4":
        o = _options("torchao", name, given, {"per_tensor_scale": (False, True)})
        return Recipe("nvfp4", FP32, element=E2M1, block_size=16, inputs=("bf16", "fp32"),
                      tensor_scale="decode" if o["per_tensor_scale"] else None,
                      block_scale_min=2.0 ** -6, multiplier="reciprocal", clamp=True,
                      dequant="multiply", dequant_format=FP32, scale_first=True,
                      tensor_nan=_TORCH_MAX_NAN, bugs=frozenset({"nan_element_bits"}),
                      source=_TORCHAO + ": prototype/mx_formats/nvfp4_tensor.py "
                             "nvfp4_quantize (772-854), per_tensor_amax_to_scale (756-769), "
                             "dequantize (199-257)", **common)
    o = _options("torchao", name, given, {"element": ("e4m3", "e5m2"),
                                          "scaling": ("tensor", "row"),
                                          "impl": ("inference", "training"),
                                          "round_scales_to_power_of_2": (False, True)})
    scaling = "tensor" if o["scaling"] == "tensor" else "channel"
    elem = _lookup(o["element"])
    if o["impl"] == "inference":
        if o["round_scales_to_power_of_2"]:
            raise ValueError("recipe('torchao', 'fp8'): round_scales_to_power_of_2 applies "
                             "to impl='training' (torchao.float8)")
        return Recipe(scaling, FP32, "amax/max", element=elem, ratio_format="input",
                      zero_scale="divide", apply="divide", clamp=True, dequant="multiply",
                      dequant_format=FP32,
                      source=_TORCHAO + ": quantization/quant_primitives.py "
                             "_choose_scale_float8 (2243-2282), _quantize_affine_float8 "
                             "(2341-2357), _dequantize_affine_float8 (2360-2374)", **common)
    pow2 = o["round_scales_to_power_of_2"]
    return Recipe(scaling, FP32, "max/amax", element=elem, ratio_format=FP64, eps=1e-12,
                  clamp=True, scale_first=True, tensor_nan=_TORCH_MAX_NAN,
                  bugs=frozenset({"log2_rounded"}) if pow2 else frozenset(),
                  scale_pow2="floor_log2" if pow2 else None,
                  dequant="divide", dequant_format=FP32,
                  source=_TORCHAO + ": float8/float8_utils.py amax_to_scale (32-53), "
                         "to_fp8_saturated (118-139); float8_training_tensor.py "
                         "to_original_precision (205)",
                  **{**common, "output": "input" if scaling == "tensor" else "fp32"})


_BREVITAS = "brevitas 0.13.4 (tools/quant_peers/brevitas-0.13.4.md)"


def _brevitas(name: str, given: dict[str, Any]) -> Recipe:
    """brevitas' weight quantizers: every step in the input's format D."""
    common = dict(library="brevitas", name=name, nan="x86", output="input",
                  element_nan="all_ones", eps=1e-10, eps_on="amax", zero_scale="divide",
                  apply="divide", dequant="multiply", inf_scaled="nan", float_elements=True)
    if name == "fp8":
        o = _options("brevitas", name, given, {"element": ("e4m3", "e5m2", "e4m3fnuz",
                                                           "e5m2fnuz"),
                                               "scaling": ("tensor", "channel")})
        fnuz = o["element"].endswith("fnuz")
        return Recipe(o["scaling"], "input", "amax/max", element=_lookup(o["element"]),
                      bugs=frozenset({"negative_zero_held"}) if fnuz else frozenset(),
                      source=_BREVITAS + ": quant/float_base.py ScaledFloatWeightBase, "
                             "core/scaling/runtime.py _StatsScaling (116-129), "
                             "core/quant/float.py FloatQuant (66-101)", **common)
    if name in _MX_DEFAULT:
        o = _options("brevitas", name, given, {
            "element": (_MX_DEFAULT[name],) + tuple(e for e in _MX_ELEMENTS[name]
                                                   if e != _MX_DEFAULT[name]),
            "block_size": (32,)})
        return Recipe("mx", "input", "pow2", element=_lookup(o["element"]), block_size=32,
                      bugs=frozenset({"log2_rounded"}),
                      source=_BREVITAS + ": quant/mx_quant_ocp.py MXMixin (57-70), "
                             "core/restrict_val.py PowerOfTwoRestrictValue (187-210)", **common)
    if name == "mxint8":
        _options("brevitas", name, given, {"block_size": (32,)})
        from ._elements import MXINT8

        # the scale over integer codes: 2**floor(log2 amax) / 2**7 (max_int + 1 =
        # 128), then in MXINT8's units (value = code × 2**-6) × 2**6
        return Recipe("mx", "input", "pow2", element=MXINT8, block_size=32, scale_emax=7,
                      scale_unit=6, bugs=frozenset({"mxint8_emax_one", "negative_zero_held",
                                                      "log2_rounded"}),
                      source=_BREVITAS + ": quant/mx_quant_ocp.py MXInt8Weight, "
                             "core/scaling/int_scaling.py PowerOfTwoIntScaling (43-58), "
                             "core/quant/int_base.py IntQuant (66-91)",
                      **{**common, "inf_scaled": "saturate"})
    raise ValueError(f"recipe('brevitas', {name!r}): fpsim has brevitas' 'fp8', 'mxfp8', "
                     "'mxfp6', 'mxfp4' and 'mxint8'")


_MODELOPT = "ModelOpt 0.47.0 (tools/quant_peers/modelopt-0.47.0.md)"


def _modelopt(name: str, given: dict[str, Any]) -> Recipe:
    """ModelOpt's real quantization (``modelopt/torch/quantization/qtensor``)."""
    common = dict(library="modelopt", name=name, nan="x86", output="input",
                  element_nan="all_ones", dequant="multiply")
    if name == "fp8":
        o = _options("modelopt", name, given, {"scaling": ("tensor", "channel", "block"),
                                               "block_size": (None, 16, 32, 64, 128),
                                               "path": ("qtensor", "fake")})
        if o["path"] == "fake":
            if o["scaling"] != "tensor":
                raise ValueError("recipe('modelopt', 'fp8', path='fake'): the fake "
                                 "quantization is per tensor here")
            # tensor_quant.py _fp8_eager (46-59), what TensorQuantizer's forward runs
            # on the CPU: amax in FP32, <= 2**-24 taken as 1; scale = RN(1 / amax) × 448;
            # x × scale clamped, cast; q × RN(1 / scale), then the input's format
            return Recipe("tensor", FP32, "max/amax", element=_lookup("e4m3"),
                          amax_to_one=2.0 ** -24, ratio_op="reciprocal_times", clamp=True,
                          dequant_format=FP32,
                          source=_MODELOPT + ": tensor_quant.py scaled_e4m3, _fp8_eager "
                                 "(46-59)", **{**common, "dequant": "multiply_reciprocal"})
        if (o["scaling"] == "block") != (o["block_size"] is not None):
            raise ValueError("recipe('modelopt', 'fp8'): block_size= goes with "
                             "scaling='block' (1-D blocks along axis=)")
        scaling = "mx" if o["scaling"] == "block" else o["scaling"]
        return Recipe(scaling, "input", "amax/max", element=_lookup("e4m3"),
                      block_size=o["block_size"],
                      zero_scale="divide", apply="divide", clamp=True,
                      source=_MODELOPT + ": qtensor/fp8_tensor.py FP8QTensor.quantize "
                             "(40-113), dequantize (115-151)", **common)
    if name == "nvfp4":
        _options("modelopt", name, given, {"block_size": (16,)})
        return Recipe("nvfp4", FP32, element=E2M1, block_size=16, tensor_scale="decode",
                      block_scale_min=2.0 ** -9, block_scale_zero=1.0,
                      multiplier="divide_product", element_cast="modelopt_nvfp4",
                      dequant_format=FP32, dequant_zero="positive",
                      source=_MODELOPT + ": qtensor/nvfp4_tensor.py "
                             "get_weights_scaling_factor_2 (205-208), "
                             "get_weights_scaling_factor (169-203), _cast_fp4 (230-251), "
                             "quantize (253-343), dequantize (345-408)", **common)
    if name == "mxfp8":
        _options("modelopt", name, given, {})
        return Recipe("mx", E8M0, element=_lookup("e4m3"), block_size=32,
                      scale_rounding="rceil_log2", mx_nan_scale="zero", clamp=True,
                      dequant_format=FP32, bugs=frozenset({"nan_scale_lost", "log2_rounded"}),
                      source=_MODELOPT + ": qtensor/mxfp8_tensor.py _compute_e8m0_exponent "
                             "(42-66), quantize_with_scale (143-190), dequantize (227-262)",
                      **common)
    if name == "mxfp4":
        _options("modelopt", name, given, {"block_size": (32,)})
        return Recipe("mx", E8M0, element=E2M1, block_size=32, scale_rounding="rceil_log2",
                      mx_nan_scale="block_zeroed", element_cast="modelopt_mxfp4",
                      dequant_format=FP32, bugs=frozenset({"nan_scale_lost", "log2_rounded",
                                                           "e2m1_ties_toward_zero"}),
                      source=_MODELOPT + ": qtensor/mxfp4_tensor.py quantize (37-81), "
                             "cast_fp4 (46-53), dequantize (83-144)", **common)
    raise ValueError(f"recipe('modelopt', {name!r}): fpsim has ModelOpt's 'fp8', 'nvfp4', "
                     "'mxfp8' and 'mxfp4'")


_CT = "compressed-tensors 0.20.1 (tools/quant_peers/compressed-tensors-0.20.1.md)"


def _compressed_tensors(name: str, given: dict[str, Any]) -> Recipe:
    """compressed-tensors' weight quantization (static min-max scales, as
    llmcompressor's memoryless observer computes them; the compressor's
    codes; ``decompress``)."""
    common = dict(library="compressed-tensors", name=name, nan="x86", element_nan="all_ones",
                  dequant="multiply")
    if name == "fp8":
        o = _options("compressed-tensors", name, given, {
            "scaling": ("tensor", "channel", "group", "block", "token"),
            "group_size": (None, 32, 64, 128), "block": (None, (4, 32), (128, 128))})
        scaling: Any = o["scaling"]
        if scaling == "group":
            if o["group_size"] is None:
                raise ValueError("recipe('compressed-tensors', 'fp8'): scaling='group' needs "
                                 "group_size= (consecutive elements along axis=)")
            scaling = "mx"
        elif scaling == "block":
            if o["block"] is None:
                raise ValueError("recipe('compressed-tensors', 'fp8'): scaling='block' needs "
                                 "block=(rows, columns) (tiles of the last two axes)")
            scaling = "block"
        # TOKEN (activations, dynamic: compute_dynamic_scales_and_zp, helpers.py 142-197,
        # the scale used in the input's format as computed; fake_quantize's QDQ)
        return Recipe(scaling, "input", "amax/max", element=_lookup("e4m3"),
                      block_size=o["group_size"], block=o["block"],
                      zero_scale="eps", apply="divide", add_zero=True, clamp=True,
                      output="input",
                      bugs=frozenset({"token_2d_tensor"}) if scaling == "token" else frozenset(),
                      source=_CT + ": quantization/utils/helpers.py calculate_qparams (52-128), "
                             "quantization/lifecycle/forward.py _quantize (536-543), "
                             "compressors/naive_quantized/base.py compress, decompress", **common)
    if name == "nvfp4":
        _options("compressed-tensors", name, given, {})
        return Recipe("nvfp4", FP32, element=E2M1, block_size=16,
                      tensor_scale="reciprocal_encode", block_scale_zero=0.125,
                      block_scale_zero_at="after", multiplier="divide_quotient", clamp=True,
                      element_cast="ct_fp4", dequant_format=FP32, output="bf16",
                      source=_CT + ": quantization/utils/helpers.py generate_gparam (324-353), "
                             "calculate_qparams (88-128), lifecycle/forward.py _quantize "
                             "(533-536), compressors/nvfp4 (decompress: always BF16)", **common)
    if name in _MX_DEFAULT:
        _options("compressed-tensors", name, given, {"block_size": (32,)})
        elem = _lookup(_MX_DEFAULT[name])
        bugs = {"mx_even_fp4_width"} if name == "mxfp8" else set()
        bugs.add("inf_scale_stored_one")
        return Recipe("mx", "input", "ct_mx", element=elem, block_size=32, apply="divide",
                      clamp=True, add_zero=name == "mxfp8", output="bf16",
                      even_bits=1 if name != "mxfp6" else 3,
                      element_cast="ct_fp4" if name == "mxfp4" else None,
                      bugs=frozenset(bugs),
                      source=_CT + ": quantization/utils/mxfp_utils.py generate_mx_scales "
                             "(73-152), helpers.py calculate_qparams (107-128), "
                             "compressors/mxfp4, mxfp6, mxfp8 (compress_mx_scale, "
                             "decompress: BF16)", **common)
    raise ValueError(f"recipe('compressed-tensors', {name!r}): fpsim has compressed-tensors' "
                     "'fp8', 'nvfp4', 'mxfp8', 'mxfp6' and 'mxfp4'")


_BUILDERS = {"spec": _spec, "te": _te, "torchao": _torchao, "brevitas": _brevitas,
             "modelopt": _modelopt, "compressed-tensors": _compressed_tensors}


def recipe(library: str, name: str, **options: Any) -> Recipe:
    """The :class:`~fpsim.quant.Recipe` of ``library``'s ``name`` recipe
    (see the module's docstring for the fields, ``docs/quant_libraries.rst``
    for the libraries side by side).  ``library``: ``"spec"`` (fpsim's own
    steps: OCP MX, Transformer Engine's NVFP4), ``"te"``, ``"torchao"``,
    ``"brevitas"``, ``"modelopt"``, ``"compressed-tensors"``;
    ``name``: ``"fp8"``, ``"mxfp8"``, ``"mxfp6"``, ``"mxfp4"``,
    ``"nvfp4"``; ``options`` as the library names them (``element=``,
    ``scaling=``, ``scale_rounding=``, ``per_tensor_scale=``, ...), and
    ``bugs=``: True (the default: what the library outputs), False (none
    of its bugs), or a set of ``fpsim.quant.BUGS`` names.

    >>> d = recipe("torchao", "fp8", scaling="row").describe()
    >>> [part.strip() for part in d.split(";")][:2]    # doctest: +NORMALIZE_WHITESPACE
    ['torchao fp8: one scale per index of axis 0',
     "scale = amax/max in fp32 (the ratio in the input's format), elements x / scale,
     clamped, rounded rne, saturating"]
    >>> recipe("compressed-tensors", "fp8", element="e5m2")
    Traceback (most recent call last):
      ...
    ValueError: recipe('compressed-tensors', 'fp8'): unknown option(s) ['element']; accepted: \
scaling, group_size, block, bugs
    """
    if not isinstance(library, str) or library not in LIBRARIES:
        raise ValueError(f"recipe(): library={library!r}; accepted: {', '.join(LIBRARIES)}")
    if not isinstance(name, str) or name not in NAMES:
        raise ValueError(f"recipe({library!r}, ...): name={name!r}; accepted: "
                         f"{', '.join(NAMES)}")
    bugs = options.get("bugs", True)
    r = _BUILDERS[library](name, options)
    if bugs is True:
        return r
    chosen = frozenset() if bugs is False else frozenset(bugs)
    unknown = chosen - r.bugs
    if unknown:
        raise ValueError(f"recipe({library!r}, {name!r}): bugs {sorted(unknown)} are not this "
                         f"row's; its bugs: {sorted(r.bugs) or 'none'}")
    return keep_bugs(r, chosen)


def keep_bugs(r: Recipe, chosen: frozenset) -> Recipe:
    """``r`` with only the bugs ``chosen`` (a subset of its own): a bug that
    is a flag is dropped, a bug that is a step (:data:`_BUG_FIELDS`) has its
    step set to what it is without the bug."""
    fixed: dict[str, Any] = {}
    for bug in r.bugs - chosen:
        fixed.update(_BUG_FIELDS.get(bug, {}))
    return dataclasses.replace(r, bugs=frozenset(chosen), **fixed)


#: The fields of the steps a bug is (the rest are read as flags by the steps):
#: what they are without it.
_BUG_FIELDS: dict[str, dict[str, Any]] = {
    "mxint8_emax_one": {"scale_emax": 6},
    "mx_even_fp4_width": {"even_bits": None},
    "nan_scale_lost": {"mx_nan_scale": "nan"},
    "e2m1_ties_toward_zero": {"element_cast": None},
}

