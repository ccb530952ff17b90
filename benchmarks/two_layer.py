"""The seed's two-layer network: ``relu(x @ w1) @ w2`` with a squared-error loss.

N, D_in, H, D_out = 64, 1000, 100, 10, in float64 and float32 (``--quick``: a tiny size).
Gradients with respect to ``w1`` and ``w2``.
"""

import numpy as np

WRT = (0, 1)


def loss(w1, w2, x, y):
    # np.dot(x, w1) rather than the seed's x.dot(w1): HIPS autograd cannot see through the
    # method of a plain ndarray (x) called on one of its boxes, and falls back to object arrays.
    h = np.dot(x, w1)
    h_relu = np.maximum(h, 0)
    y_pred = np.dot(h_relu, w2)
    return np.square(y_pred - y).sum()


def manual(w1, w2, x, y):
    """The seed's hand-written backward pass."""
    h = x.dot(w1)
    h_relu = np.maximum(h, 0)
    y_pred = h_relu.dot(w2)
    value = np.square(y_pred - y).sum()
    grad_y_pred = 2.0 * (y_pred - y)
    grad_w2 = h_relu.T.dot(grad_y_pred)
    grad_h_relu = grad_y_pred.dot(w2.T)
    grad_h = grad_h_relu.copy()
    grad_h[h < 0] = 0
    grad_w1 = x.T.dot(grad_h)
    return value, (grad_w1, grad_w2)


def torch_loss(w1, w2, x, y):
    h_relu = x.mm(w1).clamp(min=0)
    return (h_relu.mm(w2) - y).pow(2).sum()


def make_args(N, D_in, H, D_out, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, D_in)).astype(dtype)
    y = rng.standard_normal((N, D_out)).astype(dtype)
    w1 = rng.standard_normal((D_in, H)).astype(dtype)
    w2 = rng.standard_normal((H, D_out)).astype(dtype)
    return w1, w2, x, y


def cases(quick):
    size = (8, 20, 10, 3) if quick else (64, 1000, 100, 10)
    return [
        (
            f"{np.dtype(dtype).name} {'x'.join(map(str, size))}",
            lambda dtype=dtype: make_args(*size, dtype),
        )
        for dtype in (np.float64, np.float32)
    ]
