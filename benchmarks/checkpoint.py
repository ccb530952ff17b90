"""Checkpointing: an explicit Euler integration of a 100-dimensional state over many steps.

``loss(y0, k, steps)`` integrates ``y' = tanh(k * y) - 0.1 * y`` with step 0.001 and returns the
squared norm of the final state. Its plain gradient keeps one state per step (100 float64 each:
800 MB over 1,000,000 steps). With ``checkpoint=True`` or ``checkpoint=n`` the ``for`` loop keeps
snapshots where the binomial schedule (revolve) puts them and runs iterations again from them;
``loss_while`` is the same integration as a ``while`` loop, whose checkpointing keeps periodic
snapshots and runs every iteration once more (the schedule ``for`` loops had before).

The table gives, for each, the snapshots held at once (at most), the iterations the backward runs
again (the schedule's own count, ``Revolve.advanced``; the periodic schedule runs each one
again), the peak memory of one gradient call (tracemalloc: numpy's buffers) above what existed
before, the time of another call (without tracemalloc), its ratio to the plain gradient's, and
the largest difference from the plain gradient. Quick mode runs 10,000 steps, the full run 1,000,000;
``python benchmarks/checkpoint.py --steps N`` runs N. Nothing asserts on the numbers.
"""

import time
import tracemalloc

import numpy as np

import sourcegrad as sg
from sourcegrad.runtime.revolve import default_slots, revolve


def loss(y0, k, steps):
    y = y0
    for t in range(steps):
        y = y + 0.001 * (np.tanh(k * y) - 0.1 * y)
    return np.sum(y * y)


def loss_while(y0, k, steps):
    y = y0
    t = 0
    while t < steps:
        y = y + 0.001 * (np.tanh(k * y) - 0.1 * y)
        t += 1
    return np.sum(y * y)


def measure(g, args):
    """(gradient, peak bytes, seconds): the peak of a call under tracemalloc, the time of another
    call without it (tracemalloc slows every allocation, Python's included)."""
    g(*args[:2], 10)  # compile outside the measurement
    start = time.perf_counter()
    grads = g(*args)
    seconds = time.perf_counter() - start
    del grads
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        grads = g(*args)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    return grads, peak, seconds


def run_again(steps, slots):
    """The iterations the binomial schedule runs again (it does not depend on the loop's body)."""
    schedule = revolve(range(steps), slots)
    for _ in schedule.forward():
        schedule.keep(None)
    for _, _, pieces in schedule.turns():
        for _, keep in pieces:
            if keep:
                schedule.keep(None)
    return schedule.advanced


def report(quick, steps=None):
    steps = steps or (10_000 if quick else 1_000_000)
    rng = np.random.default_rng(0)
    args = (rng.uniform(-1.0, 1.0, 100), rng.uniform(0.5, 1.5, 100), steps)
    headers = ["steps", "gradient", "snapshots", "run again", "peak MiB", "seconds", "x plain time",
               "max |difference|"]
    rows = []
    plain, plain_peak, plain_s = measure(sg.grad(loss, wrt=(0, 1)), args)
    rows.append([steps, "plain", "-", "0", f"{plain_peak / 2**20:.1f}", f"{plain_s:.2f}", "1.00", "-"])
    cases = [(loss, True, "for, revolve"), (loss, 100, "for, revolve"), (loss_while, True, "while, periodic"),
             (loss_while, 100, "while, periodic")]
    for f, checkpoint, schedule in cases:
        grads, peak, seconds = measure(sg.grad(f, wrt=(0, 1), checkpoint=checkpoint), args)
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(grads, plain))
        if f is loss:
            slots = default_slots(steps) if checkpoint is True else checkpoint
            snapshots, again = str(slots), str(run_again(steps, slots))
        else:
            snapshots, again = ("about 2 sqrt(steps)" if checkpoint is True else str(checkpoint)), str(steps)
        rows.append([steps, f"checkpoint={checkpoint} ({schedule})", snapshots, again, f"{peak / 2**20:.1f}",
                     f"{seconds:.2f}", f"{seconds / plain_s:.2f}", f"{diff:.1e}"])
    return headers, rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 steps")
    parser.add_argument("--steps", type=int, help="this many steps")
    options = parser.parse_args()
    head, body = report(options.quick, options.steps)
    print(" | ".join(head))
    for r in body:
        print(" | ".join(str(c) for c in r))
