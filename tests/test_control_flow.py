"""Control flow, mutation, calls and containers: each construct against finite differences.

One section per construct. The functions under test are module-level ``def``s (sourcegrad reads
their source); hypothesis draws seeds, sizes and trip counts, and each branchy function comes with
a plain-Python mirror that says which branch an input takes, so that a parametrized set of inputs
is proven to drive every branch. The oracle is ``tests/oracle.py`` (central differences in
float64), reached through ``tests/corpus/harness.py`` for dict/list/tuple arguments.
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import sourcegrad as sg

from .corpus.harness import check, check_value, check_vjp
from .oracle import assert_close, fd_grad

SEEDS = st.integers(0, 2**32 - 1)
SIZES = st.integers(1, 6)


def rng_of(seed):
    return np.random.default_rng(seed)


def with_sum(seed, n, lo, hi):
    """A random vector of length ``n`` whose sum lies in [lo, hi] (away from branch boundaries)."""
    rng = rng_of(seed)
    v = rng.normal(size=n)
    return v - v.mean() + rng.uniform(lo, hi) / n


# ==== branches ====================================================================================


def piecewise3(x):
    s = np.sum(x)
    if s > 1.0:
        y = np.sin(x) * s
    elif s > -1.0:
        y = x * x * 0.5
    else:
        y = np.tanh(x) - s
    return np.sum(y * x)


def piecewise3_branch(x):
    s = np.sum(x)
    return "hi" if s > 1.0 else "mid" if s > -1.0 else "lo"


def nested_if(x):
    s = np.sum(x)
    if s > 0:
        if x[0] > 0:
            y = x * s
        else:
            y = np.exp(x * 0.5)
    else:
        if x[0] > 0:
            y = np.sin(x) + s
        else:
            y = x ** 3
    return np.sum(y)


def nested_if_branch(x):
    return ("s+" if np.sum(x) > 0 else "s-") + ("x0+" if x[0] > 0 else "x0-")


def ternary(x):
    s = np.sum(x * x)
    y = np.sin(x) * s if s > 2.0 else np.cos(x) * x
    return np.sum(y)


def ternary_branch(x):
    return "then" if np.sum(x * x) > 2.0 else "else"


def bool_ops(x):
    s = np.sum(x)
    m = np.max(x)
    y = x
    if s > 0 and m < 1.0:
        y = y * 2.0
    if s < 0 or m > 1.0:
        y = np.tanh(y)
    if not s > 0:
        y = y + s * y
    return np.sum(y * y)


def bool_ops_branch(x):
    s, m = np.sum(x), np.max(x)
    return f"and={s > 0 and m < 1.0}, or={s < 0 or m > 1.0}, not={not s > 0}"


def one_armed(x):
    y = x * 2.0
    if np.sum(x) > 0:
        y = np.tanh(y) * x
    return np.sum(y)


def one_armed_branch(x):
    return "then" if np.sum(x) > 0 else "skip"


def scalar_branch(a, x):
    if a > 0.5:
        r = a * np.sum(x) + a * a
    else:
        r = np.sin(a) * np.sum(x * x)
    return r


def scalar_branch_branch(a, x):
    return "big" if a > 0.5 else "small"


def _sum_in(lo, hi):
    return lambda seed, n: (with_sum(seed, n, lo, hi),)


def _nested(s_sign, x0_sign):
    def make(seed, n):
        rng = rng_of(seed)
        n = max(n, 2)
        x0 = x0_sign * rng.uniform(0.5, 1.5)
        rest = rng.normal(size=n - 1)
        total = s_sign * rng.uniform(0.5, 2.0)
        rest = rest - rest.mean() + (total - x0) / (n - 1)
        return (np.concatenate([[x0], rest]),)

    return make


def _sumsq(lo, hi):
    def make(seed, n):
        rng = rng_of(seed)
        v = rng.normal(size=n)
        return (v / np.linalg.norm(v) * np.sqrt(rng.uniform(lo, hi)),)

    return make


def _bool_case(s_sign, m_big):
    def make(seed, n):
        rng = rng_of(seed)
        n = max(n, 3)
        while True:
            v = rng.uniform(-0.9, 0.9, size=n) if not m_big else rng.uniform(-2.0, 2.0, size=n)
            if m_big:
                v[0] = rng.uniform(1.3, 2.0)
            v = v - v.mean() + s_sign * rng.uniform(0.3, 1.0) / n
            m = v.max()
            if (m > 1.2) if m_big else (m < 0.9):
                return (v,)

    return make


def _scalar(lo, hi):
    return lambda seed, n: (float(rng_of(seed).uniform(lo, hi)), rng_of(seed + 1).normal(size=n))


# (function, mirror, {branch: make(seed, n) -> args})
BRANCHES = [
    (piecewise3, piecewise3_branch, {"hi": _sum_in(1.5, 3.0), "mid": _sum_in(-0.5, 0.5), "lo": _sum_in(-3.0, -1.5)}),
    (nested_if, nested_if_branch, {
        "s+x0+": _nested(1, 1), "s+x0-": _nested(1, -1), "s-x0+": _nested(-1, 1), "s-x0-": _nested(-1, -1)}),
    (ternary, ternary_branch, {"then": _sumsq(2.5, 5.0), "else": _sumsq(0.1, 1.5)}),
    (bool_ops, bool_ops_branch, {
        "and=True, or=False, not=False": _bool_case(1, False),
        "and=False, or=True, not=False": _bool_case(1, True),
        "and=False, or=True, not=True": _bool_case(-1, False),
    }),
    (one_armed, one_armed_branch, {"then": _sum_in(0.5, 2.0), "skip": _sum_in(-2.0, -0.5)}),
    (scalar_branch, scalar_branch_branch, {"big": _scalar(0.7, 2.0), "small": _scalar(-1.0, 0.3)}),
]
BRANCH_PARAMS = [
    pytest.param(f, mirror, branch, make, id=f"{f.__name__}-{branch}")
    for f, mirror, makers in BRANCHES
    for branch, make in makers.items()
]


@pytest.mark.parametrize("f, mirror, branch, make", BRANCH_PARAMS)
@given(seed=SEEDS, n=SIZES)
def test_branch(f, mirror, branch, make, seed, n):
    args = make(seed, n)
    assert mirror(*args) == branch  # this parameter drives this branch
    check(f, args)


def test_every_branch_is_driven():
    """The parametrized inputs above reach every combination each mirror can report."""
    for f, mirror, makers in BRANCHES:
        seen = {mirror(*make(seed, 4)) for make in makers.values() for seed in range(5)}
        assert seen == set(makers), f.__name__


def test_branch_on_scalar_wrt_both():
    check(scalar_branch, (0.9, np.array([0.3, -0.2])), wrt=(0, 1))
    check(scalar_branch, (0.1, np.array([0.3, -0.2])), wrt=(0, 1))


# ==== for loops ===================================================================================


def loop_n(x, n):
    y = x
    for i in range(n):
        y = np.tanh(y) * 1.5 + x * (i * 0.1)
    return np.sum(y * y)


def loop_ranges(x, a, b):
    s = np.sum(x) * 0.5
    for i in range(a, b):
        s = s * 0.9 + np.sum(np.sin(x * i))
    for i in range(b, a, -1):
        s = s + np.tanh(s) * x[i % x.shape[0]]
    for i in range(a, b, 2):
        s = s * x[0] + i
    for i in range(b - 1, -1, -1):
        s = np.sin(s) + x[-1] * i
    return s


def loop_defines(x, n):
    last = x
    for i in range(n):
        cur = np.sin(last) + i
        last = cur * x
    return np.sum(last)


def loop_rows(X, h0):
    h = h0
    for row in X:
        h = np.tanh(h * 0.5 + row)
    return np.sum(h)


def loop_enumerate_zip(x, y):
    s = 0.0
    for i, e in enumerate(x):
        s = s + e * (i + 1)
    for a, b in zip(x, y):
        s = s + np.sin(a) * b
    for e in reversed(x):
        s = s * 0.5 + e
    return s


def loop_over_list(x, ws):
    h = x
    for w in ws:
        h = np.tanh(w @ h)
    return np.sum(h)


def loop_elementwise_branch(x):
    s = 0.0
    for e in x:
        if e > 0:
            s = s + e * e
        else:
            s = s + np.sin(e)
    return s


@pytest.mark.parametrize("n", [0, 1, 2, 7])
@given(seed=SEEDS, size=SIZES)
def test_for_range_trip_counts(n, seed, size):
    check(loop_n, (rng_of(seed).normal(size=size), n))


@given(seed=SEEDS, a=st.integers(0, 5), b=st.integers(0, 5))
@example(seed=0, a=3, b=3).via("no trips")
@example(seed=0, a=0, b=1).via("one trip")
def test_for_range_bounds_from_arguments(seed, a, b):
    check(loop_ranges, (rng_of(seed).normal(size=3) * 0.5, a, b))


@given(seed=SEEDS, n=st.integers(1, 5))
def test_for_loop_defines_name_used_after(seed, n):
    check(loop_defines, (rng_of(seed).normal(size=3) * 0.5, n))


@given(seed=SEEDS, t=st.integers(0, 5), d=SIZES)
def test_for_over_array_rows(seed, t, d):
    rng = rng_of(seed)
    args = (rng.normal(size=(t, d)), rng.normal(size=d))
    check(loop_rows, args, wrt=(0, 1))


@given(seed=SEEDS, n=SIZES)
def test_for_enumerate_zip_reversed(seed, n):
    rng = rng_of(seed)
    check(loop_enumerate_zip, (rng.normal(size=n), rng.normal(size=n)), wrt=(0, 1))


@given(seed=SEEDS, layers=st.integers(0, 4), d=SIZES)
def test_for_over_list_argument(seed, layers, d):
    rng = rng_of(seed)
    ws = [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(layers)]
    check(loop_over_list, (rng.normal(size=d), ws), wrt=(0, 1) if layers else 0)


@given(seed=SEEDS, n=st.integers(2, 6))
def test_for_branch_per_element(seed, n):
    rng = rng_of(seed)
    x = rng.uniform(0.2, 1.5, size=n) * np.where(np.arange(n) % 2 == 0, 1, -1)
    rng.shuffle(x)
    assert (x > 0).any() and (x < 0).any()  # both branches run in one call
    check(loop_elementwise_branch, (x,))


# ==== nested loops ================================================================================


def triangular(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i):
            s = s + np.sin(x[i] * x[j])
    return s


def nested_buffer(x, m):
    n = x.shape[0]
    out = np.zeros((n, m))
    for i in range(n):
        a = x[i]
        for j in range(m):
            a = np.tanh(a * 1.3 + j * 0.1)
            out[i, j] = a * x[i]
    return np.sum(out * out)


def nested_carry(x, outer, inner):
    h = x
    for i in range(outer):
        g = h
        for j in range(inner):
            g = np.sin(g) * 0.9 + h * 0.1
        h = h + g * 0.5
    return np.sum(h)


@given(seed=SEEDS, n=st.integers(0, 5))
def test_nested_triangular(seed, n):
    check(triangular, (rng_of(seed).normal(size=n),))


@given(seed=SEEDS, n=SIZES, m=st.integers(0, 4))
def test_nested_buffer(seed, n, m):
    check(nested_buffer, (rng_of(seed).normal(size=n), m))


@given(seed=SEEDS, outer=st.integers(0, 4), inner=st.integers(0, 4))
def test_nested_loop_carried(seed, outer, inner):
    check(nested_carry, (rng_of(seed).normal(size=3), outer, inner))


# ==== while loops =================================================================================


def grow_until(x, limit):
    y = x
    while np.sum(y * y) < limit:
        y = y * 1.25 + 0.05 * np.sin(y)
    return np.sum(y * x)


def grow_steps(x, limit):
    """Mirror of ``grow_until``: its trip count."""
    y, k = x, 0
    while np.sum(y * y) < limit:
        y, k = y * 1.25 + 0.05 * np.sin(y), k + 1
    return k


def while_counter(x, n):
    k = 0
    y = x
    while k < n:
        y = np.cos(y) * x
        k += 1
    return np.sum(y)


def newton_sqrt(a):
    y = a * 0.5 + 0.5
    while np.max(np.abs(y * y - a)) > 1e-12:
        y = 0.5 * (y + a / y)
    return np.sum(y)


def while_break(x):
    y = x
    k = 0
    while k < 20:
        y = y * 1.5
        k = k + 1
        if np.sum(y * y) > 50.0:
            break
    return np.sum(np.sin(y))


def while_true_break(x):
    y = x
    while True:
        y = y * 1.3 + 0.1
        if np.sum(y) > 10.0:
            break
    return np.sum(y * y)


def while_continue(x):
    k = 0
    s = 0.0
    while k < 6:
        k = k + 1
        if k % 2 == 0:
            continue
        s = s + np.sum(np.sin(x * k))
    return s


@given(seed=SEEDS, n=SIZES, limit=st.floats(0.5, 40.0))
def test_while_data_dependent_trip_count(seed, n, limit):
    x = rng_of(seed).normal(size=n) * 0.5
    # keep finite differences from crossing a trip-count boundary
    y = x.copy()
    while np.sum(y * y) < limit:
        y = y * 1.25 + 0.05 * np.sin(y)
    if abs(np.sum(y * y) - limit) < 1e-3 or np.sum(x * x) < 1e-4:
        return
    check(grow_until, (x, limit))


def test_while_trip_counts_vary():
    rng = rng_of(0)
    counts = {grow_steps(rng.normal(size=3) * s, 10.0) for s in (0.01, 0.1, 1.0, 3.0)}
    assert len(counts) >= 3 and 0 in counts


@pytest.mark.parametrize("n", [0, 1, 5])
@given(seed=SEEDS)
def test_while_counter(n, seed):
    check(while_counter, (rng_of(seed).normal(size=3), n))


@given(seed=SEEDS, n=SIZES)
def test_while_newton_to_convergence(seed, n):
    a = rng_of(seed).uniform(0.1, 4.0, size=n)
    (g,) = check(newton_sqrt, (a,))
    assert_close(g, 0.5 / np.sqrt(a), 1e-6, 1e-9, what="d sqrt")


@given(seed=SEEDS, n=SIZES)
def test_while_break(seed, n):
    check(while_break, (rng_of(seed).normal(size=n) * 0.3 + 0.1,))


@given(seed=SEEDS, n=SIZES)
def test_while_true_break(seed, n):
    check(while_true_break, (rng_of(seed).uniform(0.1, 1.0, size=n),))


@given(seed=SEEDS, n=SIZES)
def test_while_continue(seed, n):
    check(while_continue, (rng_of(seed).normal(size=n),))


def double_until_large(x):
    y = x * 2
    while np.linalg.norm(y) < 100:
        y = y * 2
    return y


@given(seed=SEEDS, scale=st.sampled_from([1.0, 0.1, 0.01]))
def test_seed_dynamic_graph(seed, scale):
    """The tutorial: y = x * 2**k, so pullback(v) = v * 2**k exactly."""
    x = rng_of(seed).normal(size=3) * scale
    v = np.array([0.1, 1.0, 0.0001])
    y, pullback = sg.vjp(double_until_large)(x)
    k = 1
    while np.linalg.norm(x * 2.0**k) < 100:
        k += 1
    assert np.array_equal(y, x * 2.0**k)
    assert np.array_equal(pullback(v), v * 2.0**k)


def overwritten_by_constant_in_branch(y):
    v = np.sum(y)
    if y[0] > 0:
        v = 0.5
    return v * 2.0


def overwritten_by_constant_in_loop(y, n):
    v = np.sum(y * y)
    for j in range(n):
        v = np.tanh(j * 0.25)
    return v * 2.0 + np.sum(y)


def empty_inner_loop(x, k):
    for i in range(k):
        for j in range(0):
            x = np.cos(x)
    return np.sum(np.sin(x))


def rebinds_the_iterated_array(x):
    v = x * 1.0
    s = 0.0
    for e in v:
        s = s + e * e
        v = v * 2.0
    return s + np.sum(v)


@pytest.mark.parametrize("f, args", [
    pytest.param(overwritten_by_constant_in_branch, (np.array([0.5, -1.0, 2.0]),), id="constant-in-branch"),
    pytest.param(overwritten_by_constant_in_loop, (np.array([0.5, -1.0, 2.0]), 3), id="constant-in-loop"),
    pytest.param(overwritten_by_constant_in_loop, (np.array([0.5, -1.0, 2.0]), 0), id="constant-in-loop-no-trips"),
    pytest.param(empty_inner_loop, (np.array([0.5, -1.0, 2.0]), 2), id="empty-inner-loop"),
    pytest.param(rebinds_the_iterated_array, (np.array([0.5, -1.0, 2.0]),), id="rebind-iterated"),
])
def test_loop_edge_cases(f, args):
    check_value(f, args)
    check(f, args)


# ==== break / continue / early and multiple returns ===============================================


def for_break(x):
    s = 0.0
    for i in range(10):
        s = s + np.sum(np.sin(x * (i + 1)))
        if s > 1.5:
            break
    return s * np.sum(x)


def for_continue(x):
    s = 0.0
    for e in x:
        if e < 0:
            continue
        s = s + e * np.sin(e)
    return s


def inner_break(x):
    s = 0.0
    for i in range(4):
        for j in range(5):
            if j > i:
                break
            s = s + np.sum(x * j) * np.cos(s)
    return s


def nested_early_return(x):
    for i in range(5):
        for j in range(4):
            if np.sum(x) * (i + j) > 3.0:
                return np.sum(np.sin(x) * i) + j
    return np.sum(x ** 2)


def multi_return(x):
    s = np.sum(x)
    if s > 1.0:
        return np.sum(x * x) * s
    elif s > -1.0:
        return np.sum(np.tanh(x))
    return np.sum(np.exp(x * 0.5))


def return_in_while(x):
    y = x
    k = 0
    while k < 10:
        y = y * 1.2
        if np.sum(y) > 4.0:
            return np.sum(y * y) + k
        k += 1
    return np.sum(y)


def continue_and_break(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < -0.5:
            continue
        s = s + x[i] * x[i]
        if s > 2.0:
            break
    return s


@given(seed=SEEDS, n=SIZES)
def test_for_break(seed, n):
    check(for_break, (rng_of(seed).normal(size=n),))


@given(seed=SEEDS, n=SIZES)
def test_for_continue(seed, n):
    check(for_continue, (rng_of(seed).normal(size=n),))


@given(seed=SEEDS, n=SIZES)
def test_break_inner_loop_only(seed, n):
    check(inner_break, (rng_of(seed).normal(size=n) * 0.3,))


@pytest.mark.parametrize("scale", [0.05, 0.3, 1.0, -1.0])
@given(seed=SEEDS, n=SIZES)
def test_early_return_nested_loops(scale, seed, n):
    x = np.abs(rng_of(seed).normal(size=n)) * scale + 0.01 * np.sign(scale)
    check(nested_early_return, (x,))


@pytest.mark.parametrize("lo, hi", [(1.5, 3.0), (-0.5, 0.5), (-3.0, -1.5)], ids=["first", "second", "fallthrough"])
@given(seed=SEEDS, n=SIZES)
def test_multiple_returns(lo, hi, seed, n):
    check(multi_return, (with_sum(seed, n, lo, hi),))


@pytest.mark.parametrize("lo, hi", [(0.3, 1.0), (-1.0, -0.3)], ids=["returns-early", "runs-out"])
@given(seed=SEEDS, n=SIZES)
def test_return_inside_while(lo, hi, seed, n):
    check(return_in_while, (rng_of(seed).uniform(lo, hi, size=n),))


@given(seed=SEEDS, n=st.integers(1, 10))
def test_continue_and_break(seed, n):
    x = rng_of(seed).normal(size=n)
    x[np.abs(x + 0.5) < 0.05] += 0.2
    check(continue_and_break, (x,))


# ==== for/else and while/else are refused =========================================================


def for_else(x):
    for i in range(3):
        x = x * 2.0
    else:
        x = x + 1.0
    return np.sum(x)


def while_else(x):
    k = 0
    while k < 3:
        x = x * 2.0
        k += 1
    else:
        x = x + 1.0
    return np.sum(x)


@pytest.mark.parametrize("f", [for_else, while_else])
def test_loop_else_is_refused(f):
    with pytest.raises(sg.UnsupportedSyntaxError) as info:
        sg.grad(f)(np.ones(3))
    assert info.value.lineno is not None


# ==== mutation ====================================================================================


def fibonacci_like(x, n):
    a = x
    b = np.sin(x)
    for i in range(n):
        a, b = b, np.tanh(a + b)
    return np.sum(a * b)


def augmented_names(x, y):
    s = np.sum(x)
    s += np.sum(y * y)
    s *= 0.5
    s -= np.sum(np.sin(x))
    s /= 1.0 + np.sum(y * y)
    v = x * 1.0
    v += y
    v *= x
    v -= 0.5 * y
    return s + np.sum(v)


def augmented_subscripts(x):
    n = x.shape[0]
    buf = np.zeros(n)
    for i in range(n):
        buf[i] += x[i] * 2.0
        buf[i] *= x[i]
    buf[1:3] += x[0:2]
    buf[0:2] -= np.sin(x[1:3])
    buf[-1] += buf[0] * x[0]
    return np.sum(buf * buf)


def setitem_overwrite(x):
    a = np.zeros(3)
    a[0] = x[0]
    a[0] = a[0] * x[1]
    a[1] = np.sin(a[0]) + x[2]
    a[2] = a[1] * a[0]
    a[1] = x[0] * 3.0
    return np.sum(a * x[:3])


def relu_by_mask(x, w):
    h = x @ w
    h[h < 0] = 0
    return np.sum(h * h)


def prefix_sums(x):
    n = x.shape[0]
    c = np.zeros(n)
    c[0] = x[0]
    for i in range(1, n):
        c[i] = c[i - 1] * 0.9 + x[i]
    total = 0.0
    for i in range(n):
        total = total + c[i] * c[n - 1 - i]
    return total


def rows_buffer(X, w):
    t = X.shape[0]
    H = np.zeros((t, w.shape[0]))
    h = np.zeros(w.shape[0])
    for i in range(t):
        h = np.tanh(w * h + X[i])
        H[i] = h
    H[:, 0] = H[:, 0] * 2.0
    return np.sum(H @ w)


def copy_then_write(x):
    y = x.copy()
    y[0] = np.sin(y[0]) * x[-1]
    y[1:] = y[1:] * 2.0
    return np.sum(y * x)


def writes_argument(x):
    x[0] = x[0] * 2.0
    return np.sum(x * x)


@given(seed=SEEDS, n=st.integers(0, 6))
def test_tuple_swap_in_loop(seed, n):
    check(fibonacci_like, (rng_of(seed).normal(size=3), n))


@given(seed=SEEDS, n=SIZES)
def test_augmented_assignment_on_names(seed, n):
    rng = rng_of(seed)
    check(augmented_names, (rng.normal(size=n), rng.normal(size=n)), wrt=(0, 1))


@given(seed=SEEDS, n=st.integers(3, 6))
def test_augmented_assignment_on_subscripts(seed, n):
    check(augmented_subscripts, (rng_of(seed).normal(size=n),))


@given(seed=SEEDS)
def test_setitem_overwrites(seed):
    check(setitem_overwrite, (rng_of(seed).normal(size=3),))


@given(seed=SEEDS, n=SIZES, m=SIZES)
def test_mask_assignment(seed, n, m):
    rng = rng_of(seed)
    x, w = rng.normal(size=(n, 3)), rng.normal(size=(3, m))
    h = x @ w
    if np.min(np.abs(h)) < 1e-3:  # a kink under finite differences
        return
    check(relu_by_mask, (x, w), wrt=(0, 1))


@given(seed=SEEDS, n=SIZES)
def test_buffer_filled_and_read_back(seed, n):
    check(prefix_sums, (rng_of(seed).normal(size=n),))


@given(seed=SEEDS, t=st.integers(1, 5), d=SIZES)
def test_buffer_rows(seed, t, d):
    rng = rng_of(seed)
    check(rows_buffer, (rng.normal(size=(t, d)), rng.normal(size=d) * 0.5), wrt=(0, 1))


@given(seed=SEEDS, n=st.integers(2, 5))
def test_copy_then_write(seed, n):
    check(copy_then_write, (rng_of(seed).normal(size=n),))


def test_write_to_argument_refused_or_right():
    """Writing into an argument: either refused with a located error, or differentiated right."""
    x = np.array([0.5, -1.0, 2.0])
    try:
        g = sg.grad(writes_argument)(x.copy())
    except sg.UnsupportedSyntaxError:
        return
    assert_close(g, fd_grad(writes_argument, (x,), 0))


def shape_then_write(x):
    a = x.copy()
    n = a.shape[0]
    a[0] = a[1] * 2.0
    return np.sum(a * x) * n


def int_counter_augmented(x):
    s = 0.0
    for i in range(1, x.shape[0]):
        j = i
        j -= 1
        s = s + x[j] * x[i]
    return s


def fresh_buffer_each_iteration(x, n):
    y = x
    for k in range(n):
        z = np.zeros(x.shape[0])
        for i in range(x.shape[0]):
            z[i] = np.sin(y[i]) + y[i - 1]
        y = z
    return np.sum(y * y)


def buffer_appended_each_iteration(x):
    out = []
    for i in range(x.shape[0]):
        z = np.zeros(x.shape[0])
        z[i] = x[i] * 2.0  # written after the previous iteration's buffer was appended
        out.append(z)
    return np.sum(np.stack(out) * x)


def row_copied_then_written(x):
    b = np.zeros((2, x.shape[0]))
    r = x * 2.0
    b[0] = r  # b holds a copy of r's values, not r
    r[1] = 7.0
    return np.sum(b * x) + np.sum(r * x)


def helper_buffer_twice(x):
    h = fill_buffer(x)
    h = fill_buffer(h)
    return np.sum(h * h)


def fill_buffer(x):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = np.tanh(x[i]) * 2.0
    return out


def loop_over_buffer_then_write(x):
    b = x.copy()
    s = 0.0
    for e in b:
        s = s + e * e
    b[0] = s
    return np.sum(b * x)


def append_then_update(x):
    v = x * 1.0
    hs = []
    hs.append(v)
    v *= 2.0
    return np.sum(np.stack(hs)) + np.sum(v)


def test_append_then_update_in_place_is_refused():
    # the list holds the array itself, so Python's list sees the later update: refused, never wrong
    x = np.array([0.5, -1.0, 2.0])
    with pytest.raises(sg.UnsupportedSyntaxError, match="appended to the list"):
        sg.grad(append_then_update)(x)


def swap_through_temporary(x):
    a = x.copy()
    for j in range(a.shape[0] - 1):
        if a[j] > a[j + 1]:
            t = a[j]
            a[j] = a[j + 1]
            a[j + 1] = t
    return np.sum(a * np.arange(a.shape[0]))


def test_swap_through_temporary_refused_or_right():
    """t = a[j] may be a view (sourcegrad cannot know a is 1-D), so this may be refused; never wrong."""
    x = np.array([0.5, -1.0, 2.0, 0.1])
    try:
        check(swap_through_temporary, (x,))
    except sg.UnsupportedSyntaxError as e:
        assert "np.copy" in str(e)


def update_while_iterating(x):
    v = x * 1.0
    s = 0.0
    for e in v:
        s = s + e * e
        v += 1.0
    return s + np.sum(v)


def test_update_while_iterating_refused_in_the_users_words():
    x = np.array([0.5, -1.0, 2.0])
    with pytest.raises(sg.UnsupportedSyntaxError, match="'v' is updated in place inside a loop over it") as e:
        check(update_while_iterating, (x,))
    assert "_seq" not in str(e.value) and "np.copy(v)" in str(e.value), str(e.value)


@pytest.mark.parametrize("f, args", [
    pytest.param(shape_then_write, (np.array([0.5, -1.0, 2.0]),), id="shape-then-write"),
    pytest.param(int_counter_augmented, (np.array([0.5, -1.0, 2.0]),), id="int-augmented"),
    pytest.param(fresh_buffer_each_iteration, (np.array([0.5, -1.0, 2.0]), 3), id="fresh-buffer-in-loop"),
    pytest.param(helper_buffer_twice, (np.array([0.5, -1.0, 2.0]),), id="helper-buffer-twice"),
    pytest.param(buffer_appended_each_iteration, (np.array([0.5, -1.0, 2.0]),), id="buffer-appended-each-iteration"),
    pytest.param(row_copied_then_written, (np.array([0.5, -1.0, 2.0]),), id="row-copied-then-written"),
    pytest.param(loop_over_buffer_then_write, (np.array([0.5, -1.0, 2.0]),), id="loop-then-write"),
])
def test_mutation_edge_cases(f, args):
    check(f, args)


# ==== calls to user functions =====================================================================


def calls_later_helpers(x):
    a = scaled_sin(x)
    b = scaled_sin(x, scale=2.0)
    c = scaled_sin(scale=0.5, x=x)
    return outer_helper(a + b, c)


def helper_in_loop(x, n):
    s = 0.0
    for i in range(n):
        s = s + branchy_helper(x * (i + 1) * 0.3)
    return s


def helper_tuple(x):
    m, v = moments(x)
    return m * v + np.sum(x) * m


def scaled_sin(x, scale=1.0):
    return np.sin(x) * scale


def outer_helper(a, b):
    return np.sum(inner_helper(a) * b)


def inner_helper(a):
    return np.tanh(a) + a * 0.5


def branchy_helper(v):
    s = np.sum(v)
    if s > 0:
        return s * s
    for i in range(2):
        v = np.sin(v)
    return np.sum(v)


def until_large(v):
    k = 0
    while True:
        v = v * 1.5
        k += 1
        if np.sum(v * v) > 4.0 or k > 5:
            return np.sum(v)


def helper_while_true_in_loop(x):
    t = 0.0
    for i in range(3):
        t = t + until_large(x * (i + 1))
    return t


def enumerate_early_return(x):
    for i, e in enumerate(x):
        if e > 0.5:
            return e * i + np.sum(x)
    return np.sum(x * x)


def moments(x):
    m = np.mean(x)
    d = x - m
    return m, np.mean(d * d)


@given(seed=SEEDS, n=SIZES)
def test_helpers_defined_after_with_defaults_and_keywords(seed, n):
    check(calls_later_helpers, (rng_of(seed).normal(size=n),))


@given(seed=SEEDS, n=SIZES, k=st.integers(0, 4))
def test_helper_with_branches_and_loops_called_in_loop(seed, n, k):
    check(helper_in_loop, (rng_of(seed).normal(size=n), k))


@given(seed=SEEDS, n=SIZES)
def test_helper_with_while_true_and_return_called_in_loop(seed, n):
    check(helper_while_true_in_loop, (rng_of(seed).normal(size=n) * 0.3,))


@given(seed=SEEDS, n=SIZES)
def test_early_return_from_enumerate(seed, n):
    x = rng_of(seed).uniform(-1.0, 1.0, size=n)
    x[np.abs(x - 0.5) < 0.02] = 0.0
    check(enumerate_early_return, (x,))


@given(seed=SEEDS, n=st.integers(2, 6))
def test_helper_returning_tuple_refused_or_right(seed, n):
    """Returning a tuple from a helper is a documented limitation: refused, never wrong."""
    try:
        check(helper_tuple, (rng_of(seed).normal(size=n),))
    except sg.UnsupportedSyntaxError as e:
        assert e.lineno is not None


def constant_to_branching_helper(x):
    return scale_if_small(x, 0.5) + scale_if_small(x, 2.0)


def scale_if_small(a, c):
    if c < 1.0:
        a = a * 2.0
    return np.sum(np.sin(a))


def test_constant_argument_to_branching_helper():
    check(constant_to_branching_helper, (np.array([0.5, -1.0, 2.0]),))


# ==== containers ==================================================================================


def mlp(params, x):
    h = np.tanh(x @ params["W1"] + params["b1"])
    out = h @ params["W2"] + params["b2"]
    return np.mean(out * out)


def deep_mlp(layers, x):
    h = x
    for layer in layers:
        h = np.tanh(h @ layer["W"] + layer["b"])
    return np.sum(h * h)


def tuple_arg(t, x):
    a, b = t
    return np.sum(np.sin(a * x) * b)


def stack_appended(x, n):
    hs = []
    h = x
    for i in range(n):
        h = np.tanh(h * 1.1 + i * 0.1)
        hs.append(h)
    hs.append(x * 2.0)
    return np.sum(np.stack(hs) ** 2)


def concat_appended(x, n):
    parts = []
    for i in range(n):
        parts.append(x[i:] * (i + 1.0))
    parts.append(np.sin(x))
    return np.sum(np.concatenate(parts) * 0.5)


def sum_appended(x, n):
    terms = []
    for i in range(n):
        terms.append(np.sum(x ** (i + 1)))
    terms.append(np.sum(x) * 0.0)
    return sum(terms)


def unpacking(x):
    a, b, c = x[0], x[1], x[2]
    lo, hi = np.min(x), np.max(x)
    a, b = b * c, a
    return a * b + np.sin(c) * lo * hi


def unpacking_nested(x):
    a, b, c = x[0], x[1], x[2]
    (p, q), r = (a * b, b * c), np.sin(c)
    return p + q * r


def index_tuple_literal(x):
    p = (x[0] * x[1], x[2])[0]  # the other entry gets no gradient
    return p * x[3]


def chained_unpacking(x):
    p, q = r, s = (x[0] * x[1], x[2])
    return p * s + q * np.sin(r)


def unpacking_tuple_variable(x):
    t = (x[0] * 2.0, x[1])
    p, q = t
    return p * q + x[2]


def list_comprehension(x):
    ys = [np.sin(e) * e for e in x]
    return sum(ys)


def comprehension_range(x):
    ys = [x[i] * x[i + 1] for i in range(x.shape[0] - 1)]
    return np.sum(np.stack(ys))


def list_literal(x):
    outs = [x * 1.0, np.sin(x)]
    return np.sum(outs[0] * outs[1])


def appended_list_used_twice(x):
    outs = []
    for i in range(3):
        outs.append(np.sin(x * (i + 1)))
    return np.sum(sum(outs)) + np.sum(np.stack(outs) ** 2)


def generator_expression(x):
    return sum(e * e for e in x)


def _mlp_params(rng, d, h, o):
    return {"W1": rng.normal(size=(d, h)), "b1": rng.normal(size=h),
            "W2": rng.normal(size=(h, o)), "b2": rng.normal(size=o)}


@given(seed=SEEDS, d=SIZES, h=SIZES, o=st.integers(1, 3))
def test_dict_params(seed, d, h, o):
    rng = rng_of(seed)
    check(mlp, (_mlp_params(rng, d, h, o), rng.normal(size=(4, d))), wrt=(0, 1))


@given(seed=SEEDS, depth=st.integers(1, 4), d=SIZES)
def test_list_of_dicts(seed, depth, d):
    rng = rng_of(seed)
    layers = [{"W": rng.normal(size=(d, d)) / np.sqrt(d), "b": rng.normal(size=d)} for _ in range(depth)]
    check(deep_mlp, (layers, rng.normal(size=d)))


@given(seed=SEEDS, n=SIZES)
def test_tuple_wrt(seed, n):
    rng = rng_of(seed)
    check(tuple_arg, ((rng.normal(size=n), rng.normal(size=n)), rng.normal(size=n)), wrt=("t", "x"))


@pytest.mark.parametrize("f", [stack_appended, concat_appended, sum_appended])
@given(seed=SEEDS, n=st.integers(0, 4))
def test_lists_built_with_append(f, seed, n):
    x = rng_of(seed).uniform(0.2, 1.0, size=4)
    check(f, (x, n))


@given(seed=SEEDS)
def test_tuple_unpacking(seed):
    x = rng_of(seed).normal(size=3)
    x[np.argsort(x)] += np.array([0.0, 0.1, 0.2])  # no ties for min/max
    check(unpacking, (x,))


@pytest.mark.parametrize("f", [list_comprehension, comprehension_range, generator_expression])
@given(seed=SEEDS, n=st.integers(2, 5))
def test_comprehensions(f, seed, n):
    check(f, (rng_of(seed).normal(size=n),))


# Container forms that once crashed: fixed inputs.


@pytest.mark.parametrize("f", [
    pytest.param(unpacking_nested),
    pytest.param(index_tuple_literal),
    pytest.param(chained_unpacking),
    pytest.param(unpacking_tuple_variable),
    pytest.param(list_literal),
    pytest.param(appended_list_used_twice),
])
def test_container_forms(f):
    check(f, (np.array([0.7, -0.4, 1.3, 0.2]),))


def items_loop(p, x):
    s = 0.0
    for name, w in p.items():
        s = s + np.sum(np.tanh(w * x))
    for w in p.values():
        s = s + np.sum(np.sin(w) * x)
    return s


def nested_params(p, x):
    h = x
    for layer in p["layers"]:
        h = np.tanh(h @ layer)
    return np.sum(h * p["out"])


def zip_lists(xs, ys):
    s = 0.0
    for a, b in zip(xs, ys):
        s = s + np.sum(a * b)
    return s


def with_print(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(x * i)
        print("step", i, s)
    return s


@given(seed=SEEDS, n=SIZES)
def test_dict_items_and_values_loops(seed, n):
    rng = rng_of(seed)
    check(items_loop, ({"a": rng.normal(size=n), "b": rng.normal(size=n)}, rng.normal(size=n)), wrt=(0, 1))


@given(seed=SEEDS, depth=st.integers(1, 3), d=SIZES)
def test_nested_containers(seed, depth, d):
    rng = rng_of(seed)
    p = {"layers": [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(depth)], "out": rng.normal(size=d)}
    check(nested_params, (p, rng.normal(size=d)), wrt=(0, 1))


def test_nested_containers_with_an_empty_list():
    p = {"layers": [], "out": np.array([0.5, -1.0])}
    check(nested_params, (p, np.array([0.3, 0.2])), wrt=(0, 1))


@given(seed=SEEDS, m=st.integers(1, 4), n=SIZES)
def test_zip_over_lists(seed, m, n):
    rng = rng_of(seed)
    xs, ys = [rng.normal(size=n) for _ in range(m)], [rng.normal(size=n) for _ in range(m)]
    check(zip_lists, (xs, ys), wrt=(0, 1))


def test_print_inside_differentiated_code(capsys):
    x = np.array([0.5, -1.0, 2.0])
    check(with_print, (x,))
    assert "step 2" in capsys.readouterr().out


# ==== custom Functions, no_grad, stop_gradient ====================================================


class MyReLU(sg.Function):
    """The seed's custom ReLU."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.maximum(x, 0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        grad_input = grad_output.copy()
        grad_input[x < 0] = 0
        return grad_input


class ScaledMul(sg.Function):
    """Two inputs, a gradient for each."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b * 2.0

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b * 2.0, g * a * 2.0


def relu_net(x, w1, w2):
    h = MyReLU.apply(x @ w1)
    return np.sum((h @ w2) ** 2)


def function_in_loop(x, n):
    y = x
    for i in range(n):
        y = ScaledMul.apply(np.tanh(y), x) + MyReLU.apply(y)
    return np.sum(y)


@given(seed=SEEDS, n=SIZES)
def test_custom_function_relu(seed, n):
    rng = rng_of(seed)
    x, w1, w2 = rng.normal(size=(n, 3)), rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    if np.min(np.abs(x @ w1)) < 1e-3:
        return
    check(relu_net, (x, w1, w2), wrt=(0, 1, 2))


@given(seed=SEEDS, n=st.integers(0, 3))
def test_custom_function_in_loop(seed, n):
    x = rng_of(seed).uniform(0.1, 0.6, size=3)  # MyReLU away from its kink
    check(function_in_loop, (x, n))


def no_grad_scale(x):
    with sg.no_grad():
        c = np.sum(x * x)
        d = np.tanh(c)
    return np.sum(np.sin(x) * c) + d * np.sum(x)


def no_grad_scale_ref(x, x0):
    c = np.sum(x0 * x0)
    d = np.tanh(c)
    return np.sum(np.sin(x) * c) + d * np.sum(x)


def stop_gradient_norm(x, n):
    y = x
    for i in range(n):
        y = np.tanh(y * 1.5) / sg.stop_gradient(np.linalg.norm(y))
    return np.sum(y * x)


def stop_gradient_norm_ref(x, n, x0):
    y, y0 = x, x0
    for i in range(n):
        y, y0 = np.tanh(y * 1.5) / np.linalg.norm(y0), np.tanh(y0 * 1.5) / np.linalg.norm(y0)
    return np.sum(y * x)


@given(seed=SEEDS, n=SIZES)
def test_no_grad(seed, n):
    x = rng_of(seed).normal(size=n)
    g = sg.grad(no_grad_scale)(x)
    assert_close(g, fd_grad(no_grad_scale_ref, (x, x.copy()), 0))


@given(seed=SEEDS, n=SIZES, k=st.integers(0, 3))
def test_stop_gradient(seed, n, k):
    x = rng_of(seed).normal(size=n) + 0.1
    g = sg.grad(stop_gradient_norm)(x, k)
    assert_close(g, fd_grad(stop_gradient_norm_ref, (x, k, x.copy()), 0))


# ==== vector-Jacobian products of non-scalar outputs ==============================================


def rnn_states(X, w):
    t = X.shape[0]
    H = np.zeros((t, w.shape[0]))
    h = np.zeros(w.shape[0])
    for i in range(t):
        h = np.tanh(w * h + X[i])
        H[i] = h
    return H


def elementwise_branches(x):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        if x[i] > 0:
            out[i] = np.sqrt(x[i] + 1.0)
        else:
            out[i] = np.exp(x[i]) * x[i]
    return out


def vector_while(x):
    y = x
    while np.sum(y * y) < 5.0:
        y = y * 1.5 + np.sin(y) * 0.1
    return y * x


def dict_out_of_loop(p, x):
    h = x
    for i in range(3):
        h = np.tanh(h @ p["W"] + p["b"] * i)
    return h


@given(seed=SEEDS, t=st.integers(1, 5), d=SIZES)
def test_vjp_rnn_states(seed, t, d):
    rng = rng_of(seed)
    X, w = rng.normal(size=(t, d)), rng.normal(size=d) * 0.5
    check_vjp(rnn_states, (X, w), rng.normal(size=(t, d)), wrt=(0, 1))


@given(seed=SEEDS, n=SIZES)
def test_vjp_elementwise_branches(seed, n):
    rng = rng_of(seed)
    x = rng.normal(size=n)
    x[np.abs(x) < 0.01] = 0.5
    check_vjp(elementwise_branches, (x,), rng.normal(size=n))


@given(seed=SEEDS, n=SIZES)
def test_vjp_while(seed, n):
    rng = rng_of(seed)
    x = rng.normal(size=n) * 0.3 + 0.05
    y = x
    while np.sum(y * y) < 5.0:
        y = y * 1.5 + np.sin(y) * 0.1
    if np.sum(y * y) - 5.0 < 1e-3:
        return  # a trip-count boundary under finite differences
    check_vjp(vector_while, (x,), rng.normal(size=n))


@given(seed=SEEDS, d=SIZES)
def test_vjp_dict_wrt(seed, d):
    rng = rng_of(seed)
    p = {"W": rng.normal(size=(d, d)) / np.sqrt(d), "b": rng.normal(size=d)}
    check_vjp(dict_out_of_loop, (p, rng.normal(size=(2, d))), rng.normal(size=(2, d)), wrt=(0, 1))


# ==== the value that value_and_grad returns =======================================================


def returns_reassigned(x):
    s = x
    s = s * 2.0
    return s


def returns_loop_accumulator(x, n):
    s = 0.0
    for i in range(n):
        s = s + x
    return s


def returns_fresh(x, n):
    s = 0.0
    for i in range(n):
        s = s + x
    return s * 1.0


@pytest.mark.parametrize("f, args", [
    pytest.param(returns_reassigned, (1.5,), id="reassigned"),
    pytest.param(returns_loop_accumulator, (1.5, 3), id="loop-accumulator"),
    pytest.param(returns_fresh, (1.5, 3), id="fresh-temporary"),
    pytest.param(loop_ranges, (np.array([0.3, -0.2, 0.5]), 1, 4), id="loop_ranges"),
    pytest.param(piecewise3, (np.array([0.3, -0.2, 0.5]),), id="piecewise3"),
    pytest.param(prefix_sums, (np.array([0.3, -0.2, 0.5]),), id="prefix_sums"),
    pytest.param(mlp, (_mlp_params(rng_of(0), 2, 3, 1), np.ones((2, 2))), id="mlp"),
])
def test_value_and_grad_value(f, args):
    check_value(f, args)


# ==== user names that generated code also uses ====================================================


def named_acc(x, m):
    s = 0.0
    acc = x
    for j in range(m):
        acc = np.tanh(acc)
        s = s + acc * x
    return np.sum(s)


def named_ZERO(x, m):
    s = 0.0
    ZERO = x
    for j in range(m):
        ZERO = np.tanh(ZERO)
        s = s + ZERO * x
    return np.sum(s)


def named_tape(x, m):
    s = 0.0
    _tape = x
    for j in range(m):
        _tape = np.tanh(_tape)
        s = s + _tape * x
    return np.sum(s)


def named_finalize(x, m):
    s = 0.0
    finalize = x
    for j in range(m):
        finalize = np.tanh(finalize)
        s = s + finalize * x
    return np.sum(s)


def named_like_adjoints(x, m):
    s = 0.0
    x_bar = x
    _t0 = x * 0.5
    for j in range(m):
        x_bar = np.tanh(x_bar) + _t0
        s = s + x_bar * x
    return np.sum(s)


@pytest.mark.parametrize("f", [
    pytest.param(named_acc),
    pytest.param(named_ZERO),
    pytest.param(named_tape),
    pytest.param(named_finalize),
    named_like_adjoints,
])
def test_user_names_never_collide_with_generated_names(f):
    check(f, (np.array([0.5, -1.0, 2.0]), 2))


def test_wrt_one_tuple_gives_a_tuple():
    x = np.array([0.3, -0.2, 0.5])
    g = sg.grad(piecewise3, wrt=(0,))(x)
    assert isinstance(g, tuple) and len(g) == 1
    assert_close(g[0], fd_grad(piecewise3, (x,), 0))


# Broadcast adjoints summed late: a temporary made by a broadcasting binary operation may keep
# its adjoint in the larger shape; the operation that made it sums it down. These chains mix
# shapes (3, 1), (1, 4), (4,), () so that every kind of broadcast happens at every link.


def broadcast_chain(a, b, c):
    return np.sum(np.tanh(a * b + c) * (a - c / (2.0 + b * b)))


def broadcast_chain_in_loop(a, b, c, n):
    y = a * 1.0
    for _ in range(n):
        y = np.tanh(y * b + c - a)  # y grows from a's shape to the broadcast shape
    return np.sum(y * y)


def _blend(p, q):
    return p * q + (1.0 - p)


def broadcast_helper_in_loop(a, b, c, n):
    y = c * 1.0
    s = 0.0
    for _ in range(n):
        y = np.tanh(_blend(a, y) - b * c)
        s = s + np.sum(y * a)
    return s + np.sum(y)


def broadcast_temp_read_twice(a, b, c):
    # a * b is a temporary read twice inside _blend: against c (it may broadcast) and against a
    # number; its adjoint gets an exact part and a broadcast part, which must not be mixed
    return np.sum(np.tanh(_blend(a * b, c)))


def broadcast_with_scalar(a, b, c):
    # a * 2.0: the number operand keeps a's shape, so that rule drops its own unbroadcast, and
    # the adjoint of the temporary it makes must come back exact
    return np.sum(np.cos(a * 2.0 - c) * b)


BROADCAST_SHAPES = st.sampled_from([(3, 1), (1, 4), (4,), (), (3, 4), (1, 1)])


@pytest.mark.parametrize("f, loops", [(broadcast_chain, False), (broadcast_with_scalar, False),
                                      (broadcast_temp_read_twice, False),
                                      (broadcast_chain_in_loop, True), (broadcast_helper_in_loop, True)])
@given(seed=SEEDS, shapes=st.tuples(BROADCAST_SHAPES, BROADCAST_SHAPES, BROADCAST_SHAPES), n=st.integers(0, 3))
def test_broadcast_adjoints_summed_late(f, loops, seed, shapes, n):
    rng = rng_of(seed)
    args = tuple(rng.uniform(0.2, 1.0, size=s) for s in shapes) + ((n,) if loops else ())
    check(f, args, wrt=(0, 1, 2))


def broadcast_after_reduction_and_dot(a, b, c, d):
    # temporaries made by a reduction and by dot (not broadcasting rules) broadcast against c:
    # their adjoints must be summed to their own shapes at once
    return np.sum(np.sum(a * b, axis=-1) * c) + np.sum(np.dot(a, b) * d)


@given(seed=SEEDS, rows=st.integers(1, 3), cols=st.integers(1, 3), outer=st.integers(2, 3))
def test_broadcast_against_reductions_and_dot(seed, rows, cols, outer):
    rng = rng_of(seed)
    args = (rng.normal(size=(rows, cols)), rng.normal(size=cols), rng.normal(size=(outer, rows)),
            rng.normal(size=(outer, rows)))
    check(broadcast_after_reduction_and_dot, args, wrt=(0, 1, 2, 3))


def test_broadcast_temporary_keeps_no_shape():
    # the temporary w * y is summed by its own rule: nothing keeps its shape, no unbroadcast to it
    def f(w, x, y):
        for _ in range(3):
            y = np.tanh(w * y + x)
        return np.sum(y)

    text = sg.source(sg.value_and_grad(f, wrt=(0, 1)))
    assert "shape_of" not in text and "unbroadcast(_t1_bar, _t0)" not in text, text
