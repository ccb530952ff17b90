"""Optimizing passes: shape specialization (and the saves of values read for a shape it knows,
which go), the closed form of geometric backward loops, and copy propagation in the backward.

Shape inference (``transforms/shapes.py``) is checked against an oracle independent of it: the
user's own function runs under ``sys.settrace``, every value each variable holds is recorded,
and each shape the inference claims must be the shape of every one of those values. The
gradients of specialized code are checked against finite differences here and, for every rule
and corpus function, in ``test_rules.py`` and ``test_corpus.py`` (which run both the specialized
and the general code). The emitted source is checked for what specialization removes.
"""

import ast
import dataclasses
import re
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg
from sourcegrad import api
from sourcegrad.runtime import scale_repeated, seed_like, seed_times
from sourcegrad.transforms import _bind_all, shapes
from sourcegrad.transforms.normalize import Normalizer
from sourcegrad.transforms import code
from sourcegrad.transforms.optimize import fold_scales, fold_seed_products, propagate_copies
from sourcegrad.transforms.source import get_source

from .corpus.harness import check
from .oracle import assert_close, fd_grad

SEEDS = st.integers(0, 2**32 - 1)
DIMS = st.integers(1, 5)


# ---- functions whose shapes are inferred ------------------------------------------------------


def shapes_mix(x, w, b, n):
    h = np.tanh(x @ w + b)
    s = h.sum(axis=0, keepdims=True)
    t = h.T
    m = np.mean(h, axis=1)
    r = h.reshape(-1)
    q = h[1:, None]
    e = h[..., 0]
    z = np.zeros((x.shape[0], 2))
    k = len(h)
    for i in range(n):
        z = z + h[i % k, :2]
        h = h * 0.5
    u = np.dot(h, w.T)
    v = np.maximum(u, 0.0) - x
    return (
        np.sum(v)
        + np.sum(s)
        + np.sum(t)
        + np.sum(m)
        + np.sum(r)
        + np.sum(q)
        + np.sum(e)
        + np.sum(z)
    )


def shapes_more(a, c, scale, n):
    p = np.transpose(a, (1, 0, 2))
    q = a @ np.swapaxes(a, 1, 2)
    r = np.sum(q, axis=(0, -1))
    s = a.max(axis=-1, keepdims=True)
    k = a.ndim + a.size
    m = a.reshape(a.shape[0], -1) * scale
    w = np.where(a > 0, a, c)
    o = np.ones_like(c)
    i = n * 2 + 1
    t = m[:, : i - 1]
    u = (a - s) / (1.0 + np.exp(-a)) + o
    return np.sum(p) + np.sum(r) + np.sum(m) + np.sum(w) + np.sum(t) + np.sum(u) + k


def shapes_branch(x, flag):
    if flag > 0:
        y = x.sum(axis=0)
    else:
        y = x
    return np.sum(y * 2.0)


def inferred(fn, args):
    src = get_source(fn)
    irfn = Normalizer(src, options={"unroll": 0}).run()
    described = dict.fromkeys(irfn.params, shapes.TOP)
    described.update((p, shapes.describe(k)) for p, k in zip(irfn.params, api.signature_of(args)))
    return shapes.Shapes(irfn, _bind_all(src, irfn), described)


def observed(fn, args):
    """name -> the set of shapes of every array or float the user's function held in it."""
    seen = {}

    def record(frame):
        for name, v in frame.f_locals.items():
            if isinstance(v, (np.ndarray, np.generic, float)):
                seen.setdefault(name, set()).add(np.shape(v))

    def tracer(frame, event, arg):
        if frame.f_code is not fn.__code__:
            return None
        if event in ("line", "return"):
            record(frame)
        return tracer

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(old)
    return seen


def assert_sound(fn, args):
    known = inferred(fn, args)
    for name, held in observed(fn, args).items():
        shape = known.of(name)
        if shape is not None:
            assert held == {shape}, f"{name}: inferred {shape}, but it held values of shapes {held}"
    return known


def mix_args(seed, batch, n_in, hidden, trips, bias):
    """Arguments of ``shapes_mix``; the bias broadcasts as a vector, a row or a Python float."""
    rng = np.random.default_rng(seed)
    b = {"vector": rng.normal(size=hidden), "row": rng.normal(size=(1, hidden)), "scalar": 0.5}[
        bias
    ]
    return rng.normal(size=(batch, n_in)), rng.normal(size=(n_in, hidden)), b, trips


MIX = dict(
    seed=SEEDS,
    batch=DIMS,
    n_in=DIMS,
    hidden=DIMS,
    trips=st.integers(0, 3),
    bias=st.sampled_from(["vector", "row", "scalar"]),
)


@given(**MIX)
def test_inferred_shapes_are_the_shapes_values_have(seed, batch, n_in, hidden, trips, bias):
    known = assert_sound(shapes_mix, mix_args(seed, batch, n_in, hidden, trips, bias))
    for name in ("h", "s", "t", "m", "r", "q", "e", "z", "u", "v"):  # the inference is not vacuous
        assert known.of(name) is not None, name


@given(seed=SEEDS, d0=DIMS, d1=DIMS, d2=DIMS, n=st.integers(0, 3), c_rank=st.integers(0, 3))
def test_inferred_shapes_more_primitives(seed, d0, d1, d2, n, c_rank):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d0, d1, d2))
    c = rng.normal(size=(d0, d1, d2)[3 - c_rank :])
    args = (a, c, 0.5, n)
    known = assert_sound(shapes_more, args)
    for name in ("p", "q", "r", "s", "m", "w", "o", "u"):
        assert known.of(name) is not None, name
    assert known.of("t") is None  # its length depends on the value of the int argument n
    check(shapes_more, args, wrt=(0, 1, 2))


@given(seed=SEEDS, rows=DIMS, cols=DIMS, flag=st.sampled_from([-1.0, 1.0]))
def test_a_name_given_two_shapes_is_unknown(seed, rows, cols, flag):
    x = np.random.default_rng(seed).normal(size=(rows, cols))
    known = assert_sound(shapes_branch, (x, flag))
    assert known.of("y") is None
    check(shapes_branch, (x, flag))


@given(**MIX)
def test_specialized_gradients_match_finite_differences(seed, batch, n_in, hidden, trips, bias):
    check(shapes_mix, mix_args(seed, batch, n_in, hidden, trips, bias), wrt=(0, 1, 2))


# ---- what specialization removes from the emitted code -----------------------------------------


def rnn(wx, wh, b, xs):
    h = np.zeros((xs.shape[1], wh.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(np.dot(xs[t], wx) + np.dot(h, wh) + b)
    return np.sum(h * h)


def rnn_args(seed=0, steps=4, batch=3, n_in=2, hidden=5):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(n_in, hidden)),
        rng.normal(size=(hidden, hidden)) * 0.5,
        rng.normal(size=hidden),
        rng.normal(size=(steps, batch, n_in)),
    )


def test_specialized_code_has_no_shape_work_left():
    df = sg.grad(rnn, wrt=(0, 1, 2))
    general, special = sg.source(df), sg.source(df, *rnn_args())
    for call in ("unbroadcast(", "dot_adjoint_a(", "dot_adjoint_b(", "_tape.append(shape_of("):
        assert call in general
        assert call not in special, special
    assert "b_bar += _t8_bar.sum(axis=0)" in special  # the bias: a sum over the batch axis
    assert "h_bar = _t8_bar.dot(wh.T)" in special  # copies of the adjoint propagated


@given(seed=SEEDS, steps=st.integers(1, 4), batch=st.integers(1, 3), hidden=st.integers(1, 4))
def test_specialized_rnn_matches_finite_differences(seed, steps, batch, hidden):
    check(rnn, rnn_args(seed, steps, batch, 2, hidden), wrt=(0, 1, 2))


def test_one_specialization_per_signature_then_the_general_code(monkeypatch):
    monkeypatch.setattr("sourcegrad.compiled.MAX_SPECIALIZATIONS", 2)  # where the cap is read
    df = sg.grad(rnn, wrt=(0, 1, 2))
    for steps in (1, 2, 3, 4):  # four signatures: two specialized, two on the general code
        args = rnn_args(steps=steps)
        check(rnn, args, wrt=(0, 1, 2))
        df(*args)
    assert len(df._specialized) == 2 and df._compiled is not None


def test_keyword_calls_and_containers_run_the_general_code():
    df = sg.grad(rnn, wrt=(0, 1, 2))
    wx, wh, b, xs = rnn_args()
    by_keyword = df(wx, wh, b, xs=xs)[0]
    assert df._compiled is not None and not df._specialized  # the keyword call ran the general code
    assert_close(by_keyword, df(wx, wh, b, xs)[0], 1e-12, 1e-12, what="d wx")
    assert len(df._specialized) == 1
    assert api.signature_of(({"w": wx}, 2.0)) is None
    # a list's kind is part of the key: it decides whether ``a + b`` concatenates
    assert api.signature_of(({"w": wx}, [b])) == (None, list)
    assert api.signature_of((wx, 2.0, 3, np.float64(1.5))) == (wx.shape, float, int, ())


# ---- closed form of geometric backward loops -----------------------------------------------------


def halve_while_large(x):
    y = x
    while np.sum(np.abs(y)) > 1.0:
        y = y * 0.5
    return np.sum(np.sin(y))


def scale_n_times(x, n):
    y = x
    for i in range(n):
        y = 1.25 * y
    return np.sum(y * y)


def test_geometric_loops_are_folded():
    for fn, args in ((halve_while_large, (np.ones(3) * 4,)), (scale_n_times, (np.ones(3), 5))):
        backward = sg.source(sg.grad(fn)).split("check_scalar", 1)[1]
        assert "scale_repeated(y_bar, " in backward and "for " not in backward, backward


@given(seed=SEEDS, n=st.integers(1, 5), scale=st.sampled_from([0.1, 3.0, 100.0]))
def test_folded_while_loop_matches_finite_differences(seed, n, scale):
    x = np.random.default_rng(seed).uniform(0.5, 1.5, size=n) * scale
    y = x.copy()
    while np.sum(np.abs(y)) > 1.0:
        y = y * 0.5
    if abs(np.sum(np.abs(y)) - 0.5) < 1e-3:  # keep finite differences inside one trip count
        return
    check(halve_while_large, (x,))


@given(seed=SEEDS, trips=st.integers(0, 12))
def test_folded_for_loop_matches_finite_differences(seed, trips):
    check(scale_n_times, (np.random.default_rng(seed).normal(size=3), trips))


@given(
    k=st.sampled_from([2, 0.5, -2, 4.0, 1.25, 0.9, -0.75, 1, 0]),
    n=st.integers(0, 3000),
    exponent=st.integers(-300, 300),
)
def test_scale_repeated_is_the_repeated_product(k, n, exponent):
    g = np.array([1.0, -3.0, 0.25]) * 10.0**exponent
    want = g.copy()
    with np.errstate(over="ignore", under="ignore"):
        for _ in range(n):
            want = want * k
        got = scale_repeated(g, k, n)
    if k in (2, 0.5, -2, 4.0, 1, 0):  # powers of two (and 0, 1): the same floats exactly
        np.testing.assert_array_equal(got, want)
    else:
        # n roundings apart; below the normal range the repeated product keeps fewer bits
        tiny = np.finfo(float).smallest_subnormal
        np.testing.assert_allclose(got, want, rtol=4 * n * np.finfo(float).eps, atol=4 * n * tiny)


@given(
    k=st.sampled_from([2, 0.5, -2, 1.25, -0.75, 1]),
    n=st.integers(0, 60),
    then=st.sampled_from([2, 0.5, -3.0, 1.25, 1]),
    exponent=st.integers(-30, 30),
)
def test_scale_repeated_then_is_one_product_more(k, n, then, exponent):
    """``scale_repeated(g, k, n, m)`` (a loop's closed form folded with ``* m`` after it) is the
    unfolded ``scale_repeated(g, k, n) * m`` up to a rounding, exactly for powers of two."""
    g = np.array([1.0, -3.0, 0.25]) * 10.0**exponent
    want = scale_repeated(g, k, n) * then
    got = scale_repeated(g, k, n, then)
    assert got.dtype == want.dtype
    if k in (2, 0.5, -2, 1) and then in (2, 0.5, 1):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(float).eps)
    g32 = g.astype(np.float32)
    assert scale_repeated(g32, k, n, then).dtype == np.float32  # a number keeps the array's type


def test_scale_repeated_falls_back_where_the_power_leaves_the_float_range():
    tiny, huge = np.array([1e-300]), np.array([1e300])
    assert np.isfinite(scale_repeated(tiny, 2, 1500))[0]  # 2**1500 overflows; the product does not
    assert scale_repeated(huge, 0.5, 1100)[0] > 0  # 0.5**1100 underflows; the product does not
    np.testing.assert_array_equal(scale_repeated(tiny, 2, 1500), tiny * 2.0**750 * 2.0**750)
    # 2**1023 * 4 overflows where 2**1023 does not: the loop, then the factor
    np.testing.assert_array_equal(scale_repeated(tiny, 2, 1023, 4), tiny * 2.0**1023 * 4)
    np.testing.assert_array_equal(scale_repeated(tiny, 2, 1500, 0.5), tiny * 2.0**750 * 2.0**749)


# ---- peepholes: equal contributions added once, a captured adjoint read in place ----------------


def squares(x, w):
    y = x * w
    return np.sum(y * y) + np.sum(x * x)


def running_sum(xs, w):
    total = 0.0
    for x in xs:
        total = total + np.sum(np.tanh(w * x))
    return total


def test_both_operands_of_a_square_give_one_term():
    # before: y_bar = unbroadcast(_t_bar * y, y); y_bar = y_bar + unbroadcast(_t_bar * y, y)
    for specialize in (True, False):
        backward = sg.source(
            sg.grad(squares, specialize=specialize),
            *((np.ones(3), np.ones(3)) if specialize else ()),
        )
        backward = backward.split("check_scalar", 1)[1]
        assert "y_bar = y_bar +" not in backward and "2 * " in backward, backward
    check(squares, (np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.75])), wrt=(0, 1))


def test_an_accumulating_statement_reads_its_adjoint_in_place():
    # before: _g = total_bar; total_bar = _g; _t_bar = unreduce(_g, ...)
    # shapes known: the adjoint of total + s is total_bar itself
    xs = np.array([[0.5, -1.0], [0.25, 2.0]])
    backward = sg.source(sg.grad(running_sum, wrt=1), xs, np.ones(2)).split("check_scalar", 1)[1]
    assert not re.search(r"_g\d+ = total_bar", backward) and "total_bar = _g" not in backward, (
        backward
    )
    check(running_sum, (xs, np.array([0.3, -0.7])), wrt=1)


# ---- the constant seed folded into its first rule --------------------------------------------------


def sum_loss(x, w):
    return np.sum(np.tanh(x * w))


def mean_loss(x, w):
    z = np.sin(x) * w
    return z.mean()


def seed_read_twice(x):
    s = np.sum(x * x)
    return s * s  # the seed is read by ``s * s``'s rule: no reduction reads it


def seed_kept(xs, w):
    total = np.sum(w * w)
    for x in xs:
        # total_bar passes through unchanged: still 1.0 for the first sum
        total = total + np.sum(x * w)
    return total


def seed_changed_first(xs, w):
    total = np.sum(w * w)
    for x in xs:
        # the backward scales the seed before the first sum reads it
        total = 0.5 * total + np.sum(x * w)
    return total


def axis_then_sum(x):
    return np.sum(np.sum(np.cos(x), axis=0))


def test_the_constant_seed_is_folded_into_the_reduction_that_reads_it():
    # before: loss_bar = 1.0; _t_bar = unreduce(loss_bar, _t, None, False)
    x, w = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.75])
    for f, call in ((sum_loss, "seed_like(_t1)"), (mean_loss, "seed_like(z, mean=True)")):
        for specialize in (True, False):
            src = sg.source(
                sg.grad(f, wrt=(0, 1), specialize=specialize), *((x, w) if specialize else ())
            )
            backward = src.split("check_scalar", 1)[1]
            assert "unreduce(" not in backward and " = 1.0" not in backward and call in backward, (
                src
            )
        check(f, (x, w), wrt=(0, 1))


def test_a_pullback_keeps_its_seed_argument():
    src = sg.source(sg.vjp(sum_loss, wrt=(0, 1)))
    seed = re.search(r"def sum_loss_pullback\((\w+_bar)\):", src).group(1)
    assert f"unreduce({seed}," in src, src
    assert "seed_like" not in src


@pytest.mark.parametrize(
    "f, args, folded",
    [
        (seed_read_twice, (np.array([0.5, -1.0, 2.0]),), False),
        (seed_kept, (np.array([[0.5, -1.0], [0.25, 2.0]]), np.array([0.3, -0.7])), True),
        (seed_changed_first, (np.array([[0.5, -1.0], [0.25, 2.0]]), np.array([0.3, -0.7])), False),
        (axis_then_sum, (np.array([[0.5, -1.0], [0.25, 2.0]]),), True),
    ],
)
def test_the_seed_is_folded_only_where_it_is_still_one(f, args, folded):
    wrt = tuple(range(len(args)))
    src = sg.source(sg.grad(f, wrt=wrt), *args)
    backward = src.split("check_scalar", 1)[1]
    assert ("seed_like" in backward) == folded, src
    if not folded:  # the seed stays, as a variable, for the rule that reads it
        assert "_bar = 1.0" in backward, src
    if f is axis_then_sum:  # the inner sum over an axis keeps its unreduce
        assert backward.count("unreduce(") == 1, src
    check(f, args, wrt=wrt)


@given(seed=SEEDS, rows=DIMS, cols=DIMS, mean=st.booleans(), float32=st.booleans())
def test_folded_seed_gradients_match_finite_differences(seed, rows, cols, mean, float32):
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((rows, cols)), rng.standard_normal(cols)
    f = mean_loss if mean else sum_loss
    check(f, (x, w), wrt=(0, 1))
    if float32:  # the seed takes the operand's float type, as unreduce(1.0, ...) did
        gx, gw = sg.grad(f, wrt=(0, 1))(x.astype(np.float32), w.astype(np.float32))
        assert gx.dtype == np.float32 and gw.dtype == np.float32


# ---- values read for their shape: not saved where shape inference knows it ---------------------


def loop_energy(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        h = np.tanh(w * x[i] + s)
        s = s + np.sum(h * h)  # the backward reads h * h for its shape alone
    return s


def while_energy(x, w, n):
    s = 0.0
    k = 0
    while k < n:
        t = np.sin(w * x + s)
        s = s + np.sum(t * t)
        k = k + 1
    return s


def nested_energy(x, w, outer, inner):
    s = 0.0
    for i in range(outer):
        for j in range(inner):
            s = s + np.sum(np.tanh(w * x + s) * x)
        s = s * 0.5 + np.mean(x * w)
    return s


def branch_energy(x, w, n):
    s = 0.0
    for i in range(n):
        if i % 2 == 0:
            s = s + np.sum(np.sin(w * x) * s)
        else:
            s = s - np.sum(x * x * w)
    return s


def read_after_loop(x, w, n):
    s = np.sum(x)
    for i in range(n):
        u = w * x * s
        s = s * 0.5 + np.sum(u)
    return s + np.sum(u)  # the backward reads u's shape after the loop and in it


def checkpointed_energy(x, w, n):
    s = 0.0
    h = x
    for i in sg.checkpointed(range(n)):
        s = s + np.sum(h * h)
        h = np.tanh(w * h)
    return s


def unrolled_energy(x, w):
    s = 0.0
    for i in range(3):  # unrolled: t is assigned three times, by one expression
        t = w * x[i] + s
        s = s + np.sum(t)
    return s


def carried_dtype(x, w, n):
    h = x[0]  # float32 for a float32 x; float64 once multiplied by a float64 w
    s = 0.0
    for i in range(n):
        s = s + np.sum(h * h)  # h * h: float32 in the first iteration, float64 after
        h = np.tanh(h * w)
    return s


def defined_before_too(x, w, n):
    t = x * 2.0
    s = np.sum(t)
    for i in range(n):
        t = w * x
        s = s + np.sum(t)
    return s


def two_branches(x, w, n):
    s = 0.0
    for i in range(n):
        if i % 2 == 0:
            t = w * x
        else:
            t = x + w
        s = s + np.sum(t)
    return s


def slice_by_index(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        t = x[:i] * w[0]  # a shape that changes from one iteration to the next
        s = s + np.sum(t)
    return s


def _vector_args(seed, n, trips):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n) * 0.5, rng.normal(size=n) * 0.5, trips


SHAPE_ONLY_LOOPS = [
    (loop_energy, lambda: (np.ones((4, 3)) * 0.1, np.ones(3) * 0.2)),
    (while_energy, lambda: _vector_args(0, 3, 2)),
    (nested_energy, lambda: _vector_args(0, 3, 2) + (3,)),
    (branch_energy, lambda: _vector_args(0, 3, 3)),
    (read_after_loop, lambda: _vector_args(0, 3, 2)),
    (checkpointed_energy, lambda: _vector_args(0, 3, 4)),
    (unrolled_energy, lambda: (np.ones((4, 3)) * 0.1, np.ones(3) * 0.2)),
    (carried_dtype, lambda: (np.ones((2, 3), np.float32), np.ones(3) * 0.2, 3)),
]


@pytest.mark.parametrize("f, args", SHAPE_ONLY_LOOPS, ids=[f.__name__ for f, _ in SHAPE_ONLY_LOOPS])
def test_values_read_for_a_known_shape_are_not_saved(f, args):
    # before: _tape.append(shape_of(_t3)); _t3 = h * h ... _t3_bar = unreduce(s_bar, _t3, ...);
    # _t3 = _tape.pop(). The backward reads the value the forward left: it has that shape.
    df = sg.grad(f, wrt=(0, 1))
    general, special = sg.source(df), sg.source(df, *args())
    assert "shape_of(" in general  # shapes unknown: each iteration's is kept
    assert "shape_of(" not in special, special


def test_a_loop_reads_the_last_value_for_its_shape():
    src = sg.source(sg.grad(loop_energy, wrt=(0, 1)), np.ones((5, 3)), np.ones(3))
    body = src.split("check_scalar", 1)
    assert "_t3 = h * h" in body[0] and "_tape.append(h)" in body[0], src
    assert "_t3_bar = unreduce(s_bar, _t3, None, False)" in body[1], src
    assert "_t3 = " not in body[1] and "_t3 = None" not in body[0], src


@pytest.mark.parametrize(
    "f, args",
    [
        (defined_before_too, (np.ones(3), np.ones(3), 2)),  # two expressions: two dtypes maybe
        (two_branches, (np.ones(3), np.ones(3), 2)),  # likewise
        (slice_by_index, (np.ones((4, 3)), np.ones(3))),  # a shape inference does not know
    ],
    ids=["defined_before_too", "two_branches", "slice_by_index"],
)
def test_shape_saves_that_stay(f, args):
    special = sg.source(sg.grad(f, wrt=(0, 1)), *args)
    assert "_tape.append(shape_of(t))" in special and "t = _tape.pop()" in special, special
    check(f, args, wrt=(0, 1))


@given(seed=SEEDS, rows=st.integers(0, 4), cols=DIMS)
def test_loop_energy_matches_finite_differences(seed, rows, cols):
    rng = np.random.default_rng(seed)
    check(loop_energy, (rng.normal(size=(rows, cols)), rng.normal(size=cols)), wrt=(0, 1))


@given(seed=SEEDS, n=DIMS, trips=st.integers(0, 4))
def test_while_energy_matches_finite_differences(seed, n, trips):
    check(while_energy, _vector_args(seed, n, trips), wrt=(0, 1))


@given(seed=SEEDS, n=DIMS, outer=st.integers(0, 3), inner=st.integers(0, 3))
def test_nested_energy_matches_finite_differences(seed, n, outer, inner):
    check(nested_energy, _vector_args(seed, n, outer) + (inner,), wrt=(0, 1))


@given(seed=SEEDS, n=DIMS, trips=st.integers(0, 5))
def test_branch_energy_matches_finite_differences(seed, n, trips):
    check(branch_energy, _vector_args(seed, n, trips), wrt=(0, 1))


@given(seed=SEEDS, n=DIMS, trips=st.integers(1, 4))
def test_read_after_loop_matches_finite_differences(seed, n, trips):
    check(read_after_loop, _vector_args(seed, n, trips), wrt=(0, 1))


@given(seed=SEEDS, n=DIMS, trips=st.integers(0, 6))
def test_checkpointed_energy_matches_finite_differences(seed, n, trips):
    check(checkpointed_energy, _vector_args(seed, n, trips), wrt=(0, 1))


@given(seed=SEEDS, cols=DIMS)
def test_unrolled_energy_matches_finite_differences(seed, cols):
    rng = np.random.default_rng(seed)
    check(unrolled_energy, (rng.normal(size=(3, cols)), rng.normal(size=cols)), wrt=(0, 1))


@given(seed=SEEDS, rows=st.integers(0, 4), cols=DIMS)
def test_float32_loop_energy_keeps_its_dtype(seed, rows, cols):
    rng = np.random.default_rng(seed)
    x, w = rng.normal(size=(rows, cols)), rng.normal(size=cols)
    want = check(loop_energy, (x, w), wrt=(0, 1))
    for specialize in (True, False):
        got = sg.grad(loop_energy, wrt=(0, 1), specialize=specialize)(
            x.astype(np.float32), w.astype(np.float32)
        )
        for g, v in zip(got, want):
            assert g.dtype == np.float32
            assert_close(g, v, 2e-3, 2e-3)


@given(seed=SEEDS, cols=DIMS, trips=st.integers(0, 4))
def test_a_dtype_carried_across_iterations(seed, cols, trips):
    """float32 ``x``, float64 ``w``: ``h * h`` is float32 in the first iteration and float64 in
    the others, and the backward makes its adjoint from the Python number 1.0. Not saved, it
    takes the last iteration's dtype: the gradient keeps each argument's dtype and matches."""
    rng = np.random.default_rng(seed)
    x, w = rng.normal(size=(2, cols)), rng.normal(size=cols)
    want = check(carried_dtype, (x, w, trips), wrt=(0, 1))
    x32 = x.astype(np.float32)
    general = sg.grad(carried_dtype, wrt=(0, 1), specialize=False)(x32, w, trips)
    special = sg.grad(carried_dtype, wrt=(0, 1))(x32, w, trips)
    for g, s, v, dtype in zip(general, special, want, (np.float32, np.float64)):
        assert g.dtype == s.dtype == dtype
        assert_close(s, g, 1e-6, 1e-6)
        assert_close(s, v, 1e-4, 1e-4)


# ---- the seed folded into the product that reads it ---------------------------------------------


def product_loss(y, w):
    return np.sum(np.tanh(y) * w)


def test_the_seed_is_folded_into_the_product_that_reads_it():
    # before: _t1_bar = seed_like(_t1); _t0_bar = _t1_bar * w
    y, w = np.array([[0.5, -1.0], [2.0, 0.25]]), np.array([1.5, -0.75])
    backward = sg.source(sg.grad(product_loss), y, w).split("check_scalar", 1)[1]
    assert "seed_times(_t1, w)" in backward and "seed_like" not in backward, backward
    # two readers (both operands differentiated), or an unbroadcast around the product: kept
    for g, args in ((sg.grad(product_loss, wrt=(0, 1)), (y, w)), (sg.grad(product_loss), ())):
        backward = sg.source(g, *args).split("check_scalar", 1)[1]
        assert "seed_like(_t1)" in backward and "seed_times" not in backward, backward
    check(product_loss, (y, w), wrt=(0, 1))


_DTYPES = [np.float16, np.float32, np.float64, np.int64, np.complex128, np.dtype(">f8")]


@given(
    seed=SEEDS,
    rows=DIMS,
    cols=DIMS,
    w_shape=st.sampled_from(["same", "row", "column", "0-d", "float"]),
    y_dtype=st.sampled_from(_DTYPES[:3] + _DTYPES[-1:]),
    w_dtype=st.sampled_from(_DTYPES[:4] + _DTYPES[-1:]),  # (a complex w: a complex loss)
)
def test_folded_product_gradients_match_the_unfolded_code(
    seed, rows, cols, w_shape, y_dtype, w_dtype
):
    """``seed_times`` (the specialized code) gives the gradient the general code gives, to the
    bit and in its dtype, whatever ``w`` is: an array of the product's shape or broadcast to it,
    of any dtype, or a Python float; and both match finite differences."""
    rng = np.random.default_rng(seed)
    y = rng.standard_normal((rows, cols)).astype(y_dtype)
    shape = {"same": (rows, cols), "row": (cols,), "column": (rows, 1), "0-d": ()}.get(w_shape)
    w = 0.75 if shape is None else (rng.standard_normal(shape) * 3).astype(w_dtype)
    folded = sg.value_and_grad(product_loss)
    src = sg.source(folded, y, w)
    assert "seed_times" in src, src
    value, g = folded(y, w)
    want_value, want = sg.value_and_grad(product_loss, specialize=False)(y, w)
    assert g.dtype == want.dtype == y.dtype and g.shape == y.shape
    np.testing.assert_array_equal(g, want)
    assert value == want_value
    if y.dtype == np.float64 and not np.iscomplexobj(w):
        assert_close(g, fd_grad(product_loss, (y, w), 0), rtol=1e-6, atol=1e-8)


@given(
    seed=SEEDS,
    like_shape=st.sampled_from([(3,), (2, 3), (), (1,)]),
    w_shape=st.sampled_from([(3,), (2, 3), (), (1,), None]),
    like_dtype=st.sampled_from(_DTYPES),
    w_dtype=st.sampled_from(_DTYPES),
)
def test_seed_times_is_the_product_with_the_seed(seed, like_shape, w_shape, like_dtype, w_dtype):
    rng = np.random.default_rng(seed)
    like = rng.standard_normal(like_shape).astype(like_dtype)
    w = 1.5 if w_shape is None else rng.standard_normal(w_shape).astype(w_dtype)
    want = seed_like(like) * w
    got = seed_times(like, w)
    assert type(got) is type(want) and np.shape(got) == np.shape(want)
    assert getattr(got, "dtype", None) == getattr(want, "dtype", None)
    np.testing.assert_array_equal(got, want)
    if isinstance(w, np.ndarray):
        assert got is not w and not np.shares_memory(got, w)  # never the caller's array


def folded(*lines, outputs=()):
    """The text of ``fold_seed_products`` applied to lines given as "depth:text"."""
    bwd = [stmt(int(t[0]), t[2:]) for t in lines]
    keep = set().union(*(stmt(0, f"_ = {o}").reads for o in outputs)) if outputs else set()
    return [f"{s.depth}:{s.text}" for s in fold_seed_products(bwd, "seed_like", "seed_times", keep)]


def test_a_seed_read_once_by_a_product_is_folded():
    assert folded("0:a_bar = seed_like(t)", "0:x_bar = g_bar * 2", "0:y_bar = a_bar * w") == [
        "0:x_bar = g_bar * 2",
        "0:y_bar = seed_times(t, w)",
    ]


@pytest.mark.parametrize(
    "lines,outputs",
    [
        (("0:a_bar = seed_like(t)", "0:y_bar = a_bar * w", "0:z_bar = a_bar * y"), ()),  # twice
        (("0:a_bar = seed_like(t)", "0:y_bar = w * a_bar"), ()),  # (the rules put d[z] first)
        (("0:a_bar = seed_like(t)", "0:y_bar = a_bar * 2.0"), ()),  # not a name
        (("0:a_bar = seed_like(t)", "0:y_bar = a_bar * w * 2.0"), ()),  # more than the product
        (("0:a_bar = seed_like(t, mean=True)", "0:y_bar = a_bar * w"), ()),  # a mean's seed
        (("0:a_bar = seed_like(t)", "0:w = g_bar", "0:y_bar = a_bar * w"), ()),  # w changes
        (("0:a_bar = seed_like(t)", "0:t = _tape.pop()", "0:y_bar = a_bar * w"), ()),  # t does
        (("0:a_bar = seed_like(t)", "0:if c:", "1:y_bar = a_bar * w"), ()),  # in a block
        (("0:a_bar = seed_like(t)", "0:y_bar = a_bar * w"), ("finalize(a_bar, a)",)),  # returned
        (("0:a_bar = seed_like(t)", "0:y_bar += a_bar * w"), ()),  # an update
    ],
)
def test_seeds_that_must_stay(lines, outputs):
    assert folded(*lines, outputs=outputs) == list(lines)


def doubling_loss(x, c):
    y = x * 2
    while np.linalg.norm(y) < 100:
        y = y * 2
    return np.sum(y * c)


def test_a_factor_before_a_geometric_loop_joins_its_closed_form():
    # before: y_bar = scale_repeated(y_bar, 2, _n2); x_bar = y_bar * 2
    x, c = np.array([1e-3, -2e-3, 5e-4]), np.array([0.1, 1.0, 0.0001])
    for args in ((x, c), ()):
        backward = sg.source(sg.grad(doubling_loss), *args).split("check_scalar", 1)[1]
        assert re.search(r"x_bar = scale_repeated\(y_bar, 2, _n\d+, 2\)", backward), backward
        assert "y_bar * 2" not in backward, backward
    check(doubling_loss, (x, c), wrt=(0, 1))


@given(seed=SEEDS, n=st.integers(1, 5), size=st.floats(1e-4, 200.0))
def test_folded_factor_gradients_match_finite_differences(seed, n, size):
    rng = np.random.default_rng(seed)
    x, c = rng.uniform(0.5, 1.5, size=n) * size / n, rng.standard_normal(n)
    y = x * 2
    while np.linalg.norm(y) < 100:
        y = y * 2
    if abs(np.linalg.norm(y) - 100) < 1e-3 * 100 or abs(np.linalg.norm(y) - 200) < 1e-3 * 200:
        return  # keep finite differences inside one trip count
    check(doubling_loss, (x, c), wrt=(0, 1))


def scaled(*lines, outputs=()):
    """The text of ``fold_scales`` applied to lines given as "depth:text"; a line
    ``a = scale_repeated(g, k, n)`` carries what the backward sweep leaves on one."""
    bwd = []
    for t in lines:
        st_ = stmt(int(t[0]), t[2:])
        m = re.fullmatch(r"(\w+) = scale_repeated\((\w+), ([^,]+), (\w+)\)", t[2:])
        if m:
            info = ("scale_repeated", m.group(2), m.group(3), code.name(m.group(4)))
            st_ = dataclasses.replace(st_, info={"scale_repeated": info})
        bwd.append(st_)
    keep = set().union(*(stmt(0, f"_ = {o}").reads for o in outputs)) if outputs else set()
    return [f"{s.depth}:{s.text}" for s in fold_scales(bwd, keep)]


def test_a_number_after_a_closed_form_loop_joins_it():
    assert scaled("0:y_bar = scale_repeated(y_bar, 2, n)", "0:x_bar = y_bar * (-0.5)") == [
        "0:x_bar = scale_repeated(y_bar, 2, n, (-0.5))"
    ]
    assert scaled("0:a_bar = scale_repeated(g_bar, 2, n)", "0:w = g", "0:x_bar = a_bar * 3") == [
        "0:w = g",
        "0:x_bar = scale_repeated(g_bar, 2, n, 3)",
    ]


@pytest.mark.parametrize(
    "lines,outputs",
    [
        (("0:y_bar = scale_repeated(y_bar, 2, n)", "0:x_bar = y_bar * w"), ()),  # not a number
        (
            ("0:y_bar = scale_repeated(y_bar, 2, n)", "0:x_bar = y_bar * 2", "0:z_bar = y_bar * w"),
            (),
        ),  # read again
        (("0:y_bar = scale_repeated(y_bar, 2, n)", "0:n = k", "0:x_bar = y_bar * 2"), ()),  # n
        (("0:a_bar = scale_repeated(g, 2, n)", "0:g = h", "0:x_bar = a_bar * 2"), ()),  # g
        (("1:y_bar = scale_repeated(y_bar, 2, n)", "1:x_bar = y_bar * 2"), ()),  # in a loop
        (("0:y_bar = scale_repeated(y_bar, 2, n)", "0:if c:", "1:x_bar = y_bar * 2"), ()),
        (("0:y_bar = scale_repeated(y_bar, 2, n)", "0:x_bar += y_bar * 2"), ()),  # an update
        (("0:y_bar = scale_repeated(y_bar, 2, n)", "0:x_bar = y_bar * 2"), ("finalize(y_bar, y)",)),
        (("0:y_bar = y_bar * 2", "0:x_bar = y_bar * 2"), ()),  # not a closed form
    ],
)
def test_closed_forms_that_must_stay(lines, outputs):
    assert scaled(*lines, outputs=outputs) == list(lines)


# ---- copy propagation ----------------------------------------------------------------------------


def tokens(text):
    """Code for ``text`` as the reverse pass builds it: each identifier not after a dot a ``Ref``."""
    parts, last = [], 0
    for m in re.finditer(r"(?<![\w.])[A-Za-z_]\w*", text):
        if m.group() not in ("for", "in", "if", "else", "not", "is"):
            parts += [text[last : m.start()], code.Ref(m.group())]
            last = m.end()
    return code.of(*parts, text[last:])


def stmt(depth, text):
    """A backward statement built from "text", what it writes from Python's own parse of it."""
    if text.endswith(":"):
        tree = ast.parse(text + "\n    pass").body[0]
        writes = (
            {n.id for n in ast.walk(tree.target) if isinstance(n, ast.Name)}
            if isinstance(tree, ast.For)
            else ()
        )
        return code.header(depth, tokens(text), writes=writes)
    augmented = isinstance(ast.parse(text).body[0], ast.AugAssign)
    lhs, _, rhs = text.partition(" += " if augmented else " = ")
    return (code.augment if augmented else code.assign)(depth, lhs, tokens(rhs))


def propagated(*lines, outputs=()):
    """The text of ``propagate_copies`` applied to lines given as "depth:text"."""
    bwd = [stmt(int(t[0]), t[2:]) for t in lines]
    keep = set().union(*(stmt(0, f"_ = {o}").reads for o in outputs)) if outputs else set()
    return [f"{s.depth}:{s.text}" for s in propagate_copies(bwd, keep)]


def test_copies_between_adjoints_go():
    assert propagated("0:a_bar = g_bar", "0:x_bar = a_bar * 2", "0:y_bar = a_bar.dot(w.T)") == [
        "0:x_bar = g_bar * 2",
        "0:y_bar = g_bar.dot(w.T)",
    ]
    assert propagated("1:a_bar = g_bar", "1:b_bar = a_bar", "1:w_bar += b_bar * y") == [
        "1:w_bar += g_bar * y"
    ]


@pytest.mark.parametrize(
    "lines,outputs",
    [
        (
            ("0:a_bar = g_bar", "0:g_bar = g_bar * 2", "0:x_bar = a_bar"),
            (),
        ),  # the source changes first
        (("0:a_bar = g_bar", "0:g_bar += 1.0", "0:x_bar = a_bar"), ()),  # += rebinds a Python float
        (
            ("0:a_bar = g_bar", "0:a_bar = acc(a_bar, h_bar)", "0:x_bar = a_bar"),
            (),
        ),  # assigned twice
        (
            (
                "0:a_bar = g_bar",
                "0:for t in reversed(r):",
                "1:x_bar = a_bar * 2",
                "1:g_bar = x_bar",
            ),
            (),
        ),  # in a loop
        (("0:if c:", "1:a_bar = g_bar", "0:x_bar = a_bar"), ()),  # used outside its block
        (("0:x_bar = a_bar", "0:a_bar = g_bar"), ()),  # used before (a loop's previous iteration)
        (("0:a_bar = g_bar",), ("finalize(a_bar, a)",)),  # a gradient the function returns
    ],
)
def test_copies_that_must_stay(lines, outputs):
    assert propagated(*lines, outputs=outputs) == list(lines)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
