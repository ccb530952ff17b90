"""Vector-Jacobian products of non-scalar outputs, and the value that `value_and_grad` returns,
against finite differences.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .corpus.harness import check_value, check_vjp
from .flow import SEEDS, SIZES, rng_of
from .test_branches import piecewise3
from .test_containers import _mlp_params, mlp
from .test_loops import loop_ranges
from .test_mutation import prefix_sums


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


@pytest.mark.parametrize(
    "f, args",
    [
        pytest.param(returns_reassigned, (1.5,), id="reassigned"),
        pytest.param(returns_loop_accumulator, (1.5, 3), id="loop-accumulator"),
        pytest.param(returns_fresh, (1.5, 3), id="fresh-temporary"),
        pytest.param(loop_ranges, (np.array([0.3, -0.2, 0.5]), 1, 4), id="loop_ranges"),
        pytest.param(piecewise3, (np.array([0.3, -0.2, 0.5]),), id="piecewise3"),
        pytest.param(prefix_sums, (np.array([0.3, -0.2, 0.5]),), id="prefix_sums"),
        pytest.param(mlp, (_mlp_params(rng_of(0), 2, 3, 1), np.ones((2, 2))), id="mlp"),
    ],
)
def test_value_and_grad_value(f, args):
    check_value(f, args)
