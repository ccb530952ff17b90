"""Many tiny operations: 50 steps of ``y = np.tanh(w * y + x)`` on size-8 arrays, float64.

The arrays are so small that the time is per-operation overhead: Python, numpy dispatch, and
whatever bookkeeping a system does per operation. The loop is a Python ``for`` in the user's
function. Gradients with respect to ``w`` and ``x``.
"""

import numpy as np

WRT = (0, 1)
STEPS = 50


def loss(w, x, y):
    for i in range(50):
        y = np.tanh(w * y + x)
    return np.sum(y)


def manual(w, x, y):
    ys = [y]
    for i in range(STEPS):
        y = np.tanh(w * y + x)
        ys.append(y)
    value = np.sum(y)
    grad_w = np.zeros_like(w)
    grad_x = np.zeros_like(x)
    grad_y = np.ones_like(y)
    for i in reversed(range(STEPS)):
        grad_a = grad_y * (1.0 - ys[i + 1] * ys[i + 1])
        grad_w += grad_a * ys[i]
        grad_x += grad_a
        grad_y = grad_a * w
    return value, (grad_w, grad_x)


def torch_loss(w, x, y):
    for i in range(50):
        y = (w * y + x).tanh()
    return y.sum()


def make_args(n, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(n) for _ in range(3))


def cases(quick):
    return [("float64 size 8, 50 steps", lambda: make_args(8))]
