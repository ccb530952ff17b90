"""Masked and in-place updates: boolean-mask writes, slices, clipping by norm, scatter loops."""

import numpy as np

from . import case, inputs, mask, normal, signed, uniform


@case(inputs(normal(5, 3), normal(3, 4)), wrt=(0, 1))
def relu_mask_assign(x, w):
    h = x @ w
    h[h < 0] = 0
    return np.sum(h * h)


@case(inputs(normal(8), normal(8), mask(0.6, 8)), wrt=(0, 1))
def masked_mse(pred, target, m):
    total = 0.0
    count = 0.0
    for i in range(pred.shape[0]):
        if m[i] > 0:
            d = pred[i] - target[i]
            total = total + d * d
            count = count + 1.0
    return total / max(count, 1.0)


@case(inputs(normal(10), mask(0.8, 10)), wrt=0)
def dropout_fixed_mask(x, keep):
    y = x * keep / 0.8
    y = np.tanh(y)
    return np.sum(y * x)


@case(inputs(normal(6, scale=2.0), 1.0))
def clip_by_norm(g, max_norm):
    n = np.sqrt(np.sum(g * g))
    if n > max_norm:
        g = g * (max_norm / n)
    return np.sum(g * np.arange(g.shape[0]))


@case(inputs(normal(4, 6), lambda rng: rng.integers(1, 7, size=4)), wrt=0)
def masked_mean_by_length(X, lengths):
    total = 0.0
    for i in range(X.shape[0]):
        row = X[i]
        total = total + np.mean(np.sin(row[: lengths[i]]))
    return total


@case(inputs(normal(6), lambda rng: rng.integers(0, 4, size=6)), wrt=0)
def scatter_add_loop(vals, idx):
    out = np.zeros(4)
    for i in range(vals.shape[0]):
        out[idx[i]] += vals[i] * vals[i]
    return np.sum(np.sqrt(out + 1.0))


@case(inputs(signed(0.05, 2.0, 10)))
def clamp_mask_assign(x):
    y = x * 1.5
    y[y > 1.0] = 1.0
    y[y < -1.0] = -1.0
    return np.sum(y * x)


@case(inputs(normal(4, 3, scale=2.0)))
def normalize_rows_in_place(X):
    Y = X.copy()
    for i in range(Y.shape[0]):
        Y[i] = Y[i] / np.sqrt(np.sum(Y[i] ** 2) + 0.1)
    return np.sum(Y[:, 0] * Y[:, 1]) + np.sum(Y)


@case(inputs(normal(8), normal(3)), wrt=(0, 1))
def slice_updates(x, v):
    a = np.zeros(8)
    a[0:3] += v
    a[2:5] += v * x[0:3]
    a[5:] = x[5:] * 2.0
    a[1:7] -= 0.5 * x[0:6]
    return np.sum(a * a)


@case(inputs(normal(7), normal(7)), wrt=(0, 1))
def where_masked_update(x, y):
    m = x > y
    z = np.where(m, x * y, x + y)
    z = np.where(z > 0.5, z * 0.5, z)
    return np.sum(z * z)


@case(inputs(normal(5, 5), mask(0.5, 5, 5)), wrt=0)
def masked_fill_softmax(s, keep):
    t = s.copy()
    t[keep == 0] = -1e4
    for i in range(t.shape[0]):
        t[i, i] = s[i, i]
    e = np.exp(t - np.max(t, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    return np.sum(p * s)


@case(inputs(uniform(-1.0, 1.0, 6, 2), 0.5))
def gradient_step_with_mask(W, lr):
    V = W.copy()
    for it in range(3):
        g = 2.0 * V - np.sin(V)
        step = lr * g
        step[np.abs(V) < 0.2] = 0.0
        V = V - step
    return np.sum(V ** 2)
