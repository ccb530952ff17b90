"""What fusing elementwise loops and preallocating tapes would gain under numba, on small_ops.

    python benchmarks/numba_variants.py

The numba variant sourcegrad generated for small_ops before it fused loops and preallocated
tapes (``generated``; ``sourcegrad.source`` with ``backend="numba"`` shows what it generates now,
close to ``fused loops``), and the same code rewritten by hand the ways issue 17 asks about, each
compiled with ``numba.njit(boundscheck=True)`` as the backend compiles:

- ``inlined``: the forward's temporaries substituted into one expression, so numba's own
  array-expression rewrite fuses ``np.tanh(w * y + x)`` into one loop (it fuses one statement's
  expression, never statements through a named variable);
- ``preallocated``: the tape an array of the trip count's length instead of a typed list;
- ``inlined + preallocated``;
- ``fused loops``: forward and backward statements on the same shape as one explicit loop over
  the entries (no temporary arrays at all), the tape preallocated.

Each runs in turn with the hand-written numpy backward, batch by batch, ``ROUNDS`` times;
printed: the median over rounds of each one's time over the hand-written backward's in the same
round. Nothing asserts on a time.
"""

from __future__ import annotations

import os
import statistics
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import small_ops  # noqa: E402
from interleaved import batch  # noqa: E402

ROUNDS = 9
STEPS = 50


def generated(w, x, y):
    _tape_y = []
    for i in range(STEPS):
        _t0 = w * y
        _t1 = _t0 + x
        _tape_y.append(y)
        y = np.tanh(_t1)
    value = np.sum(y)
    y_bar = np.full(y.shape, 1.0)
    w_bar = np.zeros(w.shape)
    x_bar = np.zeros(x.shape)
    for i in range(STEPS - 1, -1, -1):
        _t1_bar = y_bar * (1.0 - y * y)
        y = _tape_y.pop()
        x_bar += _t1_bar
        w_bar += _t1_bar * y
        y_bar = _t1_bar * w
    return value, (w_bar, x_bar)


def inlined(w, x, y):
    _tape_y = []
    for i in range(STEPS):
        _tape_y.append(y)
        y = np.tanh(w * y + x)
    value = np.sum(y)
    y_bar = np.full(y.shape, 1.0)
    w_bar = np.zeros(w.shape)
    x_bar = np.zeros(x.shape)
    for i in range(STEPS - 1, -1, -1):
        _t1_bar = y_bar * (1.0 - y * y)
        y = _tape_y.pop()
        x_bar += _t1_bar
        w_bar += _t1_bar * y
        y_bar = _t1_bar * w
    return value, (w_bar, x_bar)


def preallocated(w, x, y):
    _tape_y = np.empty((STEPS,) + y.shape)
    n = 0
    for i in range(STEPS):
        _t0 = w * y
        _t1 = _t0 + x
        _tape_y[n] = y
        n += 1
        y = np.tanh(_t1)
    value = np.sum(y)
    y_bar = np.full(y.shape, 1.0)
    w_bar = np.zeros(w.shape)
    x_bar = np.zeros(x.shape)
    for i in range(STEPS - 1, -1, -1):
        _t1_bar = y_bar * (1.0 - y * y)
        n -= 1
        y = _tape_y[n]
        x_bar += _t1_bar
        w_bar += _t1_bar * y
        y_bar = _t1_bar * w
    return value, (w_bar, x_bar)


def inlined_preallocated(w, x, y):
    _tape_y = np.empty((STEPS,) + y.shape)
    n = 0
    for i in range(STEPS):
        _tape_y[n] = y
        n += 1
        y = np.tanh(w * y + x)
    value = np.sum(y)
    y_bar = np.full(y.shape, 1.0)
    w_bar = np.zeros(w.shape)
    x_bar = np.zeros(x.shape)
    for i in range(STEPS - 1, -1, -1):
        _t1_bar = y_bar * (1.0 - y * y)
        n -= 1
        y = _tape_y[n]
        x_bar += _t1_bar
        w_bar += _t1_bar * y
        y_bar = _t1_bar * w
    return value, (w_bar, x_bar)


def fused_loops(w, x, y):
    size = y.shape[0]
    _tape_y = np.empty((STEPS, size))
    y = y.copy()
    for i in range(STEPS):
        for k in range(size):
            _tape_y[i, k] = y[k]
            y[k] = np.tanh(w[k] * y[k] + x[k])
    value = np.sum(y)
    y_bar = np.full(size, 1.0)
    w_bar = np.zeros(size)
    x_bar = np.zeros(size)
    for i in range(STEPS - 1, -1, -1):
        for k in range(size):
            t = y_bar[k] * (1.0 - y[k] * y[k])
            y[k] = _tape_y[i, k]
            x_bar[k] += t
            w_bar[k] += t * y[k]
            y_bar[k] = t * w[k]
    return value, (w_bar, x_bar)


VARIANTS = {
    "generated": generated,
    "inlined": inlined,
    "preallocated": preallocated,
    "inlined + preallocated": inlined_preallocated,
    "fused loops": fused_loops,
}


def main():
    import numba

    args = small_ops.make_args(8)
    reference = small_ops.manual(*args)
    kernels = {name: numba.njit(f, boundscheck=True) for name, f in VARIANTS.items()}
    for name, kernel in kernels.items():
        value, grads = kernel(*args)
        assert np.allclose(value, reference[0]), name
        assert all(np.allclose(g, r) for g, r in zip(grads, reference[1])), name
    number = max(1, int(0.02 / batch(lambda: small_ops.manual(*args), 3)))
    ratios = {name: [] for name in kernels}
    hand = []
    for _ in range(ROUNDS):
        base = batch(lambda: small_ops.manual(*args), number)
        hand.append(base)
        for name, kernel in kernels.items():
            ratios[name].append(batch(lambda: kernel(*args), number) / base)
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print(f"hand-written numpy backward: {statistics.median(hand) * 1e6:.1f} us")
    for name, r in ratios.items():
        print(f"{name:<24} {statistics.median(r):.3f} x hand-written")


if __name__ == "__main__":
    main()
