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
before, the median time of other calls (without tracemalloc; ``--repeat k`` calls each, taking
turns), its ratio to the plain gradient's, and the largest difference from the plain gradient.
Quick mode runs 10,000 steps, the full run 1,000,000; ``--steps N`` runs N. Nothing asserts on
the numbers.
"""

import statistics
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


def peak_of(g, args):
    """(gradient, peak bytes) of a call under tracemalloc."""
    g(*args[:2], 10)  # compile outside the measurement
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        grads = g(*args)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    return grads, peak


def median_seconds(gradients, args, repeat):
    """The median time of each gradient's calls, without tracemalloc (it slows every allocation,
    Python's included); the calls take turns, ``repeat`` rounds, so a drifting machine weighs on
    all alike."""
    times = [[] for _ in gradients]
    for _ in range(repeat):
        for k, g in enumerate(gradients):
            start = time.perf_counter()
            g(*args)
            times[k].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


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


def report(quick, steps=None, repeat=1):
    steps = steps or (10_000 if quick else 1_000_000)
    rng = np.random.default_rng(0)
    args = (rng.uniform(-1.0, 1.0, 100), rng.uniform(0.5, 1.5, 100), steps)
    headers = [
        "steps",
        "gradient",
        "snapshots",
        "run again",
        "peak MiB",
        "seconds",
        "x plain time",
        "max |difference|",
    ]
    cases = [
        (loss, None, "plain"),
        (loss, True, "for, revolve"),
        (loss, 100, "for, revolve"),
        (loss_while, True, "while, periodic"),
        (loss_while, 100, "while, periodic"),
    ]
    gradients = [sg.grad(f, wrt=(0, 1), checkpoint=checkpoint) for f, checkpoint, _ in cases]
    measured = [peak_of(g, args) for g in gradients]
    seconds = median_seconds(gradients, args, repeat)
    plain = measured[0][0]
    rows = []
    for (f, checkpoint, schedule), (grads, peak), s in zip(cases, measured, seconds):
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(grads, plain))
        if checkpoint is None:
            name, snapshots, again, diff = "plain", "-", "0", "-"
        elif f is loss:
            slots = default_slots(steps) if checkpoint is True else checkpoint
            name, snapshots, again = (
                f"checkpoint={checkpoint} ({schedule})",
                str(slots),
                str(run_again(steps, slots)),
            )
        else:
            name, again = f"checkpoint={checkpoint} ({schedule})", str(steps)
            snapshots = "about 2 sqrt(steps)" if checkpoint is True else str(checkpoint)
        diff = diff if isinstance(diff, str) else f"{diff:.1e}"
        rows.append(
            [
                steps,
                name,
                snapshots,
                again,
                f"{peak / 2**20:.1f}",
                f"{s:.3g}",
                f"{s / seconds[0]:.2f}",
                diff,
            ]
        )
    return headers, rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 steps")
    parser.add_argument("--steps", type=int, help="this many steps")
    parser.add_argument(
        "--repeat", type=int, default=1, help="time each gradient this many times (the median)"
    )
    options = parser.parse_args()
    head, body = report(options.quick, options.steps, options.repeat)
    print(" | ".join(head))
    for r in body:
        print(" | ".join(str(c) for c in r))
