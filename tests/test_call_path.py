"""The call wrapper's fast path: a call whose arguments have the types, shapes and dtypes of an
earlier call that passed every check runs the code that call ran, after the captured-value guard
alone. Each test here makes a first call that fills that cache and a second that must still be
checked, compiled again or converted as a first call would be.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg

from .oracle import assert_close, fd_grad

SCALE = 2.0


def scaled_sum(x, c):
    return np.sum(np.tanh(x * c) * SCALE)


def act(x):
    return np.tanh(x)


def through_act(x):
    return np.sum(act(x) * x)


@pytest.mark.parametrize("specialize", [True, False])
def test_an_int_array_after_a_float_one_is_refused(specialize):
    df = sg.grad(scaled_sum, specialize=specialize)
    c = np.ones(3)
    df(np.ones(3), c)
    with pytest.raises(sg.WrtError):
        df(np.ones(3, dtype=int), c)


def test_an_int_after_a_float_is_refused():
    df = sg.grad(lambda x, c: x * np.sum(c))
    assert df(2.0, np.ones(2)) == 2.0
    with pytest.raises(sg.WrtError):
        df(2, np.ones(2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_gradient_has_each_calls_dtype(dtype):
    df = sg.grad(scaled_sum)
    x, c = np.linspace(-1, 1, 4), np.full(4, 0.5)
    df(x, c)  # float64 first: the second call's key differs by dtype only
    g = df(x.astype(dtype), c)
    assert g.dtype == dtype
    assert_close(g, fd_grad(scaled_sum, (x, c), 0), rtol=1e-3 if dtype == np.float32 else 1e-5)


def test_a_rebound_global_is_seen_after_the_fast_path():
    global act
    df = sg.grad(through_act)
    x = np.linspace(-1, 1, 5)
    df(x)
    df(x)
    saved = act
    try:
        act = lambda x: np.sin(x)  # noqa: E731 — what `act` calls is a compile-time decision
        assert_close(df(x), fd_grad(through_act, (x,), 0))
    finally:
        act = saved
    assert_close(df(x), fd_grad(through_act, (x,), 0))


class Model:
    def __init__(self, k):
        self.k = k

    def loss(self, x):
        return np.sum(np.sin(x) * self.k)


def test_bound_methods_take_the_fast_path_with_their_object():
    m = Model(3.0)
    df = sg.grad(m.loss)
    x = np.linspace(0, 1, 3)
    for _ in range(2):
        assert_close(df(x), fd_grad(m.loss, (x,), 0))


def test_a_wrong_argument_count_still_fails_every_time():
    df = sg.grad(scaled_sum)
    df(np.ones(2), np.ones(2))
    for _ in range(2):
        with pytest.raises(TypeError):
            df(np.ones(2))


@given(
    st.lists(
        st.tuples(st.integers(1, 4), st.sampled_from([np.float32, np.float64]), st.booleans()),
        min_size=1,
        max_size=6,
    ),
    st.integers(0, 2**32 - 1),
)
def test_call_sequences_match_finite_differences(calls, seed):
    """Calls with shapes and dtypes drawn in any order, repeats included: each gradient has its
    argument's dtype and matches central differences (the seed's sum of a small array runs the
    filled-array path of ``unreduce``, on the array or on what ``shape_of`` kept of it)."""
    df = sg.value_and_grad(scaled_sum)
    rng = np.random.default_rng(seed)
    for n, dtype, general in calls:
        x, c = rng.normal(size=n).astype(dtype), rng.normal(size=n)
        value, g = (sg.value_and_grad(scaled_sum, specialize=False) if general else df)(x, c)
        assert g.dtype == dtype and g.shape == x.shape
        tol = 1e-3 if dtype == np.float32 else 1e-5
        assert_close(value, scaled_sum(x, c), rtol=tol, what="value")
        assert_close(g, fd_grad(scaled_sum, (x.astype(np.float64), c), 0), rtol=tol, atol=tol)
