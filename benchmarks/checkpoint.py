"""Checkpointing: an explicit Euler integration of a 100-dimensional state over many steps.

``loss(y0, k, steps)`` integrates ``y' = tanh(k * y) - 0.1 * y`` with step 0.001 and returns the
squared norm of the final state. Its plain gradient keeps one state per step (100 float64 each:
800 MB over 1,000,000 steps); ``grad(loss, checkpoint=True)`` keeps about ``sqrt(steps)``
snapshots and one piece's states, and runs each piece again. The table gives, for each, the
peak memory of one gradient call (tracemalloc: numpy's buffers) above what existed before, the
time of one call, and the largest difference between the two gradients. Quick mode runs 10,000
steps; the full run 1,000,000. Nothing asserts on the numbers.
"""

import time
import tracemalloc

import numpy as np

import sourcegrad as sg


def loss(y0, k, steps):
    y = y0
    for t in range(steps):
        y = y + 0.001 * (np.tanh(k * y) - 0.1 * y)
    return np.sum(y * y)


def measure(g, args):
    g(*args[:2], 10)  # compile outside the measurement
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        start = time.perf_counter()
        grads = g(*args)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    return grads, peak, seconds


def report(quick):
    steps = 10_000 if quick else 1_000_000
    rng = np.random.default_rng(0)
    args = (rng.uniform(-1.0, 1.0, 100), rng.uniform(0.5, 1.5, 100), steps)
    headers = ["steps", "gradient", "peak MiB", "seconds", "x plain time", "max |difference|"]
    rows = []
    plain, plain_peak, plain_s = measure(sg.grad(loss, wrt=(0, 1)), args)
    rows.append([steps, "plain", f"{plain_peak / 2**20:.1f}", f"{plain_s:.2f}", "1.00", "-"])
    for checkpoint in (True, 100):
        grads, peak, seconds = measure(sg.grad(loss, wrt=(0, 1), checkpoint=checkpoint), args)
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(grads, plain))
        rows.append([steps, f"checkpoint={checkpoint}", f"{peak / 2**20:.1f}", f"{seconds:.2f}",
                     f"{seconds / plain_s:.2f}", f"{diff:.1e}"])
    return headers, rows


if __name__ == "__main__":
    import sys

    head, body = report("--quick" in sys.argv)
    print(" | ".join(head))
    for r in body:
        print(" | ".join(str(c) for c in r))
