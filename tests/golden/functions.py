"""Functions whose generated code is pinned by tests/test_golden.py."""

import numpy as np


def two_layer(w1, w2, x, y):
    h = x.dot(w1)
    h_relu = np.maximum(h, 0)
    y_pred = h_relu.dot(w2)
    loss = np.square(y_pred - y).sum()
    return loss


def basics(x):
    y = x + 2
    z = y * y * 3
    out = z.mean()
    return out


def branch(x):
    if np.sum(x) > 0:
        y = np.sin(x)
    else:
        y = x * x
    return np.sum(y)


def rnn(W, xs):
    h = np.zeros(W.shape[0])
    for x in xs:
        h = np.tanh(W @ h + x)
    return np.sum(h)


def doubling(x):
    y = x * 2
    while np.linalg.norm(y) < 100:
        y = y * 2
    return y


def energy(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        h = np.tanh(w * x[i] + s)
        s = s + np.sum(h * h)
    return s

def doubling_loss(x, c):
    # the seed's loop with the loss its cotangent gives (benchmarks/while_loop.py)
    y = x * 2
    while np.linalg.norm(y) < 100:
        y = y * 2
    return np.sum(y * c)


def two_layer_args():
    return np.ones((1000, 100)), np.ones((100, 10)), np.ones((64, 1000)), np.zeros((64, 10))


def rnn_args():
    return np.eye(4) * 0.5, np.ones((6, 4))


def energy_args():
    return np.ones((5, 3)) * 0.1, np.ones(3) * 0.2

def doubling_loss_args():
    return np.array([1e-3, -2e-3, 5e-4]), np.array([0.1, 1.0, 0.0001])
