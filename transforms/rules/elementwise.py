"""Elementwise rules: unary functions, broadcasting binary functions, and the non-differentiable
elementwise functions."""

import builtins
import math
import operator

import numpy as np

from sourcegrad.runtime import stop_gradient

from . import binary, facts, nondiff, rule, unary

LN2 = "0.6931471805599453"
LN10 = "2.302585092994046"

# ---- arithmetic -----------------------------------------------------------------------------
unary([np.negative, operator.neg], "-d[y]")
unary([np.positive, operator.pos], "d[y]")
binary([np.add, operator.add], "d[z]", "d[z]")
binary([np.subtract, operator.sub], "d[z]", "-d[z]")
binary([np.multiply, operator.mul], "d[z] * y", "d[z] * x")
binary([np.divide, operator.truediv], "d[z] / y", "-d[z] * z / y")
# Python's operators: ints give ints (``n - 1``), tuples concatenate, arrays broadcast
facts(
    [operator.add, operator.sub, operator.mul, operator.truediv],
    shape="operator",
    fresh=True,
)
facts([operator.neg, operator.pos], shape="unary_operator", fresh=True)
rule(
    np.copysign,
    "z, x, y",
    "d[x] += unbroadcast(d[z] * np.sign(x) * np.copysign(1.0, y), x)",
    nondiff={"y": "only its sign is read (piecewise constant)"},
)
rule(
    [np.power, np.float_power, operator.pow, builtins.pow, math.pow],
    "z, x, y",
    """
d[x] += unbroadcast(d[z] * power_slope(x, y), x)
d[y] += unbroadcast(d[z] * power_exponent_slope(x, z), y)
""",
)
facts(operator.pow, shape="operator", fresh=True)
facts(builtins.pow, shape="operator")
unary(np.square, "d[y] * 2.0 * x")
unary(np.reciprocal, "-d[y] * y * y")
unary(np.sqrt, "d[y] / (2.0 * y)")
unary(math.sqrt, "d[y] / np.float64(2.0 * y)")  # inf at 0, as np.sqrt (a Python float would raise)
unary(np.cbrt, "d[y] / (3.0 * y * y)")
unary([np.absolute, builtins.abs], "abs_adjoint(d[y], x)")  # complex x too
facts(builtins.abs, shape="unary_operator")
unary([np.fabs, math.fabs], "d[y] * np.sign(x)")
binary([np.remainder, operator.mod], "d[z]", "-d[z] * np.floor(x / y)")
facts(operator.mod, shape="operator", fresh=True)
binary([np.fmod, math.fmod], "d[z]", "-d[z] * np.trunc(x / y)")

# ---- exponentials and logarithms --------------------------------------------------------------
unary([np.exp, math.exp], "d[y] * y")
unary(np.exp2, f"d[y] * y * {LN2}")
unary([np.expm1, math.expm1], "d[y] * (y + 1.0)")
unary(np.log, "d[y] / x")
rule(
    math.log,
    "y, x, base=None",
    """
d[x] += d[y] / (x * log_of_base(base))
d[base] += -d[y] * y / (base * np.log(base))
""",
)
unary([np.log2, math.log2], f"d[y] / (x * {LN2})")
unary([np.log10, math.log10], f"d[y] / (x * {LN10})")
unary([np.log1p, math.log1p], "d[y] / (1.0 + x)")
binary(np.logaddexp, "d[z] * logaddexp_share(x, y, z)", "d[z] * logaddexp_share(y, x, z)")
binary(np.logaddexp2, "d[z] * logaddexp_share(x, y, z, 2)", "d[z] * logaddexp_share(y, x, z, 2)")

# ---- trigonometric and hyperbolic -------------------------------------------------------------
unary([np.sin, math.sin], "d[y] * np.cos(x)")
unary([np.cos, math.cos], "-d[y] * np.sin(x)")
unary([np.tan, math.tan], "d[y] * (1.0 + y * y)")
unary([np.arcsin, math.asin], "d[y] / np.sqrt(1.0 - x * x)")
unary([np.arccos, math.acos], "-d[y] / np.sqrt(1.0 - x * x)")
unary([np.arctan, math.atan], "d[y] / (1.0 + x * x)")
unary([np.sinh, math.sinh], "d[y] * np.cosh(x)")
unary([np.cosh, math.cosh], "d[y] * np.sinh(x)")
unary([np.tanh, math.tanh], "d[y] * (1.0 - y * y)")
unary([np.arcsinh, math.asinh], "d[y] / np.sqrt(x * x + 1.0)")
unary([np.arccosh, math.acosh], "d[y] / np.sqrt(x * x - 1.0)")
unary([np.arctanh, math.atanh], "d[y] / (1.0 - x * x)")
unary([np.deg2rad, np.radians, math.radians], "d[y] * 0.017453292519943295")
unary([np.rad2deg, np.degrees, math.degrees], "d[y] * 57.29577951308232")
# y / (x * x + y * y) without under/overflow; 0 at (0, 0)
rule(
    [np.arctan2, math.atan2],
    "z, x, y",
    """
h = nonzero_or_one(np.hypot(x, y))
d[x] += unbroadcast(d[z] * (y / h / h), x)
d[y] += unbroadcast(-d[z] * (x / h / h), y)
""",
    broadcasting=True,
)
# 0 at (0, 0), as abs'(0)
binary([np.hypot, math.hypot], "d[z] * x / nonzero_or_one(z)", "d[z] * y / nonzero_or_one(z)")
unary(np.sinc, "d[y] * np.where(x == 0, 0.0, (np.cos(np.pi * x) - y) / np.where(x == 0, 1.0, x))")
unary([math.erf], "d[y] * 1.1283791670955126 * np.exp(-x * x)")
unary([math.erfc], "-d[y] * 1.1283791670955126 * np.exp(-x * x)")

# ---- extrema: ties share the gradient evenly (as JAX does) ------------------------------------
binary(
    [np.maximum, np.fmax, builtins.max],
    "d[z] * extremum_share(x > y, x == y, d[z])",
    "d[z] * extremum_share(y > x, x == y, d[z])",
)
binary(
    [np.minimum, np.fmin, builtins.min],
    "d[z] * extremum_share(x < y, x == y, d[z])",
    "d[z] * extremum_share(y < x, x == y, d[z])",
)

# ---- conversions that keep the value ----------------------------------------------------------
unary([float, np.asarray, np.asanyarray, np.array, np.float64, np.float32], "d[y]")
facts(np.array, fresh=True)  # (np.asarray may return its operand itself)
# makes a 0-d input 1-d; may return its operand itself
unary(np.ascontiguousarray, "np.reshape(d[y], np.shape(x))", shape="copy")
# complex values (JAX's convention for their adjoints: runtime/adjoints/elementwise.py); real arrays: the identity
unary(np.real, "real_part(d[y])")
unary(np.imag, "imag_adjoint(d[y], x)")
unary(np.conjugate, "conj_adjoint(d[y], x)")
rule(
    np.angle,
    "y, z, deg=False",
    "d[z] += angle_adjoint(d[y], z, deg)",
    nondiff={"deg": "a boolean flag"},
)
unary(np.nan_to_num, "d[y] * np.isfinite(x)")

# ---- no gradient ------------------------------------------------------------------------------
rule(
    np.heaviside,
    "z, x1, x2",
    "d[x2] += unbroadcast(d[z] * (x1 == 0), x2)",  # x2: the value at 0
    nondiff={"x1": "piecewise constant in it"},
)
nondiff(
    np.sign,
    np.floor,
    np.ceil,
    np.round,
    np.around,
    np.rint,
    np.trunc,
    np.fix,
    math.floor,
    math.ceil,
    math.trunc,
    builtins.round,
    np.floor_divide,
    operator.floordiv,
    int,
    reason="piecewise constant",
)
facts(operator.floordiv, shape="operator", fresh=True)
nondiff(
    np.isfinite,
    np.isnan,
    np.isinf,
    np.isposinf,
    np.isneginf,
    np.isreal,
    np.iscomplex,
    np.signbit,
    math.isfinite,
    math.isnan,
    math.isinf,
    np.less,
    np.less_equal,
    np.greater,
    np.greater_equal,
    np.equal,
    np.not_equal,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
    operator.eq,
    operator.ne,
    operator.not_,
    operator.is_,
    operator.is_not,
    operator.contains,
    np.logical_and,
    np.logical_or,
    np.logical_not,
    np.logical_xor,
    operator.and_,
    operator.or_,
    operator.xor,
    operator.invert,
    np.bitwise_and,
    np.bitwise_or,
    np.invert,
    np.isclose,
    np.allclose,
    np.array_equal,
    np.array_equiv,
    bool,
    reason="a boolean or integer result (piecewise constant)",
)
facts(
    [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne],
    shape="operator",
    fresh=True,
)
facts([operator.not_, operator.and_, operator.or_, operator.xor, operator.invert], fresh=True)
nondiff(
    builtins.len,
    builtins.range,
    np.ndim,
    np.shape,
    np.size,
    builtins.isinstance,
    np.iscomplexobj,
    np.isrealobj,
    np.isscalar,
    reason="depends only on shapes and types",
)
facts(builtins.len, shape="len")
nondiff(builtins.print, reason="prints; its value is None")
nondiff(stop_gradient, reason="stops the gradient, as asked")
