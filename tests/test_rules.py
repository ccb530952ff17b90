"""The rule table: every adjoint rule checked against central finite differences.

One row per primitive, like HIPS autograd's ``test_systematic.py``. Each row is a module-level
``def`` (sourcegrad reads source) that applies the primitive and reduces the result to a scalar
with a random weight ``w`` of the result's shape, so every entry of the adjoint is exercised.
``w`` is always the last parameter; the harness finds the result's shape with a probe and draws
``w`` to match. Hypothesis draws shapes (0-d, scalars and broadcasting pairs included), the dtype
(float64, float32) and a seed for values inside the function's domain, away from kinks.

The oracle is ``tests/oracle.py`` (finite differences in float64), never ``sourcegrad.testing``.
"""

import ast
import builtins
import inspect
import math
import operator
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import sourcegrad
from sourcegrad import runtime
from sourcegrad.transforms import rules as R

from .oracle import assert_close, fd_grad

try:
    from scipy import special as sc
except ImportError:  # scipy.special's rules are registered only where scipy imports
    sc = None
try:
    from scipy import linalg as sla, signal as ssig, stats as sst
except ImportError:  # scipy.stats', scipy.linalg's and scipy.signal's rules likewise
    sla = ssig = sst = None

# ---- input domains -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dom:
    """Where a function's argument values are drawn.

    kind: ``uniform`` in [lo, hi]; ``signed``: |x| in [lo, hi] with either sign (away from 0);
    ``distinct``: entries at least (hi - lo) / 2n apart (no ties for max/sort);
    ``grid0``/``grid1``: near 0.2 k resp. 0.2 k + 0.1 in [lo, hi], so an x from one and a y from the
    other never tie; ``quarter``: near k + 1/4 or k + 3/4, away from integers and halves (floor, round)."""

    lo: float = -2.0
    hi: float = 2.0
    kind: str = "uniform"


# np.row_stack, still registered
DEPRECATED = pytest.mark.filterwarnings("ignore::DeprecationWarning")
ANY = Dom()
POS = Dom(0.2, 3.0)
NONZERO = Dom(0.3, 2.0, "signed")
UNIT = Dom(-0.9, 0.9)
DISTINCT = Dom(-2.0, 2.0, "distinct")
GRID0, GRID1 = Dom(-1.6, 1.6, "grid0"), Dom(-1.6, 1.4, "grid1")
NONINT = Dom(-3, 3, "quarter")
SEEDS = st.integers(0, 2**32 - 1)
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)
NOT_ONE_ENTRY = SHAPES.filter(lambda s: s == () or math.prod(s) > 1)


def values(draw, shape, dtype, dom=ANY, scalars=True):
    """An array of ``shape`` and ``dtype`` in ``dom``; a 0-d shape may come as a numpy scalar or a
    Python float (``scalars``)."""
    rng = np.random.default_rng(draw(SEEDS))
    n = int(np.prod(shape))
    if dom.kind == "signed":
        v = rng.uniform(dom.lo, dom.hi, n) * rng.choice([-1.0, 1.0], n)
    elif dom.kind == "distinct":
        v = dom.lo + (dom.hi - dom.lo) * (rng.permutation(n) + rng.uniform(0.25, 0.75, n)) / n
    elif dom.kind in ("grid0", "grid1"):
        k = rng.integers(math.ceil(dom.lo / 0.2), math.floor(dom.hi / 0.2), n, endpoint=True)
        v = 0.2 * k + 0.02 * rng.uniform(-1, 1, n) + (0.1 if dom.kind == "grid1" else 0.0)
    elif dom.kind == "quarter":
        v = (
            rng.integers(dom.lo, dom.hi, n)
            + rng.choice([0.25, 0.75], n)
            + 0.05 * rng.uniform(-1, 1, n)
        )
    else:
        v = rng.uniform(dom.lo, dom.hi, n)
    v = v.reshape(shape).astype(dtype)
    if shape == () and scalars:
        form = draw(
            st.sampled_from(
                ["0-d", "numpy scalar", "python float"]
                if dtype == np.float64
                else ["0-d", "numpy scalar"]
            )
        )
        return {"0-d": v, "numpy scalar": v[()], "python float": float(v)}[form]
    return v


def matrix(draw, shape, dtype):
    """A well-conditioned square matrix (or a stack of them): identity plus small noise."""
    n = shape[-1]
    return (values(draw, shape, np.float64, Dom(-0.3, 0.3)) + 2.0 * np.eye(n)).astype(dtype)


# ---- generators: (draw, dtype) -> the arguments before ``w`` ---------------------------------------


def unary(dom=ANY, shapes=SHAPES, scalars=True):
    def gen(draw, dtype):
        return (values(draw, draw(shapes), dtype, dom, scalars),)

    return gen


def binary(dx=ANY, dy=ANY):
    """Two arrays of mutually broadcastable shapes (either may be 0-d or a scalar)."""

    def gen(draw, dtype):
        sx, sy = draw(
            hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3)
        ).input_shapes
        return values(draw, sx, dtype, dx), values(draw, sy, dtype, dy)

    return gen


def floats(*doms):
    """Python floats (for ``math`` functions)."""

    def gen(draw, dtype):
        return tuple(float(values(draw, (), np.float64, d, scalars=False)) for d in doms)

    return gen


def shaped(*shapes, dom=ANY):
    """Arrays of fixed shapes."""

    def gen(draw, dtype):
        return tuple(values(draw, s, dtype, dom, scalars=False) for s in shapes)

    return gen


def one_of(*gens):
    def gen(draw, dtype):
        return draw(st.sampled_from(gens))(draw, dtype)

    return gen


def with_args(gen, *strategies):
    """``gen``'s arrays followed by extra (non-differentiated) arguments drawn from ``strategies``,
    each a function of the first array's shape."""

    def out(draw, dtype):
        arrays = gen(draw, dtype)
        shape = np.shape(arrays[0])
        return arrays + tuple(draw(s(shape)) for s in strategies)

    return out


def axes(shape):
    """``None``, an int (possibly negative) or a tuple of distinct axes of ``shape``."""
    nd = len(shape)
    ints = [st.integers(-nd, nd - 1)] if nd else []
    return st.one_of(st.none(), *ints, hnp.valid_tuple_axes(nd))


def axis(shape):
    return st.integers(-len(shape), len(shape) - 1)


def axis_or_none(shape):
    return st.one_of(st.none(), axis(shape)) if shape else st.none()


def keepdims(shape):
    return st.booleans()


def min_dims(n, max_dims=3, min_side=1):
    return hnp.array_shapes(min_dims=n, max_dims=max(n, max_dims), min_side=min_side, max_side=3)


# ---- the harness ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    f: object
    gen: object
    wrt: object = 0
    dtypes: tuple = (np.float64, np.float32)
    h: float = (
        1e-6  # finite-difference step (relative); larger where the function rounds to float32
    )
    marks: tuple = ()

    @property
    def id(self):
        return self.f.__name__.removeprefix("f_")


class _Shape(Exception):
    pass


class _Probe:
    """Stands in for ``w`` once to learn the shape of what it multiplies."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise _Shape(np.shape(inputs[0]), type(inputs[0]))

    def __rmul__(self, other):
        raise _Shape(np.shape(other), type(other))


def weights(row, args, dtype, draw):
    """A random ``w`` of the shape (and kind: array or Python float) of what ``row.f`` weighs."""
    try:
        row.f(*args, _Probe())
    except _Shape as e:
        shape, kind = e.args
    else:
        raise AssertionError(f"{row.f.__name__} never multiplies by w")
    rng = np.random.default_rng(draw(SEEDS))
    w = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    return float(w) if kind is float else w.astype(dtype)


_GRADS = {}


def gradient(f, wrt, specialize=True):
    if (f, wrt, specialize) not in _GRADS:  # compile once per function, not once per example
        _GRADS[f, wrt, specialize] = sourcegrad.grad(f, wrt=wrt, specialize=specialize)
    return _GRADS[f, wrt, specialize]


def check(row, args, dtype):
    """Both the code specialized to the arguments' shapes and the general code."""
    wrt = row.wrt if isinstance(row.wrt, tuple) else (row.wrt,)
    want = {i: fd_grad(row.f, args, i, h=row.h) for i in wrt}
    for specialize in (True, False):
        got = gradient(row.f, row.wrt, specialize)(*args)
        got = got if isinstance(row.wrt, tuple) else (got,)
        check_against(row, args, dtype, wrt, got, want)


def check_against(row, args, dtype, wrt, got, want):
    f64 = dtype == np.float64
    for i, g in zip(wrt, got):
        a = args[i]
        want_i = want[i]
        if type(a) is float:
            assert type(g) is float, f"gradient of a Python float is a {type(g).__name__}"
        else:
            assert np.shape(g) == np.shape(a), (
                f"gradient shape {np.shape(g)} != argument shape {np.shape(a)}"
            )
            assert np.asarray(g).dtype == a.dtype, (
                f"gradient dtype {np.asarray(g).dtype} != argument dtype {a.dtype}"
            )
        scale = 1.0 + float(np.max(np.abs(want_i), initial=0.0))
        rtol = max(1e-5 if f64 else 2e-3, 10 * row.h)
        assert_close(
            g,
            want_i,
            rtol=rtol,
            atol=rtol * scale,
            what=f"d/d{list(inspect.signature(row.f).parameters)[i]}",
        )


def run_row(row, data):
    dtype = data.draw(st.sampled_from(row.dtypes), label="dtype")
    args = list(row.gen(data.draw, dtype))
    args.append(weights(row, args, dtype, data.draw))
    check(row, args, dtype)


# ==== elementwise: unary ===========================================================================
def f_negative(x, w):
    return np.sum(np.negative(x) * w)


def f_positive(x, w):
    return np.sum(np.positive(x) * w)


def f_neg_op(x, w):
    return np.sum(-x * w)


def f_pos_op(x, w):
    return np.sum(+x * w)


def f_square(x, w):
    return np.sum(np.square(x) * w)


def f_reciprocal(x, w):
    return np.sum(np.reciprocal(x) * w)


def f_sqrt(x, w):
    return np.sum(np.sqrt(x) * w)


def f_cbrt(x, w):
    return np.sum(np.cbrt(x) * w)


def f_absolute(x, w):
    return np.sum(np.absolute(x) * w)


def f_abs_builtin(x, w):
    return np.sum(abs(x) * w)


def f_fabs(x, w):
    return np.sum(np.fabs(x) * w)


def f_exp(x, w):
    return np.sum(np.exp(x) * w)


def f_exp2(x, w):
    return np.sum(np.exp2(x) * w)


def f_expm1(x, w):
    return np.sum(np.expm1(x) * w)


def f_log(x, w):
    return np.sum(np.log(x) * w)


def f_log2(x, w):
    return np.sum(np.log2(x) * w)


def f_log10(x, w):
    return np.sum(np.log10(x) * w)


def f_log1p(x, w):
    return np.sum(np.log1p(x) * w)


def f_sin(x, w):
    return np.sum(np.sin(x) * w)


def f_cos(x, w):
    return np.sum(np.cos(x) * w)


def f_tan(x, w):
    return np.sum(np.tan(x) * w)


def f_arcsin(x, w):
    return np.sum(np.arcsin(x) * w)


def f_arccos(x, w):
    return np.sum(np.arccos(x) * w)


def f_arctan(x, w):
    return np.sum(np.arctan(x) * w)


def f_sinh(x, w):
    return np.sum(np.sinh(x) * w)


def f_cosh(x, w):
    return np.sum(np.cosh(x) * w)


def f_tanh(x, w):
    return np.sum(np.tanh(x) * w)


def f_arcsinh(x, w):
    return np.sum(np.arcsinh(x) * w)


def f_arccosh(x, w):
    return np.sum(np.arccosh(x) * w)


def f_arctanh(x, w):
    return np.sum(np.arctanh(x) * w)


def f_deg2rad(x, w):
    return np.sum(np.deg2rad(x) * w)


def f_radians(x, w):
    return np.sum(np.radians(x) * w)


def f_rad2deg(x, w):
    return np.sum(np.rad2deg(x) * w)


def f_degrees(x, w):
    return np.sum(np.degrees(x) * w)


def f_sinc(x, w):
    return np.sum(np.sinc(x) * w)


def f_real(x, w):
    return np.sum(np.real(x) * w)


def f_asarray(x, w):
    return np.sum(np.asarray(x) * w)


def f_asanyarray(x, w):
    return np.sum(np.asanyarray(x) * w)


def f_array(x, w):
    return np.sum(np.array(x) * w)


def f_ascontiguousarray(x, w):
    return np.sum(np.ascontiguousarray(x) * w)


def f_float64(x, w):
    return np.sum(np.float64(x) * w)


def f_float32(x, w):
    return np.sum(np.float32(x) * w)


def f_float_builtin(x, w):
    return float(x) * w


def f_conjugate(x, w):
    return np.sum(np.conjugate(x) * w)


def f_nan_to_num(x, w):
    return np.sum(np.nan_to_num(x) * w)


def f_pow_const(x, w):
    return np.sum(x**3 * w)


def f_pow_half(x, w):
    return np.sum(x**0.5 * w)


def f_rpow_const(x, w):
    return np.sum(2.0**x * w)


ELEMENTWISE_UNARY = [
    Row(f_negative, unary()),
    Row(f_positive, unary()),
    Row(f_neg_op, unary()),
    Row(f_pos_op, unary()),
    Row(f_square, unary()),
    Row(f_reciprocal, unary(NONZERO)),
    Row(f_sqrt, unary(POS)),
    Row(f_cbrt, unary(NONZERO)),
    Row(f_absolute, unary(NONZERO)),
    Row(f_abs_builtin, unary(NONZERO)),
    Row(f_fabs, unary(NONZERO)),
    Row(f_exp, unary()),
    Row(f_exp2, unary()),
    Row(f_expm1, unary()),
    Row(f_log, unary(POS)),
    Row(f_log2, unary(POS)),
    Row(f_log10, unary(POS)),
    Row(f_log1p, unary(Dom(-0.7, 2.0))),
    Row(f_sin, unary()),
    Row(f_cos, unary()),
    Row(f_tan, unary(Dom(-1.2, 1.2))),
    Row(f_arcsin, unary(UNIT)),
    Row(f_arccos, unary(UNIT)),
    Row(f_arctan, unary()),
    Row(f_sinh, unary()),
    Row(f_cosh, unary()),
    Row(f_tanh, unary()),
    Row(f_arcsinh, unary()),
    Row(f_arccosh, unary(Dom(1.2, 3.0))),
    Row(f_arctanh, unary(UNIT)),
    Row(f_deg2rad, unary()),
    Row(f_radians, unary()),
    Row(f_rad2deg, unary()),
    Row(f_degrees, unary()),
    Row(f_sinc, unary()),
    Row(f_real, unary()),
    Row(f_asarray, unary()),
    Row(f_asanyarray, unary()),
    Row(f_array, unary()),
    Row(f_ascontiguousarray, unary()),
    # np.float64 of a one-entry array of rank > 0 converts it to a scalar: deprecated since numpy 1.25
    Row(f_float64, unary(shapes=NOT_ONE_ENTRY)),
    Row(f_float32, unary(shapes=NOT_ONE_ENTRY), h=1e-3),
    Row(f_float_builtin, unary(shapes=st.just(()))),
    Row(f_conjugate, unary()),
    Row(f_nan_to_num, unary()),
    Row(f_pow_const, unary()),
    Row(f_pow_half, unary(POS)),
    Row(f_rpow_const, unary()),
]


# ==== elementwise: binary, broadcasting ============================================================
def f_add(x, y, w):
    return np.sum(np.add(x, y) * w)


def f_subtract(x, y, w):
    return np.sum(np.subtract(x, y) * w)


def f_multiply(x, y, w):
    return np.sum(np.multiply(x, y) * w)


def f_divide(x, y, w):
    return np.sum(np.divide(x, y) * w)


def f_power(x, y, w):
    return np.sum(np.power(x, y) * w)


def f_remainder(x, y, w):
    return np.sum(np.remainder(x, y) * w)


def f_fmod(x, y, w):
    return np.sum(np.fmod(x, y) * w)


def f_logaddexp(x, y, w):
    return np.sum(np.logaddexp(x, y) * w)


def f_logaddexp2(x, y, w):
    return np.sum(np.logaddexp2(x, y) * w)


def f_arctan2(x, y, w):
    return np.sum(np.arctan2(x, y) * w)


def f_hypot(x, y, w):
    return np.sum(np.hypot(x, y) * w)


def f_maximum(x, y, w):
    return np.sum(np.maximum(x, y) * w)


def f_minimum(x, y, w):
    return np.sum(np.minimum(x, y) * w)


def f_fmax(x, y, w):
    return np.sum(np.fmax(x, y) * w)


def f_fmin(x, y, w):
    return np.sum(np.fmin(x, y) * w)


def f_add_op(x, y, w):
    return np.sum((x + y) * w)


def f_sub_op(x, y, w):
    return np.sum((x - y) * w)


def f_mul_op(x, y, w):
    return np.sum((x * y) * w)


def f_truediv_op(x, y, w):
    return np.sum((x / y) * w)


def f_pow_op(x, y, w):
    return np.sum((x**y) * w)


def f_mod_op(x, y, w):
    return np.sum((x % y) * w)


def f_pow_builtin(x, y, w):
    return np.sum(pow(x, y) * w)


def f_float_power(x, y, w):
    return np.sum(np.float_power(x, y) * w)


def f_copysign(x, y, w):
    return np.sum(np.copysign(x, y) * w)


MOD_X, MOD_Y = Dom(1.0, 1.15, "signed"), Dom(0.4, 0.45, "signed")  # x / y in ±(2.2, 2.9): no jumps
BINARY = [
    Row(f_add, binary(), (0, 1)),
    Row(f_subtract, binary(), (0, 1)),
    Row(f_multiply, binary(), (0, 1)),
    Row(f_divide, binary(ANY, NONZERO), (0, 1)),
    Row(f_power, binary(POS, ANY), (0, 1)),
    Row(f_remainder, binary(MOD_X, MOD_Y), (0, 1)),
    Row(f_fmod, binary(MOD_X, MOD_Y), (0, 1)),
    Row(f_logaddexp, binary(), (0, 1)),
    Row(f_logaddexp2, binary(), (0, 1)),
    Row(f_arctan2, binary(NONZERO, NONZERO), (0, 1)),
    Row(f_hypot, binary(NONZERO, NONZERO), (0, 1)),
    Row(f_maximum, binary(GRID0, GRID1), (0, 1)),
    Row(f_minimum, binary(GRID0, GRID1), (0, 1)),
    Row(f_fmax, binary(GRID0, GRID1), (0, 1)),
    Row(f_fmin, binary(GRID0, GRID1), (0, 1)),
    Row(f_add_op, binary(), (0, 1)),
    Row(f_sub_op, binary(), (0, 1)),
    Row(f_mul_op, binary(), (0, 1)),
    Row(f_truediv_op, binary(ANY, NONZERO), (0, 1)),
    Row(f_pow_op, binary(POS, ANY), (0, 1)),
    Row(f_mod_op, binary(MOD_X, MOD_Y), (0, 1)),
    Row(f_pow_builtin, binary(POS, ANY), (0, 1)),
    Row(f_float_power, binary(POS, ANY), (0, 1)),
    Row(f_copysign, binary(NONZERO, NONZERO), (0, 1)),
]


# ==== math and builtins on Python floats ===========================================================
def f_math_sqrt(x, w):
    return math.sqrt(x) * w


def f_math_fabs(x, w):
    return math.fabs(x) * w


def f_math_exp(x, w):
    return math.exp(x) * w


def f_math_expm1(x, w):
    return math.expm1(x) * w


def f_math_log(x, w):
    return math.log(x) * w


def f_math_log_base(x, base, w):
    return math.log(x, base) * w


def f_math_log2(x, w):
    return math.log2(x) * w


def f_math_log10(x, w):
    return math.log10(x) * w


def f_math_log1p(x, w):
    return math.log1p(x) * w


def f_math_sin(x, w):
    return math.sin(x) * w


def f_math_cos(x, w):
    return math.cos(x) * w


def f_math_tan(x, w):
    return math.tan(x) * w


def f_math_asin(x, w):
    return math.asin(x) * w


def f_math_acos(x, w):
    return math.acos(x) * w


def f_math_atan(x, w):
    return math.atan(x) * w


def f_math_sinh(x, w):
    return math.sinh(x) * w


def f_math_cosh(x, w):
    return math.cosh(x) * w


def f_math_tanh(x, w):
    return math.tanh(x) * w


def f_math_asinh(x, w):
    return math.asinh(x) * w


def f_math_acosh(x, w):
    return math.acosh(x) * w


def f_math_atanh(x, w):
    return math.atanh(x) * w


def f_math_radians(x, w):
    return math.radians(x) * w


def f_math_degrees(x, w):
    return math.degrees(x) * w


def f_math_erf(x, w):
    return math.erf(x) * w


def f_math_erfc(x, w):
    return math.erfc(x) * w


def f_math_pow(x, y, w):
    return math.pow(x, y) * w


def f_math_fmod(x, y, w):
    return math.fmod(x, y) * w


def f_math_atan2(x, y, w):
    return math.atan2(x, y) * w


def f_math_hypot(x, y, w):
    return math.hypot(x, y) * w


def f_float_ops(x, y, w):
    return (x * y - x / y + x**2 - (-y) + abs(x) % 5.0) * w


def f_builtin_max(x, y, w):
    return max(x, y) * w


def f_builtin_min(x, y, w):
    return min(x, y) * w


def f_builtin_sum(x, y, w):
    return sum([x, y, x * y], 1.0) * w


def f_builtin_sum_arrays(x, y, w):
    return np.sum(sum([x, y]) * w)


def f_builtin_sum_rows(x, w):
    return np.sum(sum(x) * w)


PY = (np.float64,)
MATH = [
    Row(f_math_sqrt, floats(POS), dtypes=PY),
    Row(f_math_fabs, floats(NONZERO), dtypes=PY),
    Row(f_math_exp, floats(ANY), dtypes=PY),
    Row(f_math_expm1, floats(ANY), dtypes=PY),
    Row(f_math_log, floats(POS), dtypes=PY),
    Row(f_math_log_base, floats(POS, Dom(1.5, 4.0)), (0, 1), dtypes=PY),
    Row(f_math_log2, floats(POS), dtypes=PY),
    Row(f_math_log10, floats(POS), dtypes=PY),
    Row(f_math_log1p, floats(Dom(-0.7, 2.0)), dtypes=PY),
    Row(f_math_sin, floats(ANY), dtypes=PY),
    Row(f_math_cos, floats(ANY), dtypes=PY),
    Row(f_math_tan, floats(Dom(-1.2, 1.2)), dtypes=PY),
    Row(f_math_asin, floats(UNIT), dtypes=PY),
    Row(f_math_acos, floats(UNIT), dtypes=PY),
    Row(f_math_atan, floats(ANY), dtypes=PY),
    Row(f_math_sinh, floats(ANY), dtypes=PY),
    Row(f_math_cosh, floats(ANY), dtypes=PY),
    Row(f_math_tanh, floats(ANY), dtypes=PY),
    Row(f_math_asinh, floats(ANY), dtypes=PY),
    Row(f_math_acosh, floats(Dom(1.2, 3.0)), dtypes=PY),
    Row(f_math_atanh, floats(UNIT), dtypes=PY),
    Row(f_math_radians, floats(ANY), dtypes=PY),
    Row(f_math_degrees, floats(ANY), dtypes=PY),
    Row(f_math_erf, floats(ANY), dtypes=PY),
    Row(f_math_erfc, floats(ANY), dtypes=PY),
    Row(f_math_pow, floats(POS, ANY), (0, 1), dtypes=PY),
    Row(f_math_fmod, floats(MOD_X, MOD_Y), (0, 1), dtypes=PY),
    Row(f_math_atan2, floats(NONZERO, NONZERO), (0, 1), dtypes=PY),
    Row(f_math_hypot, floats(NONZERO, NONZERO), (0, 1), dtypes=PY),
    Row(f_float_ops, floats(NONZERO, NONZERO), (0, 1), dtypes=PY),
    Row(f_builtin_max, floats(GRID0, GRID1), (0, 1), dtypes=PY),
    Row(f_builtin_min, floats(GRID0, GRID1), (0, 1), dtypes=PY),
    Row(f_builtin_sum, floats(ANY, ANY), (0, 1), dtypes=PY),
    Row(f_builtin_sum_arrays, binary(), (0, 1)),
    Row(f_builtin_sum_rows, unary(shapes=min_dims(1), scalars=False)),
]


# ==== reductions ===================================================================================
def f_sum(x, axis, keepdims, w):
    return np.sum(np.sum(x, axis=axis, keepdims=keepdims) * w)


def f_mean(x, axis, keepdims, w):
    return np.sum(np.mean(x, axis=axis, keepdims=keepdims) * w)


def f_prod(x, axis, keepdims, w):
    return np.sum(np.prod(x, axis=axis, keepdims=keepdims) * w)


def f_max(x, axis, keepdims, w):
    return np.sum(np.max(x, axis=axis, keepdims=keepdims) * w)


def f_amax(x, axis, keepdims, w):
    return np.sum(np.amax(x, axis=axis, keepdims=keepdims) * w)


def f_min(x, axis, keepdims, w):
    return np.sum(np.min(x, axis=axis, keepdims=keepdims) * w)


def f_amin(x, axis, keepdims, w):
    return np.sum(np.amin(x, axis=axis, keepdims=keepdims) * w)


def f_nanmax(x, axis, keepdims, w):
    return np.sum(np.nanmax(x, axis=axis, keepdims=keepdims) * w)


def f_nanmin(x, axis, keepdims, w):
    return np.sum(np.nanmin(x, axis=axis, keepdims=keepdims) * w)


def f_nansum(x, axis, keepdims, w):
    return np.sum(np.nansum(x, axis=axis, keepdims=keepdims) * w)


def f_var(x, axis, keepdims, w):
    return np.sum(np.var(x, axis=axis, keepdims=keepdims) * w)


def f_std(x, axis, keepdims, w):
    return np.sum(np.std(x, axis=axis, keepdims=keepdims) * w)


def f_var_ddof(x, axis, w):
    return np.sum(np.var(x, axis=axis, ddof=1) * w)


def f_std_ddof(x, axis, w):
    return np.sum(np.std(x, axis=axis, ddof=1) * w)


def f_cumsum(x, axis, w):
    return np.sum(np.cumsum(x, axis=axis) * w)


def f_average(x, axis, keepdims, w):
    return np.sum(np.average(x, axis=axis, keepdims=keepdims) * w)


def f_average_weights(x, axis, w):
    return np.sum(np.average(x, axis=axis, weights=np.arange(1.0, 1.0 + x.shape[axis])) * w)


def f_average_wrt_weights(x, v, w):
    return np.sum(np.average(x, axis=0, weights=v) * w)


def f_norm(x, axis, keepdims, w):
    return np.sum(np.linalg.norm(x, axis=axis, keepdims=keepdims) * w)


def f_norm_vector(x, ord, axis, w):
    return np.sum(np.linalg.norm(x, ord=ord, axis=axis) * w)


def f_norm_fro(x, w):
    return np.linalg.norm(x, "fro") * w


def f_norm_matrix(x, ord, axis, keepdims, w):
    return np.sum(np.linalg.norm(x, ord, axis, keepdims) * w)


def f_vector_norm(x, ord, axis, keepdims, w):
    return np.sum(np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord) * w)


def f_matrix_norm(x, ord, w):
    return np.sum(np.linalg.matrix_norm(x, ord=ord) * w)


def f_nanmean(x, axis, keepdims, w):
    return np.sum(np.nanmean(x, axis=axis, keepdims=keepdims) * w)


def f_ptp(x, axis, keepdims, w):
    return np.sum(np.ptp(x, axis=axis, keepdims=keepdims) * w)


def f_prod_zeros(x, axis, w):
    return np.sum(np.prod(x * (np.abs(x) > 0.5), axis=axis) * w)


def f_nancumsum(x, axis, w):
    return np.sum(np.nancumsum(x, axis=axis) * w)


def f_cumulative_sum(x, axis, w):
    return np.sum(np.cumulative_sum(x, axis=axis, include_initial=True) * w)


def f_cumprod(x, axis, w):
    return np.sum(np.cumprod(x, axis=axis) * w)


def f_m_cumprod(x, w):
    return np.sum(x.cumprod(axis=0) * w)


def f_diff(x, n, axis, w):
    return np.sum(np.diff(x, n, axis) * w)


def f_trapezoid(y, w):
    return np.sum(np.trapezoid(y) * w)


def f_trapezoid_dx(y, w):
    return np.sum(np.trapezoid(y, dx=0.5, axis=0) * w)


def f_trapezoid_x(y, x, w):
    return np.sum(np.trapezoid(y, x) * w)


MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]
VECTOR_ORDS = [0, 1, 2, 3, 0.5, -1, np.inf, -np.inf]


def matrix_axes(shape):
    """A pair of distinct axes (or ``None`` for a 2-d array)."""
    pairs = st.permutations(range(len(shape))).map(lambda p: tuple(p[:2]))
    return st.one_of(st.none(), pairs) if len(shape) == 2 else pairs


def reduction(dom=ANY, scalars=True):
    return with_args(unary(dom, scalars=scalars), axes, keepdims)


def some_axes(shape):
    """Like ``axes`` but never the empty tuple: the std of a single entry has no slope."""
    return st.one_of(st.none(), axis(shape), hnp.valid_tuple_axes(len(shape), min_size=1))


SPREAD = min_dims(1, min_side=2)  # every axis holds two entries or more


def f_median(x, w):
    return np.median(x) * w


def f_median_axis(x, axis, w):
    return np.sum(np.median(x, axis=axis) * w)


def f_median_keepdims(x, w):
    return np.sum(np.median(x, axis=(0, -1), keepdims=True) * w)


def f_quantile(x, q, w):
    return np.sum(np.quantile(x, q, axis=-1) * w)


def f_percentile(x, q, w):
    return np.sum(np.percentile(x, q, keepdims=True) * w)


def f_cov(m, w):
    return np.sum(np.cov(m) * w)


def f_cov_y(m, y, w):
    return np.sum(np.cov(m, y, rowvar=False, ddof=0) * w)


def f_cov_bias(m, w):
    return np.sum(np.cov(m, bias=True) * w)


AW4 = np.array([1.0, 2.0, 0.5, 1.5])
FW4 = np.array([1, 3, 2, 1])


def _weighted(shapes):
    """Observations (columns) of one of ``shapes`` and a positive weight for each."""

    def gen(draw, dtype):
        m = values(draw, draw(st.sampled_from(shapes)), dtype, scalars=False)
        return m, values(draw, (m.shape[-1],), dtype, Dom(0.5, 2.0), scalars=False)

    return gen


def f_cov_aweights(m, a, w):
    return np.sum(np.cov(m, aweights=a) * w) + np.sum(np.cov(m, fweights=FW4, aweights=a) * w)


def f_cov_weights_ddof(m, a, w):
    return np.sum(np.cov(m, aweights=a, ddof=0) * w) + np.sum(
        np.cov(m, fweights=FW4, bias=True) * w
    )


def f_corrcoef(m, w):
    return np.sum(np.corrcoef(m) * w)


def f_corrcoef_y(x, y, w):
    return np.sum(np.corrcoef(x, y) * w)


def f_polyval(p, x, w):
    return np.sum(np.polyval(p, x) * w)


def f_diff_prepend(x, p, w):
    return np.sum(np.diff(x, prepend=p) * w)


def f_diff_ends(x, p, q, w):
    return np.sum(np.diff(x, 2, axis=0, prepend=p, append=q) * w)


def f_gradient(x, w):
    return np.sum(np.gradient(x, axis=-1) * w)


def f_gradient_edges(x, w):
    return np.sum(np.gradient(x, 0.5, axis=0, edge_order=2) * w)


def quantile_args(scale):
    """Distinct values (no ties) and a quantile (0-d or a vector) inside (0, ``scale``)."""

    def gen(draw, dtype):
        x = values(draw, draw(min_dims(1)), dtype, DISTINCT, scalars=False)
        q = values(draw, draw(st.sampled_from([(), (2,)])), dtype, Dom(0.03 * scale, 0.97 * scale))
        return x, q

    return gen


REDUCTIONS = [
    Row(f_sum, reduction()),
    Row(f_mean, reduction()),
    Row(f_prod, reduction(Dom(0.5, 1.5, "signed"))),
    Row(f_max, reduction(DISTINCT)),
    Row(f_amax, reduction(DISTINCT)),
    Row(f_min, reduction(DISTINCT)),
    Row(f_amin, reduction(DISTINCT)),
    Row(f_nanmax, reduction(DISTINCT)),
    Row(f_nanmin, reduction(DISTINCT)),
    Row(f_nansum, reduction()),
    Row(f_var, reduction()),
    Row(f_std, with_args(unary(shapes=SPREAD), some_axes, keepdims)),
    Row(f_var_ddof, with_args(unary(shapes=SPREAD), axis_or_none)),
    Row(f_std_ddof, with_args(unary(shapes=SPREAD), axis_or_none)),
    Row(f_cumsum, with_args(unary(), axis_or_none)),
    Row(f_average, reduction()),
    Row(f_average_weights, with_args(unary(shapes=min_dims(1), scalars=False), axis)),
    Row(
        f_average_wrt_weights,
        one_of(
            shaped((3,), (3,), dom=POS),
            shaped((3, 2), (3,), dom=POS),
            shaped((2, 3), (2, 3), dom=POS),
        ),
        (0, 1),
    ),
    Row(f_norm, with_args(unary(NONZERO, shapes=min_dims(1)), axis_or_none, keepdims)),
    Row(
        f_norm_vector,
        with_args(
            unary(Dom(-2, 2, "distinct"), shapes=min_dims(1, 1)),
            lambda s: st.sampled_from([None, 1, 2, np.inf]),
            axis_or_none,
        ),
    ),
    Row(f_norm_fro, unary(NONZERO, shapes=min_dims(2, 2))),
    Row(
        f_norm_matrix,
        with_args(
            unary(DISTINCT, shapes=min_dims(2, 3, min_side=2)),
            lambda s: st.sampled_from(MATRIX_ORDS),
            matrix_axes,
            keepdims,
        ),
    ),
    Row(
        f_vector_norm,
        with_args(
            unary(DISTINCT, shapes=min_dims(1)),
            lambda s: st.sampled_from(VECTOR_ORDS),
            some_axes,
            keepdims,
        ),
    ),
    Row(
        f_matrix_norm,
        with_args(
            unary(DISTINCT, shapes=min_dims(2, 3, min_side=2)),
            lambda s: st.sampled_from(MATRIX_ORDS),
        ),
    ),
    Row(f_nanmean, reduction()),
    Row(f_ptp, reduction(DISTINCT)),
    Row(
        f_prod_zeros,
        with_args(unary(Dom(0.1, 1.5, "signed"), shapes=min_dims(1), scalars=False), axis_or_none),
    ),
    Row(f_nancumsum, with_args(unary(), axis_or_none)),
    Row(
        f_cumulative_sum,
        with_args(
            unary(shapes=min_dims(1)),
            lambda s: st.integers(-len(s), len(s) - 1) if len(s) > 1 else st.none(),
        ),
    ),
    Row(f_cumprod, with_args(unary(Dom(0.5, 1.5, "signed")), axis_or_none)),
    Row(f_m_cumprod, unary(Dom(0.5, 1.5, "signed"), shapes=min_dims(1), scalars=False)),
    Row(
        f_diff,
        with_args(
            unary(shapes=min_dims(1, min_side=3), scalars=False), lambda s: st.integers(1, 2), axis
        ),
    ),
    Row(f_trapezoid, unary(shapes=min_dims(1, min_side=2))),
    Row(f_trapezoid_dx, unary(shapes=min_dims(1, min_side=2))),
    Row(
        f_trapezoid_x,
        one_of(shaped((3,), (3,)), shaped((2, 3), (3,)), shaped((2, 3), (2, 3))),
        (0, 1),
    ),
    Row(f_median, unary(DISTINCT, shapes=min_dims(1), scalars=False)),
    Row(f_median_axis, with_args(unary(DISTINCT, shapes=min_dims(1), scalars=False), axis_or_none)),
    Row(f_median_keepdims, unary(DISTINCT, shapes=min_dims(2), scalars=False)),
    Row(f_quantile, quantile_args(1.0), (0, 1)),
    Row(f_percentile, quantile_args(100.0), (0, 1), h=1e-5),
    Row(f_cov, unary(shapes=min_dims(1, 2, min_side=2), scalars=False)),
    Row(f_cov_bias, unary(shapes=min_dims(2, 2, min_side=2))),
    Row(f_cov_y, one_of(shaped((4, 2), (4,)), shaped((3, 1), (3, 2))), (0, 1)),
    Row(f_cov_aweights, _weighted([(2, 4), (4,), (3, 4)]), (0, 1)),
    Row(f_cov_weights_ddof, _weighted([(2, 4), (4,)]), (0, 1)),
    Row(f_corrcoef, unary(shapes=st.sampled_from([(3,), (2, 3), (3, 4)]), scalars=False)),
    Row(f_corrcoef_y, one_of(shaped((4,), (4,)), shaped((2, 3), (3,))), (0, 1)),
    Row(
        f_polyval,
        one_of(shaped((3,), ()), shaped((4,), (3,)), shaped((1,), (2, 2)), shaped((3, 2), (2,))),
        (0, 1),
    ),
    Row(
        f_diff_prepend,
        one_of(shaped((3,), ()), shaped((2, 3), (2, 1)), shaped((2, 3), (2, 2))),
        (0, 1),
    ),
    Row(f_diff_ends, one_of(shaped((3, 2), (1, 2), ()), shaped((2,), (), (2,))), (0, 1, 2)),
    Row(f_gradient, unary(shapes=st.sampled_from([(2,), (5,), (3, 4)]), scalars=False)),
    Row(f_gradient_edges, unary(shapes=st.sampled_from([(3,), (4, 2), (6, 1)]), scalars=False)),
]


# ==== linear algebra ===============================================================================
AXES_PAIRS = ([0, 2], [1, 0])


def f_dot(a, b, w):
    return np.sum(np.dot(a, b) * w)


def f_dot_method(a, b, w):
    return np.sum(a.dot(b) * w)


def f_matmul(a, b, w):
    return np.sum(np.matmul(a, b) * w)


def f_matmul_op(a, b, w):
    return np.sum((a @ b) * w)


def f_inner(a, b, w):
    return np.sum(np.inner(a, b) * w)


def f_outer(a, b, w):
    return np.sum(np.outer(a, b) * w)


def f_multi_dot(a, b, c, w):
    return np.sum(np.linalg.multi_dot([a, b, c]) * w)


def f_subtract_outer(a, b, w):
    return np.sum(np.subtract.outer(a, b) ** 2 * w)


def f_multiply_outer(a, b, w):
    return np.sum(np.multiply.outer(a, b) * w) + np.sum(np.add.outer(b, a) * w.T)


def f_divide_outer(a, b, w):
    return np.sum(np.divide.outer(a, b * b + 1.0) * w)


def f_tensordot(a, b, w):
    return np.sum(np.tensordot(a, b, 1) * w)


def f_tensordot_0(a, b, w):
    return np.sum(np.tensordot(a, b, axes=0) * w)


def f_tensordot_2(a, b, w):
    return np.sum(np.tensordot(a, b) * w)


def f_tensordot_pairs(a, b, w):
    return np.sum(np.tensordot(a, b, axes=AXES_PAIRS) * w)


def f_einsum_matmul(a, b, w):
    return np.sum(np.einsum("ij,jk->ik", a, b) * w)


def f_einsum_implicit(a, b, w):
    return np.sum(np.einsum("ij,jk", a, b) * w)


def f_einsum_batched(a, b, w):
    return np.sum(np.einsum("bij,bjk->bik", a, b) * w)


def f_einsum_diag(a, w):
    return np.sum(np.einsum("ii->i", a) * w)


def f_einsum_total(a, w):
    return np.einsum("ij->", a) * w


def f_einsum_transpose(a, w):
    return np.sum(np.einsum("ij->ji", a) * w)


def f_einsum_dot(a, b, w):
    return np.einsum("i,i->", a, b) * w


def f_einsum_ellipsis(a, b, w):
    return np.sum(np.einsum("...ij,...jk->...ik", a, b) * w)


def f_einsum_ellipsis_implicit(a, b, w):
    return np.sum(np.einsum("...i,...i", a, b) * w)


def f_einsum_ellipsis_diag(a, w):
    return np.sum(np.einsum("...ii->...i", a) * w)


def f_einsum_three(a, b, c, w):
    return np.sum(np.einsum("ij,jk,kl->il", a, b, c) * w)


def f_trace(a, w):
    return np.trace(a) * w


def f_trace_offset(a, w):
    return np.trace(a, 1) * w


def f_diag_vector(v, w):
    return np.sum(np.diag(v) * w)


def f_diag_vector_k(v, w):
    return np.sum(np.diag(v, -1) * w)


def f_diag_matrix(a, w):
    return np.sum(np.diag(a) * w)


def f_diag_matrix_k(a, w):
    return np.sum(np.diag(a, k=1) * w)


def f_diagonal(a, w):
    return np.sum(np.diagonal(a, 1, 0, 2) * w)


def f_tril(a, w):
    return np.sum(np.tril(a) * w)


def f_triu(a, w):
    return np.sum(np.triu(a, -1) * w)


def f_inv(a, w):
    return np.sum(np.linalg.inv(a) * w)


def f_det(a, w):
    return np.sum(np.linalg.det(a) * w)


def f_slogdet(a, w):
    return np.sum(np.linalg.slogdet(a)[1] * w)


def f_solve(a, b, w):
    return np.sum(np.linalg.solve(a, b) * w)


def f_kron(a, b, w):
    return np.sum(np.kron(a, b) * w)


def f_cross(a, b, w):
    return np.sum(np.cross(a, b) * w)


def f_vdot(a, b, w):
    return np.vdot(a, b) * w


def f_vecdot(a, b, w):
    return np.sum(np.vecdot(a, b) * w)


def f_vecdot_axis(a, b, w):
    return np.sum(np.vecdot(a, b, axis=0) * w)


def f_matvec(a, b, w):
    return np.sum(np.matvec(a, b) * w)


def f_vecmat(a, b, w):
    return np.sum(np.vecmat(a, b) * w)


def f_la_matmul(a, b, w):
    return np.sum(np.linalg.matmul(a, b) * w)


def f_la_outer(a, b, w):
    return np.sum(np.linalg.outer(a, b) * w)


def f_la_tensordot(a, b, w):
    return np.sum(np.linalg.tensordot(a, b, axes=1) * w)


def f_la_vecdot(a, b, w):
    return np.sum(np.linalg.vecdot(a, b) * w)


def f_la_cross(a, b, w):
    return np.sum(np.linalg.cross(a, b, axis=0) * w)


def f_la_trace(a, w):
    return np.sum(np.linalg.trace(a, offset=1) * w)


def f_la_diagonal(a, w):
    return np.sum(np.linalg.diagonal(a) * w)


def f_diagflat(v, w):
    return np.sum(np.diagflat(v, 1) * w)


def f_matrix_power(a, n, w):
    return np.sum(np.linalg.matrix_power(a, n) * w)


def n():
    """A dimension's size."""
    return st.integers(1, 3)


def products(*pairs):
    """Operand shapes for products, as patterns over sizes i, j, k, b: e.g. ("ij", "jk")."""

    def gen(draw, dtype):
        sizes = {c: draw(n()) for c in "ijkb"}
        pattern = draw(st.sampled_from(pairs))
        return tuple(
            values(draw, tuple(sizes[c] for c in p), dtype, scalars=False)
            for p in pattern.split(",")
        )

    return gen


def square(min_n=1, batch=False, b=None):
    """A well-conditioned matrix (maybe batched), and optionally a right-hand side of pattern ``b``."""

    def gen(draw, dtype):
        k = draw(st.integers(min_n, 3))
        lead = draw(st.sampled_from([(), (2,)])) if batch else ()
        out = (matrix(draw, lead + (k, k), dtype),)
        if b is not None:
            rhs = {"k": (k,), "km": lead + (k, 2), "km unbatched": (k, 2)}[draw(st.sampled_from(b))]
            out += (values(draw, rhs, dtype, scalars=False),)
        return out

    return gen


MATRICES = hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=4)  # square or not


def f_cholesky(a, w):
    return np.sum(np.linalg.cholesky(a) * w)


def f_cholesky_upper(a, w):
    return np.sum(np.linalg.cholesky(a, upper=True) * w)


def f_eigh_values(a, w):
    return np.sum(np.linalg.eigh(a)[0] * w)


def f_eigh_vectors(a, w):
    lam, v = np.linalg.eigh(a)  # v enters squared: a column's sign is arbitrary
    return np.sum(v * v * w) + np.sum(lam * lam)


def f_eigh_upper(a, w):
    return np.sum(np.linalg.eigh(a, UPLO="U")[1] ** 2 * w)


def f_eigvalsh(a, w):
    return np.sum(np.linalg.eigvalsh(a) * w)


def f_svd_values(a, w):
    return np.sum(np.linalg.svd(a, compute_uv=False) * w)


def f_svdvals(a, w):
    return np.sum(np.linalg.svdvals(a) * w)


def f_svd_reduced(a, w):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum((u * u) @ (vh * vh) * w) + np.sum(s**3)


def f_svd_square(a, w):
    u, s, vh = np.linalg.svd(a)
    return np.sum((u @ vh) * w)


def f_qr(a, w):
    q, r = np.linalg.qr(a)
    return np.sum((q * 2.0 + np.sum(r * r)) * w)


def f_qr_r(a, w):
    return np.sum(np.linalg.qr(a)[1] * w)


def f_qr_mode_r(a, w):
    return np.sum(np.linalg.qr(a, mode="r") * w)


def f_pinv(a, w):
    return np.sum(np.linalg.pinv(a) * w)


def f_lstsq(a, b, w):
    return np.sum(np.linalg.lstsq(a, b)[0] * w)


def f_lstsq_all(a, b, w):
    x, res, rank, s = np.linalg.lstsq(a, b)
    return np.sum(x * w) + np.sum(res) + np.sum(s)


def ranked(*shapes, b=None):
    """A matrix of full rank with distinct singular values (about 1, 2, 3 plus noise) of one of
    ``shapes``, and optionally a right-hand side with ``b`` columns (``None``: a vector)."""

    def gen(draw, dtype):
        shape = draw(st.sampled_from(shapes))
        m, n = shape[-2:]
        spread = np.eye(m, n) * np.arange(1.0, n + 1.0)
        a = (values(draw, shape, np.float64, Dom(-0.3, 0.3)) + spread).astype(dtype)
        if b is None:
            return (a,)
        cols = draw(st.sampled_from(b))
        return a, values(draw, (m,) if cols is None else (m, cols), dtype, scalars=False)

    return gen


# square, distinct eigenvalues of the symmetric part
EIG = ranked((1, 1), (2, 2), (3, 3), (2, 3, 3))
TALL = ranked((1, 1), (3, 3), (3, 2), (4, 2), (2, 3, 2))
ANY_RANKED = ranked((2, 2), (3, 2), (2, 3), (2, 4, 3), (2, 2, 3))


def f_convolve(a, v, w):
    return np.sum(np.convolve(a, v) * w)


def f_convolve_same(a, v, w):
    return np.sum(np.convolve(a, v, mode="same") * w)


def f_convolve_valid(a, v, w):
    return np.sum(np.convolve(a, v, "valid") * w)


def f_correlate(a, v, w):
    return np.sum(np.correlate(a, v) * w)


def f_correlate_same(a, v, w):
    return np.sum(np.correlate(a, v, "same") * w)


def f_correlate_full(a, v, w):
    return np.sum(np.correlate(a, v, mode="full") * w)


def vectors(draw, dtype):
    """Two 1-d operands of any lengths (either the longer)."""
    return tuple(values(draw, (draw(st.integers(1, 5)),), dtype, scalars=False) for _ in range(2))


MATMUL = ["ij,jk", "j,jk", "ij,j", "j,j", "bij,jk", "ij,bjk", "bij,bjk", "bij,j", "j,bjk"]
LINALG = [
    Row(
        f_dot,
        products("ij,jk", "j,jk", "ij,j", "j,j", "bij,jk", "ij,bjk", "bij,j", ",jk", "ij,"),
        (0, 1),
    ),
    Row(f_dot_method, products("ij,jk", "ij,j", "j,j"), (0, 1)),
    Row(f_matmul, products(*MATMUL), (0, 1)),
    Row(f_matmul_op, products(*MATMUL), (0, 1)),
    Row(f_inner, products("j,j", "ij,kj", "bij,j", "j,kj", ",ij"), (0, 1)),
    Row(f_outer, products("i,j", "ij,k", ",j", "bi,jk"), (0, 1)),
    Row(f_multi_dot, products("ij,jk,kb", "j,jk,kb", "ij,jk,k", "j,jk,k"), (0, 1, 2)),
    Row(f_subtract_outer, products("i,j", "ij,k", ",j", "i,", "bi,jk"), (0, 1)),
    Row(f_multiply_outer, products("i,j", "ij,k", ",j", "i,"), (0, 1)),
    Row(f_divide_outer, products("i,j", "ij,k", "i,"), (0, 1)),
    Row(f_tensordot, products("ij,jk", "bij,jk", "j,j", "j,jk"), (0, 1)),
    Row(f_tensordot_0, products("ij,k", ",j"), (0, 1)),
    Row(f_tensordot_2, products("bij,ijk", "ij,ij"), (0, 1)),
    Row(f_tensordot_pairs, products("ikb,bij"), (0, 1)),
    Row(f_einsum_matmul, products("ij,jk"), (0, 1)),
    Row(f_einsum_implicit, products("ij,jk"), (0, 1)),
    Row(f_einsum_batched, products("bij,bjk"), (0, 1)),
    Row(f_einsum_diag, products("ii")),
    Row(f_einsum_total, products("ij")),
    Row(f_einsum_transpose, products("ij")),
    Row(f_einsum_dot, products("i,i"), (0, 1)),
    Row(f_einsum_ellipsis, products("ij,jk", "bij,jk", "ij,bjk", "bij,bjk", "kbij,bjk"), (0, 1)),
    Row(f_einsum_ellipsis_implicit, products("i,i", "bi,i", "kbi,bi"), (0, 1)),
    Row(f_einsum_ellipsis_diag, products("ii", "bii")),
    Row(f_einsum_three, products("ij,jk,kb"), (0, 1, 2)),
    Row(f_trace, unary(shapes=MATRICES)),
    Row(f_trace_offset, unary(shapes=MATRICES)),
    Row(f_diag_vector, unary(shapes=min_dims(1, 1))),
    Row(f_diag_vector_k, unary(shapes=min_dims(1, 1))),
    Row(f_diag_matrix, unary(shapes=MATRICES)),
    Row(f_diag_matrix_k, unary(shapes=MATRICES)),
    Row(f_diagonal, unary(shapes=min_dims(3, 3))),
    Row(f_tril, unary(shapes=min_dims(2, 3))),
    Row(f_triu, unary(shapes=min_dims(2, 3))),
    Row(f_inv, square(batch=True)),
    Row(f_det, square(batch=True)),
    Row(f_slogdet, square(batch=True)),
    Row(f_solve, square(batch=True, b=["k", "km", "km unbatched"]), (0, 1)),
    Row(f_kron, products("i,j", "ij,kb", "i,jk"), (0, 1)),
    Row(f_cross, one_of(shaped((3,), (3,)), shaped((2, 3), (3,)), shaped((3,), (2, 3))), (0, 1)),
    Row(f_vdot, products("i,i", "ij,ji"), (0, 1)),
    Row(f_vecdot, products("j,j", "ij,j", "bij,ij", "j,bij"), (0, 1)),
    Row(f_vecdot_axis, products("ji,j", "jb,jb", "jbi,ji"), (0, 1)),
    Row(f_matvec, products("ij,j", "bij,j", "ij,bj"), (0, 1)),
    Row(f_vecmat, products("i,ij", "bi,ij", "i,bij"), (0, 1)),
    Row(f_la_matmul, products(*MATMUL), (0, 1)),
    Row(f_la_outer, products("i,j"), (0, 1)),
    Row(f_la_tensordot, products("ij,jk", "j,jk"), (0, 1)),
    Row(f_la_vecdot, products("ij,j"), (0, 1)),
    Row(f_la_cross, one_of(shaped((3,), (3,)), shaped((3, 2), (3, 1))), (0, 1)),
    Row(f_la_trace, unary(shapes=min_dims(2, 3))),
    Row(f_la_diagonal, unary(shapes=min_dims(2, 3))),
    Row(f_diagflat, unary(shapes=min_dims(1, 2), scalars=False)),
    Row(f_matrix_power, with_args(square(batch=True), lambda s: st.integers(-2, 3))),
    Row(f_cholesky, square(batch=True)),
    Row(f_cholesky_upper, square(batch=True)),
    Row(f_eigh_values, EIG),
    Row(f_eigh_vectors, EIG),
    Row(f_eigh_upper, EIG),
    Row(f_eigvalsh, EIG),
    Row(f_svd_values, ANY_RANKED),
    *([Row(f_svdvals, ANY_RANKED)] if hasattr(np.linalg, "svdvals") else []),
    Row(f_svd_reduced, ANY_RANKED),
    Row(f_svd_square, EIG),
    Row(f_qr, TALL),
    Row(f_qr_r, TALL),
    Row(f_qr_mode_r, TALL),
    Row(f_pinv, ANY_RANKED),
    Row(f_lstsq, ranked((3, 3), (3, 2), (4, 2), b=[None, 2]), (0, 1)),
    Row(f_lstsq_all, ranked((3, 2), (4, 2), b=[None, 2]), (0, 1)),
    Row(f_convolve, vectors, (0, 1)),
    Row(f_convolve_same, vectors, (0, 1)),
    Row(f_convolve_valid, vectors, (0, 1)),
    Row(f_correlate, vectors, (0, 1)),
    Row(f_correlate_same, vectors, (0, 1)),
    Row(f_correlate_full, vectors, (0, 1)),
]


# ==== shape ========================================================================================
def f_atleast_1d(x, w):
    return np.sum(np.atleast_1d(x) * w)


def f_atleast_2d(x, w):
    return np.sum(np.atleast_2d(x) * w)


def f_atleast_3d(x, w):
    return np.sum(np.atleast_3d(x) * w)


def f_reshape(x, w):
    return np.sum(np.reshape(x, (-1, 2)) * w)


def f_reshape_flat(x, w):
    return np.sum(np.reshape(x, -1) * w)


def f_ravel(x, w):
    return np.sum(np.ravel(x) * w)


def f_squeeze(x, w):
    return np.sum(np.squeeze(x) * w)


def f_squeeze_axis(x, w):
    return np.sum(np.squeeze(x, axis=1) * w)


def f_expand_dims(x, axis, w):
    return np.sum(np.expand_dims(x, axis) * w)


def f_transpose(x, w):
    return np.sum(np.transpose(x) * w)


def f_transpose_axes(x, axes, w):
    return np.sum(np.transpose(x, axes) * w)


def f_swapaxes(x, a1, a2, w):
    return np.sum(np.swapaxes(x, a1, a2) * w)


def f_moveaxis(x, src, dst, w):
    return np.sum(np.moveaxis(x, src, dst) * w)


def f_broadcast_to(x, shape, w):
    return np.sum(np.broadcast_to(x, shape) * w)


def f_concatenate(x, y, axis, w):
    return np.sum(np.concatenate([x, y], axis=axis) * w)


def f_concatenate_three(x, y, w):
    return np.sum(np.concatenate((x, y * 2.0, x), axis=None) * w)


def f_stack(x, y, axis, w):
    return np.sum(np.stack([x, y], axis) * w)


def f_hstack(x, y, w):
    return np.sum(np.hstack([x, y]) * w)


def f_vstack(x, y, w):
    return np.sum(np.vstack([x, y]) * w)


def f_column_stack(x, y, w):
    return np.sum(np.column_stack([x, y]) * w)


def f_row_stack(x, y, w):
    return np.sum(np.row_stack((x, y)) * w)


def f_split_one(x, w):
    return np.sum(np.split(x, [1], axis=0)[1] * w)


def f_split_all(x, w):
    a, b = np.split(x, 2, axis=1)
    return np.sum((a * 2.0 + b) * w)


def f_array_split(x, w):
    return np.sum(np.array_split(x, 2)[0] * w)


def f_flip(x, axis, w):
    return np.sum(np.flip(x, axis) * w)


def f_fliplr(x, w):
    return np.sum(np.fliplr(x) * w)


def f_flipud(x, w):
    return np.sum(np.flipud(x) * w)


def f_roll(x, shift, axis, w):
    return np.sum(np.roll(x, shift, axis) * w)


def f_roll_tuple(x, w):
    return np.sum(np.roll(x, (1, -2), (0, 1)) * w)


def f_rot90(x, k, w):
    return np.sum(np.rot90(x, k) * w)


def f_rot90_axes(x, w):
    return np.sum(np.rot90(x, 1, (1, 2)) * w)


def f_tile(x, reps, w):
    return np.sum(np.tile(x, reps) * w)


def f_repeat(x, repeats, axis, w):
    return np.sum(np.repeat(x, repeats, axis) * w)


def f_repeat_counts(x, w):
    return np.sum(np.repeat(x, np.array([2, 0, 1]), axis=0) * w)


PAD_WIDTHS = ((1, 2), (0, 1))  # a nested tuple literal in a call is refused: name it


def f_pad(x, w):
    return np.sum(np.pad(x, 1) * w)


def f_pad_widths(x, w):
    return np.sum(np.pad(x, PAD_WIDTHS) * w)


def f_pad_constant(x, w):
    return np.sum(np.pad(x, (2, 1), mode="constant", constant_values=3.0) * w)


def f_pad_mode(x, mode, w):
    return np.sum(np.pad(x, 2, mode=mode) * w)


def f_copy(x, w):
    return np.sum(np.copy(x) * w)


def f_dstack(x, y, w):
    return np.sum(np.dstack([x, y]) * w)


def f_append(x, y, w):
    return np.sum(np.append(x, y) * w)


def f_append_axis(x, y, w):
    return np.sum(np.append(x, y, axis=0) * w)


def f_unstack(x, w):
    return np.sum(np.unstack(x, axis=-1)[0] * w)


def f_unstack_all(x, w):
    a, b = np.unstack(x)
    return np.sum((a - 2.0 * b) * w)


def f_delete(x, w):
    return np.sum(np.delete(x, 1) * w)


def f_delete_axis(x, w):
    return np.sum(np.delete(x, IDX_DELETE, axis=-1) * w)


def f_matrix_transpose(x, w):
    return np.sum(np.matrix_transpose(x) * w)


def f_la_matrix_transpose(x, w):
    return np.sum(np.linalg.matrix_transpose(x) * w)


def f_m_mT(x, w):
    return np.sum(x.mT * w)


def rest_of(shape, axis, size):
    """``shape`` with ``size`` at ``axis``."""
    s = list(shape)
    s[axis] = size
    return tuple(s)


def concat_pair(draw, dtype):
    shape = draw(min_dims(1))
    ax = draw(st.one_of(st.none(), axis(shape)))
    other = shape if ax is None else rest_of(shape, ax, draw(n()))
    y_shape = draw(SHAPES) if ax is None else other
    return values(draw, shape, dtype), values(draw, y_shape, dtype, scalars=False), ax


def same_pair(draw, dtype):
    shape = draw(SHAPES)
    return (
        values(draw, shape, dtype, scalars=False),
        values(draw, shape, dtype, scalars=False),
        draw(st.integers(-len(shape) - 1, len(shape))),
    )


IDX_DELETE = np.array([0, 2])
IDX_INSERT = np.array([3, 0, 1])


def f_insert(x, v, w):
    return np.sum(np.insert(x, IDX_INSERT, v) * w)


def f_insert_axis(x, v, w):
    return np.sum(np.insert(x, 1, v, axis=-1) * w)


def f_fill_diagonal(a, v, w):
    b = a * 1.0
    np.fill_diagonal(b, v)
    return np.sum(b * w)


def f_fill_diagonal_wrap(a, v, w):
    b = a * 1.0
    np.fill_diagonal(b, v, wrap=True)
    return np.sum(b * w)


def _diagonal_fill(shapes, vshapes):
    """A matrix (or a cube) of one of ``shapes`` and a fill value of one of ``vshapes`` (a count
    of entries, or () for a scalar)."""

    def gen(draw, dtype):
        a = values(draw, draw(st.sampled_from(shapes)), dtype, scalars=False)
        return a, values(draw, draw(st.sampled_from(vshapes)), dtype)

    return gen


def concat_axis0(draw, dtype):
    shape = draw(min_dims(1))
    return values(draw, shape, dtype), values(draw, (draw(n()),) + shape[1:], dtype)


def stack_pair(ndims):
    def gen(draw, dtype):
        shape = draw(st.sampled_from(ndims))
        return values(draw, shape, dtype, scalars=False), values(draw, shape, dtype, scalars=False)

    return gen


def broadcast_target(shape):
    return hnp.broadcastable_shapes(shape, min_dims=0, max_dims=4, max_side=3).map(
        lambda s: np.broadcast_shapes(s, shape)
    )


def permutation(shape):
    return st.permutations(range(len(shape))).map(tuple)


def shift_and_axis(draw, dtype):
    x = values(draw, draw(min_dims(1)), dtype)
    return x, draw(st.integers(-4, 4)), draw(axis_or_none(x.shape))


def repeat_args(draw, dtype):
    x = values(draw, draw(SHAPES), dtype, scalars=False)
    return x, draw(st.integers(0, 3)), draw(axis_or_none(x.shape))


def tile_args(draw, dtype):
    x = values(draw, draw(SHAPES), dtype, scalars=False)
    return x, draw(
        st.one_of(st.integers(1, 3), st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple))
    )


def f_hsplit(x, w):
    return np.sum(np.hsplit(x, 2)[1] * w)


def f_vsplit(x, w):
    return np.sum(np.vsplit(x, [1])[0] * w)


def f_dsplit(x, w):
    a, b = np.dsplit(x, 2)
    return np.sum((a * 2.0 + b) * w)


def f_rollaxis(x, axis, start, w):
    return np.sum(np.rollaxis(x, axis, start) * w)


def f_partition(x, w):
    return np.sum(np.partition(x, 1, axis=0) * w)


def f_partition_flat(x, w):
    return np.sum(np.partition(x, -1, axis=None) * w)


def f_select(a, b, c, w):
    return np.sum(np.select([a > 0, b > 0], [a, b * 2.0], c) * w)


def f_sliding_window(x, w):
    return np.sum(np.lib.stride_tricks.sliding_window_view(x, 2) * w)


def f_sliding_window_2d(x, w):
    return np.sum(np.lib.stride_tricks.sliding_window_view(x, (2, 2)) * w)


def f_sliding_window_axis(x, w):
    return np.sum(np.lib.stride_tricks.sliding_window_view(x, 2, axis=0) * w)


SHAPE = [
    Row(f_atleast_1d, unary()),
    Row(f_atleast_2d, unary()),
    Row(f_atleast_3d, unary()),
    Row(f_reshape, unary(shapes=st.sampled_from([(2, 3), (4,), (1, 2, 3), (2, 2, 2)]))),
    Row(f_reshape_flat, unary()),
    Row(f_ravel, unary()),
    Row(f_squeeze, unary(shapes=st.sampled_from([(1, 3, 1), (2, 1), (1,), (3,)]))),
    Row(f_squeeze_axis, unary(shapes=st.sampled_from([(2, 1), (3, 1, 2)]))),
    Row(f_expand_dims, with_args(unary(), lambda s: st.integers(-len(s) - 1, len(s)))),
    Row(f_transpose, unary()),
    Row(f_transpose_axes, with_args(unary(scalars=False), permutation)),
    Row(f_swapaxes, with_args(unary(shapes=min_dims(1)), axis, axis)),
    Row(f_moveaxis, with_args(unary(shapes=min_dims(1)), axis, axis)),
    Row(f_broadcast_to, with_args(unary(), broadcast_target)),
    Row(f_concatenate, concat_pair, (0, 1)),
    Row(f_concatenate_three, binary(), (0, 1)),
    Row(f_stack, same_pair, (0, 1)),
    Row(f_hstack, stack_pair([(3,), (2, 3), (1,)]), (0, 1)),
    Row(f_vstack, stack_pair([(3,), (2, 3)]), (0, 1)),
    Row(f_column_stack, stack_pair([(3,), (3, 2)]), (0, 1)),
    *(
        [Row(f_row_stack, stack_pair([(3,), (2, 3)]), (0, 1), marks=DEPRECATED)]
        if hasattr(np, "row_stack")
        else []
    ),
    Row(f_split_one, unary(shapes=min_dims(1, min_side=2))),
    Row(f_split_all, unary(shapes=st.sampled_from([(1, 2), (3, 4), (2, 2, 3)]))),
    Row(f_array_split, unary(shapes=min_dims(1))),
    Row(f_flip, with_args(unary(scalars=False), axes)),
    Row(f_fliplr, unary(shapes=min_dims(2))),
    Row(f_flipud, unary(shapes=min_dims(1))),
    Row(f_roll, shift_and_axis),
    Row(f_roll_tuple, unary(shapes=min_dims(2))),
    Row(f_rot90, with_args(unary(shapes=min_dims(2)), lambda s: st.integers(-3, 4))),
    Row(f_rot90_axes, unary(shapes=min_dims(3))),
    Row(f_tile, tile_args),
    Row(f_repeat, repeat_args),
    Row(f_repeat_counts, unary(shapes=st.sampled_from([(3,), (3, 2)]))),
    Row(f_pad, unary(scalars=False)),
    Row(f_pad_widths, unary(shapes=min_dims(2, 2))),
    Row(f_pad_constant, unary(shapes=min_dims(1, 1))),
    Row(
        f_pad_mode,
        with_args(
            unary(shapes=min_dims(1, 2, min_side=3)),
            lambda s: st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]),
        ),
    ),
    Row(f_copy, unary()),
    Row(f_dstack, stack_pair([(3,), (2, 3), (2, 3, 2)]), (0, 1)),
    Row(f_append, binary(), (0, 1)),
    Row(f_append_axis, concat_axis0, (0, 1)),
    Row(f_unstack, unary(shapes=min_dims(1), scalars=False)),
    Row(f_unstack_all, unary(shapes=st.sampled_from([(2,), (2, 3)]))),
    Row(f_delete, unary(shapes=min_dims(1, min_side=2), scalars=False)),
    Row(f_delete_axis, unary(shapes=min_dims(1, min_side=3), scalars=False)),
    # (float64 only: the values are cast to the array's dtype, which would round a float32's
    # finite differences in a float64 value)
    Row(
        f_insert,
        one_of(shaped((4,), ()), shaped((4,), (3,)), shaped((2, 2), (1,)), shaped((3,), (3,))),
        (0, 1),
        (np.float64,),
    ),
    Row(
        f_insert_axis,
        one_of(shaped((2, 3), ()), shaped((2, 3), (2,)), shaped((3,), ())),
        (0, 1),
        (np.float64,),
    ),
    Row(
        f_fill_diagonal,
        _diagonal_fill([(3, 3), (4, 3), (2, 4), (2, 2, 2)], [(), (1,), (2,)]),
        (0, 1),
        (np.float64,),
    ),
    Row(
        f_fill_diagonal_wrap,
        _diagonal_fill([(7, 3), (3, 3)], [(), (3,), (2,)]),
        (0, 1),
        (np.float64,),
    ),
    Row(f_matrix_transpose, unary(shapes=min_dims(2))),
    Row(f_la_matrix_transpose, unary(shapes=min_dims(2))),
    Row(f_m_mT, unary(shapes=min_dims(2))),
    Row(f_hsplit, unary(shapes=st.sampled_from([(4,), (2, 2), (3, 4, 1)]))),
    Row(f_vsplit, unary(shapes=min_dims(2, min_side=2))),
    Row(f_dsplit, unary(shapes=st.sampled_from([(1, 2, 2), (2, 3, 4)]))),
    Row(
        f_rollaxis,
        with_args(
            unary(shapes=min_dims(1), scalars=False), axis, lambda s: st.integers(-len(s), len(s))
        ),
    ),
    Row(f_partition, unary(DISTINCT, shapes=min_dims(1, min_side=2), scalars=False)),
    Row(f_partition_flat, unary(DISTINCT, shapes=min_dims(1), scalars=False)),
    Row(
        f_select,
        one_of(shaped((3,), (3,), (), dom=NONZERO), shaped((2, 3), (2, 3), (3,), dom=NONZERO)),
        (0, 1, 2),
    ),
    Row(f_sliding_window, unary(shapes=st.sampled_from([(2,), (4,)]))),
    Row(f_sliding_window_2d, unary(shapes=st.sampled_from([(2, 2), (3, 4)]))),
    Row(f_sliding_window_axis, unary(shapes=min_dims(1, min_side=2))),
]


# ==== selection ====================================================================================
IDX = np.array([2, 0, 2, 1, 2])  # repeated indices must accumulate
IDX_2D = np.array([[0, 1], [1, 1]])


def f_where(c, x, y, w):
    return np.sum(np.where(c > 0, x, y) * w)


def f_where_scalar(x, w):
    return np.sum(np.where(x > 0, x, 0.5) * w)


def f_clip(x, w):
    return np.sum(np.clip(x, -0.5, 0.7) * w)


def f_clip_upper(x, w):
    return np.sum(np.clip(x, None, 0.7) * w)


def f_clip_bounds(x, lo, hi, w):
    return np.sum(np.clip(x, lo, hi) * w)


def f_take(x, w):
    return np.sum(np.take(x, IDX) * w)


def f_take_axis(x, w):
    return np.sum(np.take(x, IDX, axis=1) * w)


def f_take_2d(x, w):
    return np.sum(np.take(x, IDX_2D, axis=-1) * w)


def f_take_along_axis(x, w):
    return np.sum(np.take_along_axis(x, np.argsort(x, axis=0), axis=0) * w)


def f_take_along_axis_repeats(x, w):
    return np.sum(np.take_along_axis(x, IDX_2D, axis=1) * w)


def f_sort(x, axis, w):
    return np.sum(np.sort(x, axis) * w)


def f_sort_default(x, w):
    return np.sum(np.sort(x) * w)


def f_interp(x, fp, w):
    return np.sum(np.interp(x, XP, fp) * w)


def f_interp_bounds(x, fp, w):
    return np.sum(np.interp(x, XP, fp, left=-1.0, right=2.0) * w)


XP = np.array([-1.0, -0.4, 0.4, 1.0])  # on the 0.2 grid: grid1 points stay off the knots


def interp_args(draw, dtype):
    """Points in and outside ``XP``'s range, never on a knot (a kink)."""
    x = values(draw, draw(SHAPES), dtype, Dom(-1.6, 1.6, "grid1"))
    return x, values(draw, (4,), dtype, scalars=False)


def where_args(draw, dtype):
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3)).input_shapes
    return values(draw, s[0], dtype), values(draw, s[1], dtype), values(draw, s[2], dtype)


def clip_args(draw, dtype):
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3)).input_shapes
    return (
        values(draw, s[0], dtype, GRID0),
        values(draw, s[1], dtype, Dom(-1.6, -0.2, "grid1")),
        values(draw, s[2], dtype, Dom(0.2, 1.4, "grid1")),
    )


SELECTION = [
    Row(f_where, where_args, (1, 2)),
    Row(f_where_scalar, unary(NONZERO)),
    Row(f_clip, unary(GRID0)),
    Row(f_clip_upper, unary(GRID0)),
    Row(f_clip_bounds, clip_args, (0, 1, 2)),
    Row(f_take, unary(shapes=min_dims(1, min_side=3))),
    Row(f_take_axis, unary(shapes=min_dims(2, min_side=3))),
    Row(f_take_2d, unary(shapes=min_dims(1, min_side=2))),
    Row(f_take_along_axis, unary(DISTINCT, shapes=min_dims(1), scalars=False)),
    Row(f_take_along_axis_repeats, unary(shapes=st.sampled_from([(2, 2), (2, 3)]))),
    Row(f_sort, with_args(unary(DISTINCT, shapes=min_dims(1)), axis_or_none)),
    Row(f_sort_default, unary(DISTINCT, shapes=min_dims(1))),
    Row(f_interp, interp_args, (0, 1)),
    Row(f_interp_bounds, interp_args, (0, 1)),
]


# ==== indexing reads ===============================================================================
MASK = np.array([True, False, True])


def f_index_int(x, w):
    return x[1] * w


def f_index_negative(x, w):
    return np.sum(x[-1] * w)


def f_index_slice(x, w):
    return np.sum(x[1:] * w)


def f_index_reversed(x, w):
    return np.sum(x[::-1] * w)


def f_index_step(x, w):
    return np.sum(x[::-2] * w)


def f_index_negative_slice(x, w):
    return np.sum(x[-1:0:-1, 1] * w)


def f_index_none(x, w):
    return np.sum(x[None] * w)


def f_index_ellipsis(x, w):
    return np.sum(x[..., 0] * w)


def f_index_mixed(x, w):
    return np.sum(x[:, None, 1] * w)


def f_index_tuple(x, w):
    return x[1, 2] * w


def f_index_array(x, w):
    return np.sum(x[IDX] * w)


def f_index_array_2d(x, w):
    return np.sum(x[IDX_2D] * w)


def f_index_array_slice(x, w):
    return np.sum(x[IDX, 1:] * w)


def f_index_arrays(x, w):
    return np.sum(x[IDX_2D, IDX_2D] * w)


def f_index_mask(x, w):
    return np.sum(x[x > 0] * w)


def f_index_mask_const(x, w):
    return np.sum(x[MASK] * w)


def f_index_mask_axis(x, w):
    return np.sum(x[:, MASK] * w)


M34 = unary(shapes=st.sampled_from([(3, 4), (3, 3, 2)]))
INDEXING = [
    Row(f_index_int, unary(shapes=st.just((3,)))),
    Row(f_index_negative, unary(shapes=min_dims(1))),
    Row(f_index_slice, unary(shapes=min_dims(1))),
    Row(f_index_reversed, unary(shapes=min_dims(1))),
    Row(f_index_step, unary(shapes=min_dims(1))),
    Row(f_index_negative_slice, M34),
    Row(f_index_none, unary(scalars=False)),
    Row(f_index_ellipsis, unary(shapes=min_dims(1))),
    Row(f_index_mixed, M34),
    Row(f_index_tuple, unary(shapes=st.just((3, 3)))),
    Row(f_index_array, unary(shapes=min_dims(1, min_side=3))),
    Row(f_index_array_2d, M34),
    Row(f_index_array_slice, M34),
    Row(f_index_arrays, M34),
    Row(f_index_mask, unary(NONZERO, shapes=min_dims(1))),
    Row(f_index_mask_const, unary(shapes=st.just((3,)))),
    Row(f_index_mask_axis, unary(shapes=st.sampled_from([(2, 3), (1, 3, 2)]))),
]


# ==== ndarray methods and attributes ================================================================
def f_m_sum(x, w):
    return np.sum(x.sum(axis=0) * w)


def f_m_sum_keep(x, w):
    return np.sum(x.sum(axis=(0, -1), keepdims=True) * w)


def f_m_sum_all(x, w):
    return x.sum() * w


def f_m_mean(x, w):
    return np.sum(x.mean(axis=-1) * w)


def f_m_prod(x, w):
    return x.prod() * w


def f_m_max(x, w):
    return np.sum(x.max(axis=1) * w)


def f_m_min(x, w):
    return x.min() * w


def f_m_var(x, w):
    return np.sum(x.var(axis=0) * w)


def f_m_std(x, w):
    return x.std() * w


def f_m_cumsum(x, w):
    return np.sum(x.cumsum(axis=1) * w)


def f_m_T(x, w):
    return np.sum(x.T * w)


def f_m_transpose(x, w):
    return np.sum(x.transpose(1, 0, 2) * w)


def f_m_transpose_tuple(x, w):
    return np.sum(x.transpose((2, 0, 1)) * w)


def f_m_reshape(x, w):
    return np.sum(x.reshape(2, -1) * w)


def f_m_reshape_tuple(x, w):
    return np.sum(x.reshape((-1,)) * w)


def f_m_ravel(x, w):
    return np.sum(x.ravel() * w)


def f_m_flatten(x, w):
    return np.sum(x.flatten() * w)


def f_m_squeeze(x, w):
    return np.sum(x.squeeze() * w)


def f_m_swapaxes(x, w):
    return np.sum(x.swapaxes(0, 2) * w)


def f_m_clip(x, w):
    return np.sum(x.clip(-0.5, 0.7) * w)


def f_m_repeat(x, w):
    return np.sum(x.repeat(2, axis=1) * w)


def f_m_take(x, w):
    return np.sum(x.take(IDX, axis=0) * w)


def f_m_diagonal(x, w):
    return np.sum(x.diagonal() * w)


def f_m_trace(x, w):
    return np.sum(x.trace() * w)


def f_m_copy(x, w):
    return np.sum(x.copy() * w)


def f_m_astype(x, w):
    return np.sum(x.astype(np.float64) * w)


def f_m_astype32(x, w):
    return np.sum(x.astype(np.float32) * w)


def f_array_dtype(x, w):
    return np.sum(np.array(x, dtype=float) * w) + np.sum(np.asarray(x, dtype=np.float64) ** 2)


def f_asarray_dtype32(x, w):
    return np.sum(np.asarray(x, dtype=np.float32) * w)


def f_m_item(x, w):
    return x.item() * w


def f_m_real(x, w):
    return np.sum(x.real * w)


M323 = unary(shapes=st.just((3, 2, 3)), dom=DISTINCT)
METHODS = [
    Row(f_m_sum, M323),
    Row(f_m_sum_keep, M323),
    Row(f_m_sum_all, M323),
    Row(f_m_mean, M323),
    Row(f_m_prod, unary(Dom(0.5, 1.5, "signed"), shapes=min_dims(1), scalars=False)),
    Row(f_m_max, M323),
    Row(f_m_min, M323),
    Row(f_m_var, M323),
    Row(f_m_std, M323),
    Row(f_m_cumsum, M323),
    Row(f_m_T, unary(shapes=min_dims(1), scalars=False)),
    Row(f_m_transpose, M323),
    Row(f_m_transpose_tuple, M323),
    Row(f_m_reshape, M323),
    Row(f_m_reshape_tuple, M323),
    Row(f_m_ravel, M323),
    Row(f_m_flatten, M323),
    Row(f_m_squeeze, unary(shapes=st.just((1, 3, 1)))),
    Row(f_m_swapaxes, M323),
    Row(f_m_clip, unary(GRID0, shapes=min_dims(1))),
    Row(f_m_repeat, M323),
    Row(f_m_take, M323),
    Row(f_m_diagonal, M323),
    Row(f_m_trace, M323),
    Row(f_m_copy, M323),
    Row(f_m_astype, M323),
    Row(f_m_astype32, M323, h=1e-3),
    Row(f_array_dtype, M323),
    Row(f_asarray_dtype32, M323, h=1e-3),
    Row(f_m_item, unary(shapes=st.sampled_from([(), (1,), (1, 1)]), scalars=False)),
    Row(f_m_real, M323),
]


# ==== non-differentiable functions: no gradient flows through them ===================================
def f_nd_sign(x, w):
    return np.sum(x * np.sign(x) * w)


def f_nd_floor(x, w):
    return np.sum(x * np.floor(x) * w)


def f_nd_ceil(x, w):
    return np.sum(x * np.ceil(x) * w)


def f_nd_round(x, w):
    return np.sum(x * np.round(x) * w)


def f_nd_trunc(x, w):
    return np.sum(x * np.trunc(x) * w)


def f_nd_rint(x, w):
    return np.sum(x * np.rint(x) * w)


def f_nd_floor_divide(x, w):
    return np.sum((x // 2.0 + x) * w)


def f_nd_compare(x, w):
    return np.sum((x * (x > 0) + x * (x <= 1.0) + (x == 2.0)) * w)


def f_nd_argmax(x, w):
    return x[np.argmax(x)] * x[np.argmin(x)] * w


def f_nd_argsort(x, w):
    return np.sum(x[np.argsort(x)] * w)


def f_nd_like(x, w):
    return np.sum((x + np.zeros_like(x) + np.ones_like(x) * 2.0 + np.full_like(x, 3.0)) * w)


def f_nd_shape(x, w):
    return np.sum(x * len(x) * x.shape[0] * np.size(x) * np.ndim(x) * w)


def f_nd_masks(x, w):
    return np.sum(x * np.isfinite(x) * np.logical_and(x > -5, x < 5) * w)


def f_nd_arange(x, w):
    return np.sum(x * np.arange(x.shape[-1]) * w)


def f_nd_heaviside(x, w):
    return np.sum(x * np.heaviside(x, 0.5) * w)


def f_nd_any(x, w):
    return np.sum(x * np.any(x > 0) * w)


def f_nd_astype_int(x, w):
    return np.sum((x + x.astype(np.int64)) * w)


NONDIFF = [
    Row(f_nd_sign, unary(NONZERO)),
    Row(f_nd_floor, unary(NONINT)),
    Row(f_nd_ceil, unary(NONINT)),
    Row(f_nd_round, unary(NONINT)),
    Row(f_nd_trunc, unary(NONINT)),
    Row(f_nd_rint, unary(NONINT)),
    Row(f_nd_floor_divide, unary(Dom(-3, 3, "quarter"))),
    Row(f_nd_compare, unary(NONINT)),
    Row(f_nd_argmax, unary(DISTINCT, shapes=min_dims(1, 1))),
    Row(f_nd_argsort, unary(DISTINCT, shapes=min_dims(1, 1))),
    Row(f_nd_like, unary()),
    Row(f_nd_shape, unary(shapes=min_dims(1))),
    Row(f_nd_masks, unary()),
    Row(f_nd_arange, unary(shapes=min_dims(1))),
    Row(f_nd_heaviside, unary(NONZERO)),
    Row(f_nd_any, unary(shapes=min_dims(1))),
    Row(f_nd_astype_int, unary(NONINT, shapes=min_dims(1))),
]


# ---- made from values: fill values, ends, steps, weights, breakpoints ------------------------------
def f_full(v, w):
    return np.sum(np.full((2, 3), v) * w)


def f_full_like(v, w):
    return np.sum(np.full_like(np.ones((3, 2)), v) * w)


def f_linspace(a, b, w):
    return np.sum(np.linspace(a, b, 5) * w)


def f_linspace_open(a, b, w):
    return np.sum(np.linspace(a, b, 4, endpoint=False, axis=-1) * w)


def f_arange(a, w):
    return np.sum(np.arange(a, a + 3.9, 0.5) * w)


def f_arange_step(s, w):
    return np.sum(np.arange(0.25, 2.0, s) * w)


def f_meshgrid(x, y, w):
    return np.sum(np.meshgrid(x, y)[0] * np.meshgrid(x, y)[1] * w)


def f_meshgrid_ij(x, y, w):
    a, b = np.meshgrid(x, y, indexing="ij")
    return np.sum((a + 2.0 * b * b) * w)


def f_bincount(v, w):
    return np.sum(np.bincount(BINS, weights=v, minlength=5) * w)


def f_unique(x, w):
    return np.sum(np.unique(x) * w)


def f_pad_value(x, c, w):
    return np.sum(np.pad(x, (1, 2), constant_values=c) * w)


def f_interp_xp(x, xp, w):
    return np.sum(np.interp(x, xp, FP) * w)


def f_interp_ends(x, lo, hi, w):
    return np.sum(np.interp(x, XP, FP, left=lo, right=hi) * w)


def f_trapezoid_dx_value(y, dx, w):
    return np.sum(np.trapezoid(y, dx=dx, axis=0) * w)


def f_heaviside_at_zero(h, w):
    return np.sum(np.heaviside(STEPS, h) * w)


def f_norm_order(x, p, w):
    return np.linalg.norm(x, ord=p) * w


def f_norm_order_axis(x, p, w):
    return np.sum(np.linalg.vector_norm(x, ord=p, axis=-1) * w)


def f_var_by_ddof(x, ddof, w):
    return np.sum(np.var(x, axis=0, ddof=ddof) * w)


def f_std_by_ddof(x, ddof, w):
    return np.sum(np.std(x, ddof=ddof, keepdims=True) * w)


def f_r_(x, y, w):
    return np.sum(np.r_[x, 2.0, y] * w)


def f_c_(x, y, w):
    return np.sum(np.c_[x, y, x * y] * w)


BINS = np.array([0, 2, 2, 4, 1, 0])
FP = np.array([0.5, -1.0, 2.0, 1.0])
STEPS = np.array([-1.0, 0.0, 2.0, 0.0])


def vector_xp(draw, dtype):
    """Points off the knots of increasing breakpoints (each within 0.1 of XP's)."""
    x = values(draw, draw(SHAPES), dtype, Dom(-1.6, 1.6, "grid1"))
    return x, (XP + values(draw, (4,), np.float64, Dom(-0.05, 0.05), scalars=False)).astype(dtype)


def ends_args(draw, dtype):
    x = values(draw, draw(SHAPES), dtype, Dom(-1.6, 1.6, "grid1"))
    return x, values(draw, (), dtype), values(draw, (), dtype)


MADE = [
    Row(f_full, unary(shapes=st.sampled_from([(), (3,), (2, 1)]))),
    Row(f_full_like, unary(shapes=st.sampled_from([(), (2,)]))),
    Row(f_linspace, binary(), (0, 1)),
    Row(f_linspace_open, binary(), (0, 1)),
    Row(f_arange, floats(Dom(-1.0, 1.0)), dtypes=(np.float64,)),
    Row(f_arange_step, floats(Dom(0.3, 0.45)), dtypes=(np.float64,)),
    Row(f_meshgrid, shaped((3,), (2,)), (0, 1)),
    Row(f_meshgrid_ij, shaped((2,), (4,)), (0, 1)),
    Row(f_bincount, shaped((6,))),
    Row(f_unique, unary(DISTINCT, shapes=min_dims(1))),
    Row(
        f_pad_value, shaped((2, 3), ()), (0, 1), dtypes=(np.float64,)
    ),  # c is rounded into a float32 array
    Row(f_interp_xp, vector_xp, 1),
    Row(f_interp_ends, ends_args, (1, 2)),
    Row(
        f_trapezoid_dx_value,
        with_args(shaped((3, 2)), lambda s: st.floats(0.1, 2.0)),
        (0, 1),
        dtypes=(np.float64,),
    ),
    Row(f_heaviside_at_zero, unary(shapes=st.sampled_from([(), (4,), (1,)]))),
    Row(
        f_norm_order,
        with_args(
            unary(NONZERO, shapes=min_dims(1, 1), scalars=False), lambda s: st.floats(0.6, 4.0)
        ),
        (0, 1),
        dtypes=(np.float64,),
    ),
    Row(
        f_norm_order_axis,
        with_args(
            unary(NONZERO, shapes=min_dims(2, 2), scalars=False), lambda s: st.floats(0.6, 4.0)
        ),
        (0, 1),
        dtypes=(np.float64,),
    ),
    Row(
        f_var_by_ddof,
        with_args(shaped((4, 2)), lambda s: st.floats(-0.5, 2.5)),
        (0, 1),
        dtypes=(np.float64,),
    ),
    Row(
        f_std_by_ddof,
        with_args(shaped((3, 2)), lambda s: st.floats(-0.5, 4.5)),
        (0, 1),
        dtypes=(np.float64,),
    ),
    Row(f_r_, one_of(shaped((3,), (2,)), shaped((), (4,))), (0, 1)),
    Row(f_c_, one_of(shaped((3,), (3,)), shaped((2, 2), (2, 2))), (0, 1)),
]


# ==== scipy.special ================================================================================
def f_expit(x, w):
    return np.sum(sc.expit(x) * w)


def f_logit(x, w):
    return np.sum(sc.logit(x) * w)


def f_erf(x, w):
    return np.sum(sc.erf(x) * w)


def f_erfc(x, w):
    return np.sum(sc.erfc(x) * w)


def f_gammaln(x, w):
    return np.sum(sc.gammaln(x) * w)


def f_digamma(x, w):
    return np.sum(sc.digamma(x) * w)


def f_xlogy(x, y, w):
    return np.sum(sc.xlogy(x, y) * w)


def f_xlog1py(x, y, w):
    return np.sum(sc.xlog1py(x, y) * w)


def f_ndtr(x, w):
    return np.sum(sc.ndtr(x) * w) + np.sum(sc.log_ndtr(x * 3.0) * w)


def f_ndtri(x, w):
    return np.sum(sc.ndtri(x) * w)


def f_gamma(x, w):
    return np.sum(sc.gamma(x) * w)


def f_beta(x, y, w):
    return np.sum(sc.beta(x, y) * w) + np.sum(sc.betaln(y, x) * w)


def f_entr(x, w):
    return np.sum(sc.entr(x) * w)


def f_rel_entr(x, y, w):
    return np.sum(sc.rel_entr(x, y) * w) + np.sum(sc.kl_div(y, x) * w)


def f_huber(x, y, w):
    return np.sum(sc.huber(x, y) * w) + np.sum(sc.pseudo_huber(x, y) * w)


def f_logsumexp(a, axis, keepdims, w):
    return np.sum(sc.logsumexp(a, axis=axis, keepdims=keepdims) * w)


def f_logsumexp_b(a, b, w):
    return np.sum(sc.logsumexp(a, axis=-1, b=b) * w)


def f_softmax(x, axis, w):
    return np.sum(sc.softmax(x, axis=axis) * w)


def f_log_softmax(x, axis, w):
    return np.sum(sc.log_softmax(x, axis=axis) * w)


SPECIAL = (
    [
        Row(f_expit, unary()),
        Row(f_logit, unary(Dom(0.05, 0.95))),
        Row(f_erf, unary()),
        Row(f_erfc, unary()),
        Row(f_gammaln, unary(POS)),
        Row(f_digamma, unary(POS)),
        Row(f_xlogy, binary(ANY, POS), (0, 1)),
        Row(f_xlog1py, binary(ANY, Dom(-0.5, 2.0)), (0, 1)),
        Row(f_ndtr, unary()),
        Row(f_ndtri, unary(Dom(0.05, 0.95))),
        Row(f_gamma, unary(POS)),
        Row(f_beta, binary(POS, POS), (0, 1)),
        Row(f_entr, unary(POS)),
        Row(f_rel_entr, binary(POS, POS), (0, 1)),
        Row(f_huber, binary(POS, ANY), (0, 1)),
        Row(
            f_logsumexp, with_args(unary(shapes=min_dims(1), scalars=False), axis_or_none, keepdims)
        ),
        Row(
            f_logsumexp_b,
            one_of(
                shaped((3,), (3,), dom=POS),
                shaped((2, 3), (3,), dom=POS),
                shaped((2, 3), (2, 3), dom=POS),
            ),
            (0, 1),
        ),
        Row(f_softmax, with_args(unary(shapes=min_dims(1), scalars=False), axis_or_none)),
        Row(f_log_softmax, with_args(unary(shapes=min_dims(1), scalars=False), axis_or_none)),
    ]
    if sc is not None
    else []
)


# ==== scipy.stats, scipy.linalg, scipy.signal ======================================================
def several(*doms):
    """Arrays of mutually broadcastable shapes, one per domain (any may be 0-d or a scalar)."""

    def gen(draw, dtype):
        shapes = draw(
            hnp.mutually_broadcastable_shapes(num_shapes=len(doms), max_dims=2, max_side=3)
        ).input_shapes
        return tuple(values(draw, s, dtype, d) for s, d in zip(shapes, doms))

    return gen


def f_norm_logpdf(x, loc, scale, w):
    return np.sum(sst.norm.logpdf(x, loc, scale) * w)


def f_norm_pdf(x, loc, scale, w):
    return np.sum(sst.norm.pdf(x, loc=loc, scale=scale) * w)


def f_norm_cdf(x, loc, scale, w):
    return np.sum(sst.norm.cdf(x, loc, scale) * w)


def f_norm_logcdf(x, loc, scale, w):
    return np.sum(sst.norm.logcdf(x, loc, scale) * w)


def f_norm_sf(x, loc, scale, w):
    return np.sum(sst.norm.sf(x, loc, scale) * w)


def f_norm_logsf(x, loc, scale, w):
    return np.sum(sst.norm.logsf(x, loc, scale) * w)


def f_t_logpdf(x, df, loc, scale, w):
    return np.sum(sst.t.logpdf(x, df, loc, scale) * w)


def f_gamma_logpdf(x, a, loc, scale, w):
    return np.sum(sst.gamma.logpdf(x, a, loc, scale) * w)


def f_beta_logpdf(x, a, b, loc, scale, w):
    return np.sum(sst.beta.logpdf(x, a, b, loc, scale) * w)


def f_expon_logpdf(x, loc, scale, w):
    return np.sum(sst.expon.logpdf(x, loc, scale) * w)


def f_laplace_logpdf(x, loc, scale, w):
    return np.sum(sst.laplace.logpdf(x, loc, scale) * w)


COUNTS3 = np.array([0, 2, 5])


def f_poisson_logpmf(mu, w):
    return np.sum(sst.poisson.logpmf(COUNTS3, mu) * w)


def f_mvn_logpdf(x, mean, cov, w):
    return np.sum(sst.multivariate_normal.logpdf(x, mean, cov) * w)


def _gaussian(draw, dtype):
    """Points (one or several) of dimension ``d``, a mean and a covariance: a matrix (2 I plus
    noise: scipy reads its lower triangle), a vector (a diagonal) or a scalar."""
    d = draw(st.integers(1, 3))
    points = draw(st.sampled_from([(d,), (2, d), (2, 2, d)]))
    cov = draw(st.sampled_from(["matrix", "vector", "scalar"]))
    x = values(draw, points, dtype, scalars=False)
    mean = values(draw, (d,), dtype, scalars=False)
    if cov == "matrix":
        c = matrix(draw, (d, d), dtype)
    else:
        c = values(draw, (d,) if cov == "vector" else (), dtype, Dom(1.0, 2.0))
    return x, mean, c


def f_solve_triangular(a, b, w):
    return np.sum(sla.solve_triangular(a, b, lower=True) * w)


def f_solve_triangular_trans(a, b, w):
    return np.sum(sla.solve_triangular(a, b, trans="T") * w)


def f_solve_triangular_unit(a, b, w):
    return np.sum(sla.solve_triangular(a, b, trans=1, lower=True, unit_diagonal=True) * w)


def f_scipy_cholesky(a, w):
    return np.sum(sla.cholesky(a) * w)


def f_scipy_cholesky_lower(a, w):
    return np.sum(sla.cholesky(a, lower=True) * w)


def f_cho_solve(a, b, w):
    return np.sum(sla.cho_solve(sla.cho_factor(a), b) * w)


def f_cho_solve_lower(a, b, w):
    c, lower = sla.cho_factor(a, lower=True)
    return np.sum(sla.cho_solve((c, lower), b) * w)


def f_cho_factor(a, w):
    return np.sum(sla.cho_factor(a)[0] * w)


def f_expm(a, w):
    return np.sum(sla.expm(a) * w)


def f_lfilter(b, a, x, w):
    return np.sum(ssig.lfilter(b, a, x) * w)


def f_lfilter_axis(b, a, x, w):
    return np.sum(ssig.lfilter(b, a, x, axis=0) * w)


def _filter(axis):
    """A stable filter (``a[0]`` in [1, 1.5], the rest small) and signals along ``axis``."""

    def gen(draw, dtype):
        nb, na = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        b = values(draw, (nb,), dtype, scalars=False)
        a = values(draw, (na,), dtype, Dom(-0.3, 0.3), scalars=False)
        a[0] = values(draw, (), dtype, Dom(1.0, 1.5), scalars=False)
        n = draw(st.integers(1, 5))
        shape = draw(st.sampled_from([(n,), (2, n)] if axis == -1 else [(n,), (n, 2)]))
        return b, a, values(draw, shape, dtype, scalars=False)

    return gen


def _scipy_batches():
    """Does this scipy's ``linalg`` take a stack of matrices (1.16 and later)?"""
    try:
        sla.cholesky(np.eye(2)[None])
    except ValueError:
        return False
    return True


_BATCHES = sla is not None and _scipy_batches()

SCIPY = (
    [
        Row(f_norm_logpdf, several(ANY, ANY, POS), (0, 1, 2)),
        Row(f_norm_pdf, several(ANY, ANY, POS), (0, 1, 2)),
        Row(f_norm_cdf, several(ANY, ANY, POS), (0, 1, 2)),
        Row(f_norm_logcdf, several(ANY, ANY, POS), (0, 1, 2)),
        Row(f_norm_sf, several(ANY, ANY, POS), (0, 1, 2)),
        Row(f_norm_logsf, several(ANY, ANY, POS), (0, 1, 2)),
        Row(f_t_logpdf, several(ANY, Dom(1.0, 6.0), ANY, POS), (0, 1, 2, 3)),
        Row(
            f_gamma_logpdf, several(Dom(1.0, 3.0), Dom(1.5, 4.0), UNIT, Dom(0.5, 2.0)), (0, 1, 2, 3)
        ),
        Row(
            f_beta_logpdf,
            several(Dom(0.3, 0.7), Dom(1.5, 4.0), Dom(1.5, 4.0), Dom(-0.1, 0.1), Dom(1.0, 1.2)),
            (0, 1, 2, 3, 4),
        ),
        Row(f_expon_logpdf, several(Dom(1.0, 3.0), UNIT, POS), (0, 1, 2)),
        Row(f_laplace_logpdf, several(GRID0, GRID1, POS), (0, 1, 2)),
        Row(f_poisson_logpmf, unary(POS, shapes=st.sampled_from([(), (3,), (1,), (2, 3)]))),
        Row(f_mvn_logpdf, _gaussian, (0, 1, 2)),
        Row(f_solve_triangular, square(batch=_BATCHES, b=["k", "km"]), (0, 1)),
        Row(f_solve_triangular_trans, square(batch=_BATCHES, b=["k", "km"]), (0, 1)),
        Row(f_solve_triangular_unit, square(b=["k", "km unbatched"]), (0, 1)),
        Row(f_scipy_cholesky, square(batch=_BATCHES)),
        Row(f_scipy_cholesky_lower, square()),
        Row(f_cho_solve, square(b=["k", "km unbatched"]), (0, 1)),
        Row(f_cho_solve_lower, square(b=["k", "km unbatched"]), (0, 1)),
        Row(f_cho_factor, square()),
        Row(
            f_expm,
            unary(Dom(-0.6, 0.6), shapes=st.sampled_from([(1, 1), (2, 2), (3, 3), (2, 2, 2)])),
        ),
        Row(f_lfilter, _filter(-1), (0, 1, 2)),
        Row(f_lfilter_axis, _filter(0), (0, 1, 2)),
    ]
    if sst is not None
    else []
)


# ==== the tests ====================================================================================
# ---- masked reductions, ufunc methods, np.fft, np.block, ufunc.at ----------------------------------
MASK3 = np.array([True, False, True])
IDX4 = np.array([2, 0, 2, 1])
C3 = np.array([1.0 + 0.5j, -0.5 + 1.0j, 0.75 - 0.25j])
C23 = np.array([[1.0 + 0.5j, -0.5 + 1.0j, 0.75 - 0.25j], [0.5 - 1.0j, 1.0 + 0.25j, -0.75 + 0.5j]])


def f_sum_where(a, i, w):
    return np.sum(np.sum(a, axis=-1, where=MASK3, initial=i) * w)


def f_mean_where(a, w):
    return np.sum(np.mean(a, axis=-1, where=MASK3) * w)


def f_max_where(a, i, w):
    return np.sum(np.max(a, axis=-1, where=MASK3, initial=i) * w)


def f_max_initial_wins(a, i, w):
    return np.sum(np.max(a, axis=0, initial=i) * w)


def f_add_reduce(a, w):
    return np.sum(np.add.reduce(a) * w)


def f_multiply_reduce(a, w):
    return np.sum(np.multiply.reduce(a, axis=-1) * w)


def f_maximum_reduce(a, w):
    return np.sum(np.maximum.reduce(a) * w)


def f_minimum_reduce(a, w):
    return np.sum(np.minimum.reduce(a, axis=-1, keepdims=True) * w)


def f_fmax_reduce(a, w):
    return np.sum(np.fmax.reduce(a, axis=None) * w)


def f_fmin_reduce(a, w):
    return np.sum(np.fmin.reduce(a) * w)


def f_logaddexp_reduce(a, w):
    return np.sum(np.logaddexp.reduce(a, axis=-1) * w)


def f_fft(a, w):
    return np.sum(np.abs(np.fft.fft(a)) ** 2 * w)


def f_ifft(a, w):
    return np.sum(np.real(np.fft.ifft(a, n=4, norm="ortho") * C3[0]) * w)


def f_fft2(a, w):
    return np.sum(np.imag(np.fft.fft2(a) * C23) * w)


def f_ifft2(a, w):
    return np.sum(np.abs(np.fft.ifft2(a, s=(3, 3))) * w)


def f_fftn(a, w):
    return np.sum(np.real(np.fft.fftn(a, axes=(0,), norm="forward") * C3[1]) * w)


def f_ifftn(a, w):
    return np.sum(np.real(np.fft.ifftn(np.fft.fftn(a) * C23)) * w)


def f_rfft(a, w):
    return np.sum(np.abs(np.fft.rfft(a, axis=0)) ** 2 * w)


def f_irfft(a, w):
    return np.sum(np.fft.irfft(np.fft.rfft(a) * C3[:2], n=4) * w)


def f_rfft2(a, w):
    return np.sum(np.imag(np.fft.rfft2(a) * C3[:2]) * w)


def f_irfft2(a, w):
    return np.sum(np.fft.irfft2(np.fft.rfft2(a) * C23[:, :2], s=(2, 3)) * w)


def f_rfftn(a, w):
    return np.sum(np.real(np.fft.rfftn(a, s=(3,), axes=(1,)) * C3[:2]) * w)


def f_irfftn(a, w):
    return np.sum(np.fft.irfftn(np.fft.rfftn(a) * C23[:, :2], norm="ortho") * w)


def f_fftshift(x, w):
    return np.sum(np.fft.fftshift(x, axes=-1) * w)


def f_ifftshift(x, w):
    return np.sum(np.fft.ifftshift(x) * w)


def f_imag(x, w):
    return np.sum(np.imag(np.fft.fft(x) * C3[2]) * w)


def f_angle(x, w):
    return np.sum(np.angle(np.fft.fft(x) * C3[0], deg=True) * w)


def f_block(x, y, w):
    return np.sum(np.block([[x, y], [2.0 * y, x]]) * w)


def f_add_at(b, w):
    buf = np.zeros(3)
    np.add.at(buf, IDX4, b)
    return np.sum(buf * w)


def f_subtract_at(a, b, w):
    buf = a * 1.0
    np.subtract.at(buf, IDX4, b)
    return np.sum(buf * w)


def f_multiply_at(a, b, w):
    buf = a * 1.0
    np.multiply.at(buf, IDX4, b)
    return np.sum(buf * w)


def f_maximum_at(a, b, w):
    buf = a * 1.0
    np.maximum.at(buf, IDX4, b)
    return np.sum(buf * w)


def f_minimum_at(a, b, w):
    buf = a * 1.0
    np.minimum.at(buf, IDX4, b)
    return np.sum(buf * w)


def _with_initial(dom, idom):
    def gen(draw, dtype):
        return (
            values(draw, (2, 3), dtype, dom, scalars=False),
            float(values(draw, (), np.float64, idom, scalars=False)),
        )

    return gen


# a float32 buffer or initial= would round the finite differences of a float64 operand
F64 = (np.float64,)
LIBRARY = [
    Row(f_sum_where, _with_initial(ANY, ANY), (0, 1), F64),
    Row(f_mean_where, shaped((2, 3))),
    Row(f_max_where, _with_initial(DISTINCT, Dom(-3.0, -2.5)), (0, 1), F64),
    Row(f_max_initial_wins, _with_initial(DISTINCT, Dom(2.5, 3.0)), (0, 1), F64),
    Row(f_add_reduce, unary(shapes=min_dims(1))),
    Row(f_multiply_reduce, unary(Dom(0.5, 1.5, "signed"), shapes=min_dims(1))),
    Row(f_maximum_reduce, unary(DISTINCT, shapes=min_dims(1))),
    Row(f_minimum_reduce, unary(DISTINCT, shapes=min_dims(1))),
    Row(f_fmax_reduce, unary(DISTINCT, shapes=min_dims(1))),
    Row(f_fmin_reduce, unary(DISTINCT, shapes=min_dims(1))),
    Row(f_logaddexp_reduce, unary(shapes=min_dims(1))),
    Row(f_fft, unary(shapes=min_dims(1))),
    Row(f_ifft, shaped((3,))),
    Row(f_fft2, shaped((2, 3))),
    Row(f_ifft2, shaped((2, 4))),
    Row(f_fftn, shaped((3, 2))),
    Row(f_ifftn, shaped((2, 3))),
    Row(f_rfft, unary(shapes=min_dims(1))),
    Row(f_irfft, shaped((3,))),
    Row(f_rfft2, shaped((2, 3))),
    Row(f_irfft2, shaped((2, 3))),
    Row(f_rfftn, shaped((2, 4))),
    Row(f_irfftn, shaped((2, 3))),
    Row(f_fftshift, unary(shapes=min_dims(1))),
    Row(f_ifftshift, unary(shapes=min_dims(1))),
    Row(f_imag, shaped((3,))),
    Row(f_angle, shaped((4,))),
    Row(f_block, shaped((2, 2), (2, 2)), (0, 1)),
    Row(f_add_at, shaped((4,))),
    Row(f_subtract_at, shaped((3,), (4,)), (0, 1), F64),
    Row(f_multiply_at, shaped((3,), (4,), dom=Dom(0.5, 1.5, "signed")), (0, 1), F64),
    Row(f_maximum_at, shaped((3,), (4,), dom=DISTINCT), (0, 1), F64),
    Row(f_minimum_at, shaped((3,), (4,), dom=DISTINCT), (0, 1), F64),
]


ROWS = (
    ELEMENTWISE_UNARY
    + BINARY
    + MATH
    + REDUCTIONS
    + LINALG
    + SHAPE
    + SELECTION
    + INDEXING
    + METHODS
    + NONDIFF
    + MADE
    + SPECIAL
    + SCIPY
    + LIBRARY
)


@pytest.mark.parametrize("row", [pytest.param(r, id=r.id, marks=r.marks) for r in ROWS])
@given(data=st.data())
def test_rule(row, data):
    """The rule's gradient has the argument's shape and dtype and matches finite differences."""
    run_row(row, data)


def test_row_names_are_unique():
    names = [r.id for r in ROWS]
    assert len(names) == len(set(names))


def test_sign_passes_no_gradient():
    x = np.array([-1.5, 0.5, 2.0, -0.25])
    g = sourcegrad.grad(f_nd_sign)(x, 1.0)
    assert np.array_equal(g, np.sign(x))


def f_nd_only(x):
    return np.sum(
        np.floor(x) + np.sign(x) + (x > 0) + np.argmax(x) + np.zeros_like(x) + np.round(x)
    )


def test_gradient_through_nondifferentiable_functions_is_zero():
    for x in (np.array([0.3, -1.7, 2.5]), np.array([[1.5]], dtype=np.float32)):
        g = sourcegrad.grad(f_nd_only)(x)
        assert g.shape == x.shape and g.dtype == x.dtype and not np.any(g)


def f_conv_abs(x):
    return np.sum(np.abs(x))


def f_conv_sqrt(x):
    return np.sum(np.sqrt(x))


def f_conv_maximum(x, y):
    return np.sum(np.maximum(x, y))


def f_conv_max(x):
    return np.max(x)


def f_conv_builtin_max(x, y):
    return max(x, y)


def test_edge_conventions():
    """abs'(0) = 0, sqrt'(0) = inf, and ties of max / maximum share the gradient evenly."""
    z = np.array([0.0, 1.0])
    assert np.array_equal(sourcegrad.grad(f_conv_abs)(z), [0.0, 1.0])
    assert np.array_equal(sourcegrad.grad(f_conv_sqrt)(z), [np.inf, 0.5])
    gx, gy = sourcegrad.grad(f_conv_maximum, wrt=(0, 1))(z, np.array([0.0, 2.0]))
    assert np.array_equal(gx, [0.5, 0.0]) and np.array_equal(gy, [0.5, 1.0])
    assert np.array_equal(sourcegrad.grad(f_conv_max)(np.array([1.0, 3.0, 3.0])), [0.0, 0.5, 0.5])
    assert sourcegrad.grad(f_conv_builtin_max, wrt=(0, 1))(2.0, 2.0) == (0.5, 0.5)


def f_conv_median(x):
    return np.median(x)


def f_conv_quantile(x):
    return np.quantile(x, 1.0)


def f_conv_eigvals(a):
    return np.sum(np.linalg.eigh(a)[0])


def test_order_statistic_and_eigenvalue_conventions():
    """Equal entries share a median's weight; q = 1 reads the largest entries; repeated
    eigenvalues give a function of the eigenvalues alone its exact (finite) gradient."""
    assert np.array_equal(
        sourcegrad.grad(f_conv_median)(np.array([1.0, 2.0, 2.0, 5.0])), [0.0, 0.5, 0.5, 0.0]
    )
    assert np.allclose(
        sourcegrad.grad(f_conv_median)(np.array([3.0, 1.0, 3.0, 3.0])), [1 / 3, 0.0, 1 / 3, 1 / 3]
    )
    assert np.array_equal(
        sourcegrad.grad(f_conv_quantile)(np.array([4.0, 1.0, 4.0])), [0.5, 0.0, 0.5]
    )
    assert np.array_equal(sourcegrad.grad(f_conv_eigvals)(np.eye(3)), np.eye(3))


# ---- the rule library itself --------------------------------------------------------------------------
def _builtin_rules():
    return {k: t for k, t in R.RULES.items() if t.origin.startswith("rule for")}


def _is_numpy_function(fn):
    return isinstance(fn, np.ufunc) or (
        callable(fn)
        and not isinstance(fn, type)
        and (getattr(fn, "__module__", None) or "").startswith("numpy")
    )


def test_at_least_100_numpy_functions_have_rules():
    numpy_fns = {k for k in _builtin_rules() if _is_numpy_function(k)}
    assert len(numpy_fns) >= 100, sorted(getattr(k, "__name__", str(k)) for k in numpy_fns)


def test_templates_use_only_numpy_and_runtime_names():
    allowed = {"np"} | set(runtime.__all__)
    for template in _builtin_rules().values():
        extra = set(template.free_names) - allowed
        assert not extra, f"{template.origin} uses {sorted(extra)}"
        for name in template.free_names & allowed:
            assert template.namespace[name] is (np if name == "np" else getattr(runtime, name))


def test_declared_shape_kinds_are_rules_of_shape_inference():
    """``rule(..., shape="reduction")`` names a function of ``transforms/shapes.py``; a primitive
    declared fresh has a rule or a declared reason it carries no gradient (one place for both)."""
    from sourcegrad.transforms import shapes
    from sourcegrad.transforms.rules import tangents  # noqa: F401  (forward mode's helpers)

    assert set(R.SHAPES.values()) <= set(shapes._KINDS)
    for fn in set(R.SHAPES) | R.FRESH:
        assert fn in R.RULES or fn in R.NONDIFF, fn


def scaled(x, factor=None):
    return x * (2.0 if factor is None else factor)


def f_scaled(x):
    return np.sum(scaled(x))


def test_template_may_use_keyword_constants():
    @sourcegrad.adjoint(scaled)
    def _(y, x, factor=None):
        d[x] += d[y] * (2.0 if factor is None else factor)  # noqa: F821  (template notation)

    assert np.array_equal(sourcegrad.grad(f_scaled)(np.ones(2)), [2.0, 2.0])


_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
    ast.MatMult: operator.matmul,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _primitives_used(fn):
    """The rule keys a case function's source calls: names, ``np.x.y`` chains, operators, methods,
    the variant a call's keywords choose (``np.sum(x, where=m)``) and ``ufunc.at``'s primitive."""
    out = set()
    for node in ast.walk(ast.parse(inspect.getsource(fn))):
        if isinstance(node, ast.Call):
            callee = _callee(node.func, fn)
            out.add(R.variant(callee, tuple((k.arg, None) for k in node.keywords if k.arg)))
            if getattr(callee, "__name__", None) == "at" and isinstance(
                getattr(callee, "__self__", None), np.ufunc
            ):
                out.add(R.UFUNC_AT.get(callee.__self__))
            if callee is np.fill_diagonal:  # on a local buffer: R.IN_PLACE's primitive
                out.add(R.IN_PLACE[callee])
            if getattr(callee, "__name__", None) == "outer" and isinstance(
                getattr(callee, "__self__", None), np.ufunc
            ):  # ufunc.outer(a, b) is ufunc(outer_operand(a, b), b)
                out.update((callee.__self__, runtime.outer_operand))
        if isinstance(node, (ast.BinOp, ast.UnaryOp)) and type(node.op) in _OPERATORS:
            out.add(_OPERATORS[type(node.op)])
        elif isinstance(node, ast.Subscript):
            out.add(operator.getitem)
        elif isinstance(node, ast.Name) and node.id in vars(builtins):
            out.add(getattr(builtins, node.id))
        elif isinstance(node, ast.Attribute):
            out.add(R.METHODS.get(node.attr))
            out.add(R.ATTRIBUTES.get(node.attr))
            chain = [node.attr]
            base = node.value
            while isinstance(base, ast.Attribute):
                chain.insert(0, base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in fn.__globals__:
                value = fn.__globals__[base.id]
                for attr in chain:
                    value = getattr(value, attr, None)
                out.add(value)
    return out


def _callee(func, fn):
    """What a call's ``func`` (``np.add.at``, ``x.max``) names, or None."""
    chain = []
    while isinstance(func, ast.Attribute):
        chain.insert(0, func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    if func.id not in fn.__globals__:
        return R.METHODS.get(chain[0]) if len(chain) == 1 else None  # a method of a local array
    value = fn.__globals__[func.id]
    for attr in chain:
        value = getattr(value, attr, None)
    return value


def test_every_rule_has_a_row():
    used = set().union(*(_primitives_used(r.f) for r in ROWS))
    # the sequence primitives stand for ``+``, ``*``, ``max`` and ``np.asarray`` of Python lists,
    # which tests/test_sequences.py checks the same way (and fuzzes)
    sequences = {list, tuple} | {
        k
        for k in _builtin_rules()
        if getattr(k, "__module__", "") == "sourcegrad.runtime.sequences"
    }
    sequences.add(runtime.index_join)  # np.r_[...] and np.c_[...]: rows r_ and c_
    missing = [
        t.origin for k, t in _builtin_rules().items() if k not in used and k not in sequences
    ]
    assert not missing, missing
