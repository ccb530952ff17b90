"""A three-layer tanh MLP, batch 256, 512-512-512-10, float32, mean squared error.

Large matrix products dominate: this measures what the generated code adds around BLAS.
Gradients with respect to all six weights and biases.
"""

import itertools

import numpy as np

WRT = (0, 1, 2, 3, 4, 5)


def loss(w1, b1, w2, b2, w3, b3, x, y):
    h1 = np.tanh(np.dot(x, w1) + b1)
    h2 = np.tanh(np.dot(h1, w2) + b2)
    out = np.dot(h2, w3) + b3
    return np.mean((out - y) ** 2)


def manual(w1, b1, w2, b2, w3, b3, x, y):
    h1 = np.tanh(x.dot(w1) + b1)
    h2 = np.tanh(h1.dot(w2) + b2)
    out = h2.dot(w3) + b3
    diff = out - y
    value = np.mean(diff**2)
    grad_out = diff * (2.0 / diff.size)
    grad_w3 = h2.T.dot(grad_out)
    grad_b3 = grad_out.sum(axis=0)
    grad_a2 = grad_out.dot(w3.T) * (1.0 - h2 * h2)
    grad_w2 = h1.T.dot(grad_a2)
    grad_b2 = grad_a2.sum(axis=0)
    grad_a1 = grad_a2.dot(w2.T) * (1.0 - h1 * h1)
    grad_w1 = x.T.dot(grad_a1)
    grad_b1 = grad_a1.sum(axis=0)
    return value, (grad_w1, grad_b1, grad_w2, grad_b2, grad_w3, grad_b3)


def torch_loss(w1, b1, w2, b2, w3, b3, x, y):
    h1 = (x @ w1 + b1).tanh()
    h2 = (h1 @ w2 + b2).tanh()
    out = h2 @ w3 + b3
    return ((out - y) ** 2).mean()


def make_args(batch, sizes, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    args = []
    for n_in, n_out in itertools.pairwise(sizes):
        args.append((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(dtype))
        args.append((0.1 * rng.standard_normal(n_out)).astype(dtype))
    x = rng.standard_normal((batch, sizes[0])).astype(dtype)
    y = rng.standard_normal((batch, sizes[-1])).astype(dtype)
    return tuple(args) + (x, y)


def cases(quick):
    batch, sizes = (4, (6, 5, 5, 3)) if quick else (256, (512, 512, 512, 10))
    return [(f"float32 {batch}x{'-'.join(map(str, sizes))}", lambda: make_args(batch, sizes))]
