"""`sourcegrad.Function` called inside differentiated code (the seed's custom ReLU, in loops),
`no_grad` and `stop_gradient`, against finite differences.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg

from .corpus.harness import check
from .oracle import assert_close, fd_grad
from .flow import SEEDS, SIZES, rng_of


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
