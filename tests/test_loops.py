"""Loops: `for` over ranges, arrays, lists, `enumerate`/`zip`/`reversed`; nested loops; `while`;
`break`, `continue`, early and multiple returns; `for`/`while` with `else` refused. Each
against finite differences, over drawn trip counts.
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import sourcegrad as sg

from .corpus.harness import check, check_value
from .oracle import assert_close, fd_grad
from .flow import SEEDS, SIZES, rng_of, with_sum


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


@pytest.mark.parametrize(
    "f, args",
    [
        pytest.param(
            overwritten_by_constant_in_branch,
            (np.array([0.5, -1.0, 2.0]),),
            id="constant-in-branch",
        ),
        pytest.param(
            overwritten_by_constant_in_loop, (np.array([0.5, -1.0, 2.0]), 3), id="constant-in-loop"
        ),
        pytest.param(
            overwritten_by_constant_in_loop,
            (np.array([0.5, -1.0, 2.0]), 0),
            id="constant-in-loop-no-trips",
        ),
        pytest.param(empty_inner_loop, (np.array([0.5, -1.0, 2.0]), 2), id="empty-inner-loop"),
        pytest.param(
            rebinds_the_iterated_array, (np.array([0.5, -1.0, 2.0]),), id="rebind-iterated"
        ),
    ],
)
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
    return np.sum(x**2)


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


@pytest.mark.parametrize(
    "lo, hi", [(1.5, 3.0), (-0.5, 0.5), (-3.0, -1.5)], ids=["first", "second", "fallthrough"]
)
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


# ==== the iterable is evaluated once, before the loop ==============================================
# Python reads `for <target> in <iterable>`'s iterable (each operand of enumerate, zip, reversed)
# once, before the first trip: a target or a body that rebinds a name the iterable reads changes
# neither the object iterated nor the trip count.


def target_is_the_iterable(x):
    for x in x:
        pass
    return np.sum(x**2)


def enumerate_target_is_the_iterable(v):
    s = 0.0
    for i, v in enumerate(v):
        s = s + np.sum(v) * i
    return s + np.sum(v)


def zip_target_is_an_operand(x):
    y = x * 2.0
    s = 0.0
    for a, y in zip(x, y):
        s = s + np.sum(a * y)
    return s + np.sum(y)


def enumerate_zip_target_is_an_operand(x):
    y = np.sin(x)
    s = 0.0
    for i, (y, b) in enumerate(zip(y, x)):
        s = s + np.sum(y * b) * (i + 1)
    return s + np.sum(y)


def reversed_target_is_the_iterable(x):
    s = 0.0
    for x in reversed(x):
        s = s * 0.5 + np.sum(np.sin(x))
    return s + np.sum(x)


def body_rebinds_the_iterable(x):
    s = 0.0
    for r in x:
        x = x * 0.5
        s = s + np.sum(r**2)
    return s + np.sum(x)


def body_rebinds_a_list_literal_entry(x):
    a = x[0]
    b = x[-1]
    s = 0.0
    for r in [a, b]:
        b = b * 3.0
        s = s + np.sum(r * b)
    return s


def body_rebinds_a_zip_operand(x):
    y = np.cos(x)
    s = 0.0
    for a, b in zip(x, y):
        y = y * 2.0
        s = s + np.sum(a * b) + np.sum(y)
    return s


def _each_row(v):
    for v in v:
        pass
    return v


def inlined_helper_target_is_the_iterable(x):
    return np.sum(_each_row(x) ** 2)


def comprehension_target_is_the_iterable(x):
    ys = [x * 2.0 for x in x]
    return np.sum(np.stack(ys) ** 2) + np.sum(x)


def nested_comprehension_reads_the_outer_target(x):
    ys = [np.sin(x) for x in x for x in x]
    return sum(np.sum(y) for y in ys) + np.sum(x)


def generator_target_is_the_iterable(x):
    return sum(np.sum(x**3) for x in x) + np.sum(x)


ITERABLE_ONCE = [
    target_is_the_iterable,
    enumerate_target_is_the_iterable,
    zip_target_is_an_operand,
    enumerate_zip_target_is_an_operand,
    reversed_target_is_the_iterable,
    body_rebinds_the_iterable,
    body_rebinds_a_list_literal_entry,
    body_rebinds_a_zip_operand,
    inlined_helper_target_is_the_iterable,
    comprehension_target_is_the_iterable,
    nested_comprehension_reads_the_outer_target,
    generator_target_is_the_iterable,
]


@pytest.mark.parametrize("f", ITERABLE_ONCE, ids=lambda f: f.__name__)
@given(seed=SEEDS, shape=st.sampled_from([(2, 2), (3, 3), (4, 2), (2, 2, 2), (3, 2, 4)]))
@example(seed=0, shape=(2, 2)).via("the first reported case")
def test_the_iterable_is_read_once_before_the_loop(f, seed, shape):
    x = rng_of(seed).normal(size=shape)
    check_value(f, (x,))
    check(f, (x,))


# ==== for/else and while/else (more in test_lang_statements.py) ===================================


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
def test_loop_else_runs_when_the_loop_is_not_broken(f):
    x = np.array([0.5, -0.25, 1.5])
    check_value(f, (x,))
    check(f, (x,))


def twelve_nested(x):
    s = 0.0
    for a in range(2):
        for b in range(2):
            for c in range(2):
                for d in range(2):
                    for e in range(2):
                        for f in range(2):
                            for g in range(2):
                                for h in range(2):
                                    for i in range(2):
                                        for j in range(2):
                                            for k in range(2):
                                                for m in range(2):
                                                    t = (
                                                        a
                                                        + b
                                                        + c
                                                        + d
                                                        + e
                                                        + f
                                                        + g
                                                        + h
                                                        + i
                                                        + j
                                                        + k
                                                        + m
                                                    )
                                                    s = s + np.sin(x * t * 0.01)
    return s


def test_nested_unrolled_loops_share_one_budget():
    """Each loop of 2 trips is under the unroll limit, but unrolled inside one another they would
    repeat the body 4,096 times (30 s to compile): past the budget a loop stays a loop."""
    from sourcegrad.transforms.normalize.loops import UNROLL_BUDGET

    x = 0.7
    g = sg.grad(twelve_nested)
    assert_close(g(x), fd_grad(twelve_nested, (x,), 0))
    assert sg.source(g).count("np.sin(") <= UNROLL_BUDGET
