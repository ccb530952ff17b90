"""Edge values: zeros, length-1 axes, singular points, and the adjoints that used to break there.

Two kinds of test, each run through the code specialized to the arguments' shapes and the
general code:

- properties (hypothesis) against ``tests/oracle.py``'s central differences, at edge points
  where those apply: zeros at random places in ``cumprod``/``prod`` inputs, ``x ** k`` at
  ``x = 0``, ``var``/``std`` over length-1 axes (a batch of one) and at exactly zero variance
  (``std`` is even in each entry there, so central differences see the subgradient 0), norms
  of vectors with zero entries, ``det`` of singular matrices, ``einsum`` with ``...`` anywhere
  and repeated labels, ``kron`` of any ranks;
- exact values where central differences cannot apply (an infinite input, an infinite slope,
  a jump): one row per documented convention.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import sourcegrad

from .devicearray import is_device, to_device, to_host, track_host_syncs
from .oracle import assert_close, fd_grad
from .test_backend import Case, check_case

DTYPES = st.sampled_from([np.float64, np.float32])
SEEDS = st.integers(0, 2**32 - 1)
_GRADS = {}


def gradients(f, wrt, args):
    """``f``'s gradient with respect to the arguments ``wrt`` (a tuple), from the specialized and
    from the general code."""
    out = []
    for specialize in (True, False):
        if (f, wrt, specialize) not in _GRADS:  # compile once per function, not once per example
            _GRADS[f, wrt, specialize] = sourcegrad.grad(f, wrt=wrt, specialize=specialize)
        out.append(_GRADS[f, wrt, specialize](*args))
    return out


def check(f, args, wrt=(0,)):
    """Both codes' gradients agree with central differences, in the arguments' shapes and dtypes."""
    want = [fd_grad(f, args, i) for i in wrt]
    for got in gradients(f, wrt, args):
        for i, g, w in zip(wrt, got, want):
            a = args[i]
            if type(a) is float:
                assert type(g) is float, f"gradient of a Python float is a {type(g).__name__}"
            else:
                assert np.shape(g) == np.shape(a) and np.asarray(g).dtype == a.dtype
            rtol = 1e-5 if np.asarray(a).dtype == np.float64 else 2e-3
            assert_close(
                g,
                w,
                rtol=rtol,
                atol=rtol * (1.0 + float(np.max(np.abs(w), initial=0.0))),
                what=f"d/darg{i}",
            )


def weights(draw, shape, dtype):
    """Random signed weights for reducing a result of ``shape`` to a scalar."""
    rng = np.random.default_rng(draw(SEEDS))
    return (rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)).astype(dtype)


def with_zeros(draw, shape, dtype, lo=0.5, hi=1.5):
    """Entries of magnitude in [lo, hi], either sign, and exact zeros at random places."""
    rng = np.random.default_rng(draw(SEEDS))
    v = rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)
    return np.where(
        rng.uniform(size=shape) < draw(st.sampled_from([0.0, 0.2, 0.5, 1.0])), 0.0, v
    ).astype(dtype)


def axis_of(draw, shape):
    return draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))


SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


# ==== running and total products with zeros ===========================================================
def f_cumprod(x, axis, w):
    return np.sum(np.cumprod(x, axis=axis) * w)


def f_cumprod_method(x, w):
    return np.sum(x.cumprod(axis=-1) * w)


def f_prod(x, axis, w):
    return np.sum(np.prod(x, axis=axis) * w)


@given(st.data())
def test_cumprod_is_exact_with_zeros(data):
    dtype = data.draw(DTYPES)
    shape = data.draw(SHAPES)
    x, axis = with_zeros(data.draw, shape, dtype), axis_of(data.draw, shape)
    check(f_cumprod, (x, axis, weights(data.draw, np.cumprod(x, axis=axis).shape, dtype)))
    check(f_cumprod_method, (x, weights(data.draw, shape, dtype)))
    check(f_prod, (x, axis, weights(data.draw, np.prod(x, axis=axis).shape, dtype)))


# ==== powers at zero ==================================================================================
def f_pow_int(x, k, w):
    return np.sum(x**k * w)


def f_np_power_int(x, k, w):
    return np.sum(np.power(x, k) * w)


def f_pow_float(x, k, w):
    return x**k * w


def f_math_pow(x, k, w):
    return math.pow(x, k) * w


def f_pow_arrays(x, y, w):
    return np.sum(np.power(x, y) * w)


@given(st.data())
def test_integer_powers_at_zero(data):
    dtype = data.draw(DTYPES)
    shape = data.draw(SHAPES)
    k = data.draw(st.integers(0, 3))
    x = with_zeros(data.draw, shape, dtype)
    for f in (f_pow_int, f_np_power_int):
        check(f, (x, k, weights(data.draw, shape, dtype)))
    xf = float(with_zeros(data.draw, (), np.float64))
    for f in (f_pow_float, f_math_pow):
        check(f, (xf, k, 1.5))
    # integer-valued exponents in an array, zero among them, meeting zeros of x
    y = np.random.default_rng(data.draw(SEEDS)).integers(0, 4, shape).astype(dtype)
    check(f_pow_arrays, (x, y, weights(data.draw, shape, dtype)))


@given(st.data())
def test_power_exponent_slope_at_zero_base(data):
    """d/dy 0 ** y is 0 for y > 0 (0 ** y is 0 all around)."""
    dtype = data.draw(DTYPES)
    shape = data.draw(SHAPES)
    x = np.abs(with_zeros(data.draw, shape, dtype))
    y = np.random.default_rng(data.draw(SEEDS)).uniform(0.5, 2.0, shape).astype(dtype)
    check(f_pow_arrays, (x, y, weights(data.draw, shape, dtype)), wrt=(1,))


# ==== spread over length-1 axes and at zero variance ==================================================
def f_var(x, axis, ddof, keepdims, w):
    return np.sum(np.var(x, axis=axis, ddof=ddof, keepdims=keepdims) * w)


def f_std(x, axis, ddof, keepdims, w):
    return np.sum(np.std(x, axis=axis, ddof=ddof, keepdims=keepdims) * w)


def f_batchnorm(x, w):
    return np.sum((x - np.mean(x, axis=0)) / (np.std(x, axis=0) + 1e-3) * w)


@given(st.data())
def test_var_and_std_over_length_one_axes_and_constant_lanes(data):
    dtype = data.draw(DTYPES)
    shape = data.draw(SHAPES)
    axis = axis_of(data.draw, shape)
    reduced = tuple(range(len(shape))) if axis is None else (axis % len(shape),)
    count = math.prod(shape[i] for i in reduced)
    ddof = data.draw(st.integers(0, count - 1))
    rng = np.random.default_rng(data.draw(SEEDS))
    x = rng.integers(-8, 9, shape) / 4  # quarters: a constant lane's mean is exact, its variance 0
    lane = tuple(1 if i in reduced else n for i, n in enumerate(shape))
    x = np.where(rng.uniform(size=lane) < 0.5, rng.integers(-8, 9, lane) / 4, x).astype(dtype)
    keepdims = data.draw(st.booleans())
    out = np.var(x, axis=axis, keepdims=keepdims).shape
    for f in (f_var, f_std):
        check(f, (x, axis, ddof, keepdims, weights(data.draw, out, dtype)))


@given(st.data())
def test_normalizing_a_batch_of_one(data):
    dtype = data.draw(DTYPES)
    shape = (1,) + data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    x = with_zeros(data.draw, shape, dtype)
    check(f_batchnorm, (x, weights(data.draw, shape, dtype)))


# ==== norms with zero entries and zero vectors ========================================================
def f_norm(x, ord, axis, w):
    return np.sum(np.linalg.norm(x, ord=ord, axis=axis) * w)


def f_vector_norm(x, ord, w):
    return np.sum(np.linalg.vector_norm(x, ord=ord, axis=-1) * w)


def f_norm_fro(x, w):
    return np.linalg.norm(x, "fro") * w


@given(st.data())
def test_norms_at_zero_entries_and_zero_vectors(data):
    """Every order is even in each entry, so central differences at a zero see the subgradient 0."""
    dtype = data.draw(DTYPES)
    shape = data.draw(SHAPES)
    x = with_zeros(data.draw, shape, dtype)
    ord = data.draw(st.sampled_from([None, 2, 1, 3, 0.5, np.inf, -np.inf, -1]))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    check(
        f_norm,
        (x, ord, axis, weights(data.draw, np.linalg.norm(x, ord=ord, axis=axis).shape, dtype)),
    )
    check(f_vector_norm, (x, ord or 2, weights(data.draw, shape[:-1], dtype)))
    if len(shape) == 2:
        check(f_norm_fro, (x, 1.5))


# ==== determinants of singular matrices ===============================================================
def f_det(a, w):
    return np.sum(np.linalg.det(a) * w)


@given(st.data())
def test_det_of_singular_matrices(data):
    """The cofactor matrix exists where the inverse does not."""
    dtype = data.draw(DTYPES)
    n = data.draw(st.integers(1, 3))
    batch = data.draw(st.sampled_from([(), (1,), (3,)]))
    rng = np.random.default_rng(data.draw(SEEDS))
    a = rng.uniform(-2, 2, batch + (n, n))
    i, j = rng.integers(0, n, 2)
    make = data.draw(st.sampled_from(["zero row", "equal rows", "zero column", "regular"]))
    if make == "zero row":
        a[..., i, :] = 0.0
    elif make == "zero column":
        a[..., :, i] = 0.0
    elif make == "equal rows":
        a[..., i, :] = a[..., j, :]
    check(f_det, (a.astype(dtype), weights(data.draw, batch, dtype)))


# ==== einsum: '...' anywhere, implicit outputs, repeated labels =======================================
def f_ein_trailing(a, b, w):
    return np.sum(np.einsum("jk...,lj...->lk...", a, b) * w)


def f_ein_lead_and_none(a, b, w):
    return np.sum(np.einsum("...i,ij->...j", a, b) * w)


def f_ein_middle(a, b, w):
    return np.sum(np.einsum("i...j,j...->i...", a, b) * w)


def f_ein_implicit_trailing(a, b, w):
    return np.sum(np.einsum("ij...,j...", a, b) * w)


def f_ein_implicit_batched(a, b, w):
    return np.sum(np.einsum("...ij,...jk", a, b) * w)


def f_ein_implicit_upper(a, b, w):
    return np.sum(np.einsum("ab,Bc", a, b) * w)


def f_ein_diag(a, w):
    return np.sum(np.einsum("ii->i", a) * w)


def f_ein_trace(a, w):
    return np.einsum("ii", a) * w


def f_ein_diag_batched(a, w):
    return np.sum(np.einsum("...ii->...i", a) * w)


def f_ein_diag_around(a, w):
    return np.sum(np.einsum("i...i->...i", a) * w)


def f_ein_diag_product(a, b, w):
    return np.sum(np.einsum("iij,jk->ik", a, b) * w)


def f_ein_elementwise(a, b, w):
    return np.sum(np.einsum("...,...->...", a, b) * w)


def f_ein_scalar_operand(a, b, w):
    return np.sum(np.einsum(",ij->ij", a, b) * w)


def f_ein_sum_leading(a, w):
    return np.sum(np.einsum("a...->...", a) * w)


def f_ein_three(a, b, c, w):
    return np.sum(np.einsum("ij,jk,kl->il", a, b, c) * w)


def f_ein_three_ellipsis(a, b, c, w):
    return np.sum(np.einsum("i...,...j,ij->...", a, b, c) * w)


EINSUM = [
    (f_ein_trailing, "jk...,lj...->lk..."),
    (f_ein_lead_and_none, "...i,ij->...j"),
    (f_ein_middle, "i...j,j...->i..."),
    (f_ein_implicit_trailing, "ij...,j..."),
    (f_ein_implicit_batched, "...ij,...jk"),
    (f_ein_implicit_upper, "ab,Bc"),
    (f_ein_diag, "ii->i"),
    (f_ein_trace, "ii"),
    (f_ein_diag_batched, "...ii->...i"),
    (f_ein_diag_around, "i...i->...i"),
    (f_ein_diag_product, "iij,jk->ik"),
    (f_ein_elementwise, "...,...->..."),
    (f_ein_scalar_operand, ",ij->ij"),
    (f_ein_sum_leading, "a...->..."),
    (f_ein_three, "ij,jk,kl->il"),
    (f_ein_three_ellipsis, "i...,...j,ij->..."),
]


def einsum_operands(draw, subscripts, dtype):
    """Operands for ``subscripts``: a size per letter, and mutually broadcastable shapes (size-1
    axes included) for the operands' ``...``."""
    ins = subscripts.partition("->")[0].split(",")
    sizes = {c: draw(st.integers(1, 3)) for c in sorted(set(subscripts) - set(".,->"))}
    ellipses = iter(
        draw(
            hnp.mutually_broadcastable_shapes(
                num_shapes=max(1, sum("..." in s for s in ins)), max_dims=2, max_side=3
            )
        ).input_shapes
    )
    rng = np.random.default_rng(draw(SEEDS))
    out = []
    for s in ins:
        head, dots, tail = s.partition("...")
        shape = (
            tuple(sizes[c] for c in head)
            + (next(ellipses) if dots else ())
            + tuple(sizes[c] for c in tail)
        )
        out.append(rng.uniform(-1.5, 1.5, shape).astype(dtype))
    return out


@pytest.mark.parametrize(
    "f, subscripts", EINSUM, ids=[f.__name__.removeprefix("f_") for f, _ in EINSUM]
)
@given(data=st.data())
def test_einsum(f, subscripts, data):
    assert subscripts in f.__code__.co_consts  # the row names the subscripts its function uses
    dtype = data.draw(DTYPES)
    ops = einsum_operands(data.draw, subscripts, dtype)
    w = weights(data.draw, np.shape(np.einsum(subscripts, *ops)), dtype)
    check(f, (*ops, w if np.ndim(w) else float(w)), wrt=tuple(range(len(ops))))


# ==== kron of any ranks ===============================================================================
def f_kron(a, b, w):
    return np.sum(np.kron(a, b) * w)


@given(st.data())
def test_kron_of_any_ranks(data):
    dtype = data.draw(DTYPES)
    shapes = [
        data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
        for _ in range(2)
    ]
    rng = np.random.default_rng(data.draw(SEEDS))
    a, b = (rng.uniform(-1.5, 1.5, s).astype(dtype) for s in shapes)
    check(f_kron, (a, b, weights(data.draw, np.kron(a, b).shape, dtype)), wrt=(0, 1))


# ==== logaddexp at ties ===============================================================================
def f_logaddexp(x, y, w):
    return np.sum(np.logaddexp(x, y) * w)


def f_logaddexp2(x, y, w):
    return np.sum(np.logaddexp2(x, y) * w)


@given(st.data())
def test_logaddexp_with_ties(data):
    dtype = data.draw(DTYPES)
    sx, sy = data.draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3)
    ).input_shapes
    rng = np.random.default_rng(data.draw(SEEDS))
    x, y = (rng.integers(-3, 4, s).astype(dtype) / 2 for s in (sx, sy))  # a coarse grid: many ties
    w = weights(data.draw, np.broadcast_shapes(sx, sy), dtype)
    for f in (f_logaddexp, f_logaddexp2):
        check(f, (x, y, w), wrt=(0, 1))


# ==== exact values where central differences cannot apply ===============================================
def f_sum_pow(x, y):
    return np.sum(x**y)


def f_float_pow(x, y):
    return x**y


def f_math_sqrt(x):
    return math.sqrt(x)


def f_sqrt(x):
    return np.sum(np.sqrt(x))


def f_hypot(x, y):
    return np.sum(np.hypot(x, y))


def f_math_hypot(x, y):
    return math.hypot(x, y)


def f_arctan2(x, y):
    return np.sum(np.arctan2(x, y))


def f_math_atan2(x, y):
    return math.atan2(x, y)


def f_lae(x, y):
    return np.sum(np.logaddexp(x, y))


def f_lae2(x, y):
    return np.sum(np.logaddexp2(x, y))


def f_std_all(x):
    return np.std(x)


def f_std_rows(x):
    return np.sum(np.std(x, axis=1))


def f_var_ddof(x, ddof):
    return np.sum(np.var(x, axis=-1, ddof=ddof))


def f_std_ddof(x, ddof):
    return np.sum(np.std(x, axis=-1, ddof=ddof))


def f_norm_ord(x, ord):
    return np.linalg.norm(x, ord=ord)


def f_det_plain(a):
    return np.linalg.det(a)


def f_cumprod_sum(x):
    return np.sum(np.cumprod(x))


A = np.array
INF = np.inf
EXACT = [
    # x ** y: the x-term is 0 where y == 0; the y-term is 0 where x == 0, NaN where x < 0 (log undefined)
    ("x**0 at 0", f_sum_pow, (A([0.0, 2.0]), 0), 0, A([0.0, 0.0])),
    ("x**1 at 0", f_sum_pow, (A([0.0]), 1), 0, A([1.0])),
    ("x**0.5 at 0: inf", f_sum_pow, (A([0.0]), 0.5), 0, A([INF])),
    ("x**-1 at 0: -inf", f_sum_pow, (A([0.0]), -1), 0, A([-INF])),
    ("0**y, d/dy", f_sum_pow, (A([0.0, 0.0, 0.0]), A([0.0, 2.0, -1.0])), 1, A([0.0, 0.0, 0.0])),
    ("0**y, d/dx where y == 0", f_sum_pow, (A([0.0, 0.0]), A([0.0, 2.0])), 0, A([0.0, 0.0])),
    ("(-2)**3, d/dy: NaN", f_sum_pow, (A([-2.0]), A([3.0])), 1, A([np.nan])),
    ("0.0 ** 0", f_float_pow, (0.0, 0), 0, 0.0),
    ("0.0 ** 2.0", f_float_pow, (0.0, 2.0), 0, 0.0),
    ("0.0 ** 0.5: inf", f_float_pow, (0.0, 0.5), 0, INF),
    ("0.0 ** y, d/dy", f_float_pow, (0.0, 2.0), 1, 0.0),
    ("math.sqrt at 0: inf", f_math_sqrt, (0.0,), 0, INF),
    ("sqrt at 0: inf", f_sqrt, (A([0.0]),), 0, A([INF])),
    # the origin of hypot and arctan2: 0; tiny arguments: no underflow of x * x + y * y
    (
        "hypot at (0, 0)",
        f_hypot,
        (A([0.0, 3.0]), A([0.0, 4.0])),
        (0, 1),
        (A([0.0, 0.6]), A([0.0, 0.8])),
    ),
    ("math.hypot at (0, 0)", f_math_hypot, (0.0, 0.0), (0, 1), (0.0, 0.0)),
    ("arctan2 at (0, 0)", f_arctan2, (A([0.0]), A([0.0])), (0, 1), (A([0.0]), A([0.0]))),
    ("math.atan2 at (0, 0)", f_math_atan2, (0.0, 0.0), (0, 1), (0.0, 0.0)),
    ("arctan2 of tiny", f_arctan2, (A([1e-200]), A([1e-200])), (0, 1), (A([5e199]), A([-5e199]))),
    (
        "arctan2 of tiny f32",
        f_arctan2,
        (A([1e-20], np.float32), A([1e-20], np.float32)),
        (0, 1),
        (A([5e19], np.float32), A([-5e19], np.float32)),
    ),
    # logaddexp where x - z is inf - inf: ties share evenly, +inf takes all
    ("logaddexp(-inf, -inf)", f_lae, (A([-INF]), A([-INF])), (0, 1), (A([0.5]), A([0.5]))),
    ("logaddexp(inf, inf)", f_lae, (A([INF]), A([INF])), (0, 1), (A([0.5]), A([0.5]))),
    ("logaddexp(inf, 1)", f_lae, (A([INF]), A([1.0])), (0, 1), (A([1.0]), A([0.0]))),
    ("logaddexp(-inf, 1)", f_lae, (A([-INF]), A([1.0])), (0, 1), (A([0.0]), A([1.0]))),
    (
        "logaddexp2(-inf, -inf)",
        f_lae2,
        (A([-INF, 3.0]), A([-INF, 3.0])),
        (0, 1),
        (A([0.5, 0.5]), A([0.5, 0.5])),
    ),
    ("logaddexp2(1, inf)", f_lae2, (A([1.0]), A([INF])), (0, 1), (A([0.0]), A([1.0]))),
    # std at zero variance: 0 (the subgradient); ddof >= n: inf or NaN, as numpy's value
    ("std of a constant", f_std_all, (A([0.3, 0.3, 0.3]),), 0, A([0.0, 0.0, 0.0])),
    ("std over a batch of one", f_std_rows, (A([[0.3], [1.0]]),), 0, A([[0.0], [0.0]])),
    ("var, ddof = n", f_var_ddof, (A([1.0, 2.0]), 2), 0, A([-INF, INF])),
    ("var, ddof > n", f_var_ddof, (A([1.0, 2.0]), 3), 0, A([-INF, INF])),
    ("std, ddof = n", f_std_ddof, (A([1.0, 2.0]), 2), 0, A([np.nan, np.nan])),
    # norms at the zero vector: 0
    ("norm at 0", f_norm_ord, (A([0.0, 0.0]), None), 0, A([0.0, 0.0])),
    ("norm ord 1 at 0", f_norm_ord, (A([0.0, 0.0]), 1), 0, A([0.0, 0.0])),
    ("norm ord 0.5 at 0", f_norm_ord, (A([0.0, 2.0]), 0.5), 0, A([0.0, 1.0])),
    ("norm ord inf at 0", f_norm_ord, (A([0.0, 0.0]), INF), 0, A([0.0, 0.0])),
    ("norm fro at 0", f_norm_ord, (np.zeros((2, 2)), "fro"), 0, np.zeros((2, 2))),
    # the cofactor matrix of a singular matrix; cumprod past zeros
    ("det singular", f_det_plain, (A([[1.0, 2.0], [2.0, 4.0]]),), 0, A([[4.0, -2.0], [-2.0, 1.0]])),
    ("det zero matrix 3x3", f_det_plain, (np.zeros((3, 3)),), 0, np.zeros((3, 3))),
    (
        "cumprod with zeros",
        f_cumprod_sum,
        (A([2.0, 0.0, 3.0, 0.0, 5.0]),),
        0,
        A([1.0, 8.0, 0.0, 0.0, 0.0]),
    ),
]


@pytest.mark.parametrize("name, f, args, wrt, want", EXACT, ids=[row[0] for row in EXACT])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_exact_value_at_singular_point(name, f, args, wrt, want):
    for got in gradients(f, wrt if isinstance(wrt, tuple) else (wrt,), args):
        for g, w in zip(got, want if isinstance(wrt, tuple) else (want,)):
            assert type(g) is type(w) or np.asarray(g).dtype == np.asarray(w).dtype, (g, w)
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)


def test_zero_exponent_at_zero_raises_no_warning():
    """``x ** 0`` at 0 is exactly 0 by construction, not a NaN cleaned up afterwards."""
    with np.errstate(all="raise"):
        for got in gradients(f_sum_pow, (0,), (A([0.0, 1.0]), 0)):
            assert np.array_equal(got[0], [0.0, 0.0])


# ==== the same edges on a device array: no host synchronization, the host's gradient ===================
def f_device_products(x, a, b):
    s = np.sum(np.cumprod(x, axis=1) ** 2) + np.sum(x**0) + np.sum(x**2) + np.sum(np.std(x, axis=0))
    return s + np.sum(np.einsum("i...i->...i", a) ** 2) + np.sum(np.kron(a, b) ** 2)


def f_device_singular(v, m, u):
    s = np.linalg.norm(v) + np.sum(np.hypot(v, v)) + np.sum(np.arctan2(v, v)) + np.linalg.det(m)
    return s + np.sum(np.logaddexp(u, u)) + np.sum(np.linalg.norm(v, ord=0.5))


def _with_zeros(r):
    x = r.uniform(0.5, 1.5, (3, 4)) * np.where(r.uniform(size=(3, 4)) < 0.3, 0.0, 1.0)
    x[:, 1] = 0.75  # a column of zero variance
    return x


DEVICE = [
    Case(
        "products",
        f_device_products,
        lambda r: (_with_zeros(r), r.uniform(-1, 1, (2, 3, 2)), r.uniform(-1, 1, (2, 1, 2, 2))),
        wrt=(0, 1, 2),
    ),
    Case(
        "singular",
        f_device_singular,
        lambda r: (np.zeros(3), np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([-np.inf, 0.5])),
        wrt=(0, 1, 2),
    ),
]


@pytest.mark.parametrize("specialize", [True, False], ids=["specialized", "general"])
@pytest.mark.parametrize("case", [c.param() for c in DEVICE])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_edges_on_a_device_array(case, specialize):
    """The paths a host array skips (a fast path needs ``any()``, which would wait for a device)."""
    check_case(case, to_device, to_host, is_device, track_host_syncs, specialize=specialize)
