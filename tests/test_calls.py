"""Calls to your own functions (inlined: defaults, keywords, branches and loops inside, tuples
returned) and user names that generated code also uses. Each against finite differences.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg

from .corpus.harness import check
from .oracle import assert_close, fd_grad
from .flow import SEEDS, SIZES, rng_of
from .test_branches import piecewise3


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


@pytest.mark.parametrize(
    "f",
    [
        pytest.param(named_acc),
        pytest.param(named_ZERO),
        pytest.param(named_tape),
        pytest.param(named_finalize),
        named_like_adjoints,
    ],
)
def test_user_names_never_collide_with_generated_names(f):
    check(f, (np.array([0.5, -1.0, 2.0]), 2))


def test_wrt_one_tuple_gives_a_tuple():
    x = np.array([0.3, -0.2, 0.5])
    g = sg.grad(piecewise3, wrt=(0,))(x)
    assert isinstance(g, tuple) and len(g) == 1
    assert_close(g[0], fd_grad(piecewise3, (x,), 0))
