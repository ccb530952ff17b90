"""The seed's data-dependent loop: ``y = x * 2; while norm(y) < 100: y = y * 2``.

The seed backpropagates the cotangent ``c = [0.1, 1.0, 0.0001]`` through the vector ``y``; here
the loss is ``sum(y * c)``, whose gradient is that vector-Jacobian product. ``x`` is drawn small
so the loop runs 16 times. Three elements: this is all per-iteration overhead. The loop
condition reads a value, so ``jax.jit`` cannot trace it.
"""

import numpy as np

WRT = (0,)
NO_JIT = "data-dependent Python while loop (needs lax.while_loop)"


def loss(x, c):
    y = x * 2
    while np.linalg.norm(y) < 100:
        y = y * 2
    return np.sum(y * c)


def manual(x, c):
    y = x * 2
    scale = 2.0
    while np.linalg.norm(y) < 100:
        y = y * 2
        scale = scale * 2.0
    return np.sum(y * c), (c * scale,)


def torch_loss(x, c):
    y = x * 2
    while y.norm() < 100:
        y = y * 2
    return (y * c).sum()


def make_args(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(3) * 1e-3, np.array([0.1, 1.0, 0.0001])


def cases(quick):
    return [("float64 size 3", make_args)]
