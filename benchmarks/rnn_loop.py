"""A tanh RNN unrolled by a Python loop: T=100 steps, batch 16, input 32, hidden 64, float64.

The loss is the squared error of a linear read-out of the last hidden state. Each step's
hidden state is overwritten, so reverse mode has to keep (or recompute) all T of them.
Gradients with respect to ``wx``, ``wh``, ``b`` and ``wy``.
"""

import numpy as np

WRT = (0, 1, 2, 3)


def loss(wx, wh, b, wy, xs, target):
    h = np.zeros((xs.shape[1], wh.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(np.dot(xs[t], wx) + np.dot(h, wh) + b)
    return np.sum((np.dot(h, wy) - target) ** 2)


def manual(wx, wh, b, wy, xs, target):
    hs = [np.zeros((xs.shape[1], wh.shape[0]))]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t].dot(wx) + hs[-1].dot(wh) + b))
    diff = hs[-1].dot(wy) - target
    value = np.sum(diff**2)
    grad_out = 2.0 * diff
    grad_wy = hs[-1].T.dot(grad_out)
    grad_h = grad_out.dot(wy.T)
    grad_wx = np.zeros_like(wx)
    grad_wh = np.zeros_like(wh)
    grad_b = np.zeros_like(b)
    for t in reversed(range(xs.shape[0])):
        grad_a = grad_h * (1.0 - hs[t + 1] * hs[t + 1])
        grad_wx += xs[t].T.dot(grad_a)
        grad_wh += hs[t].T.dot(grad_a)
        grad_b += grad_a.sum(axis=0)
        grad_h = grad_a.dot(wh.T)
    return value, (grad_wx, grad_wh, grad_b, grad_wy)


def torch_loss(wx, wh, b, wy, xs, target):
    h = xs.new_zeros((xs.shape[1], wh.shape[0]))
    for t in range(xs.shape[0]):
        h = (xs[t] @ wx + h @ wh + b).tanh()
    return ((h @ wy - target) ** 2).sum()


def make_args(T, batch, n_in, n_hidden, n_out=8, seed=0):
    rng = np.random.default_rng(seed)
    wx = rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)
    wh = rng.standard_normal((n_hidden, n_hidden)) / np.sqrt(n_hidden)
    b = 0.1 * rng.standard_normal(n_hidden)
    wy = rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)
    xs = rng.standard_normal((T, batch, n_in))
    target = rng.standard_normal((batch, n_out))
    return wx, wh, b, wy, xs, target


def cases(quick):
    T, batch, n_in, n_hidden = (5, 2, 3, 4) if quick else (100, 16, 32, 64)
    return [
        (
            f"float64 T={T} B={batch} I={n_in} H={n_hidden}",
            lambda: make_args(T, batch, n_in, n_hidden),
        )
    ]
