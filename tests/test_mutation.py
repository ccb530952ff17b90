"""Mutation: reassignment, augmented assignment, writes into buffers the function allocated,
masks; writes another name could observe are refused. Each against finite differences.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg

from .corpus.harness import check
from .oracle import assert_close, fd_grad
from .flow import SEEDS, SIZES, rng_of


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
    with pytest.raises(
        sg.UnsupportedSyntaxError, match="'v' is updated in place inside a loop over it"
    ) as e:
        check(update_while_iterating, (x,))
    assert "_seq" not in str(e.value) and "np.copy(v)" in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "f, args",
    [
        pytest.param(shape_then_write, (np.array([0.5, -1.0, 2.0]),), id="shape-then-write"),
        pytest.param(int_counter_augmented, (np.array([0.5, -1.0, 2.0]),), id="int-augmented"),
        pytest.param(
            fresh_buffer_each_iteration, (np.array([0.5, -1.0, 2.0]), 3), id="fresh-buffer-in-loop"
        ),
        pytest.param(helper_buffer_twice, (np.array([0.5, -1.0, 2.0]),), id="helper-buffer-twice"),
        pytest.param(
            buffer_appended_each_iteration,
            (np.array([0.5, -1.0, 2.0]),),
            id="buffer-appended-each-iteration",
        ),
        pytest.param(
            row_copied_then_written, (np.array([0.5, -1.0, 2.0]),), id="row-copied-then-written"
        ),
        pytest.param(
            loop_over_buffer_then_write, (np.array([0.5, -1.0, 2.0]),), id="loop-then-write"
        ),
    ],
)
def test_mutation_edge_cases(f, args):
    check(f, args)
