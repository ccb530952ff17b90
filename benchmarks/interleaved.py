"""sourcegrad against the hand-written backward, side by side in one process.

    python benchmarks/interleaved.py                  # every gradient benchmark
    python benchmarks/interleaved.py small_ops rnn_loop
    python benchmarks/interleaved.py --quick          # tiny sizes, few pairs: a smoke run

``run.py`` gives every system its own process, as the benchmark suite asks; on a shared machine
whose speed drifts over minutes, a ratio between two processes measured at different moments
can be off by tens of percent. Here the two calls alternate, batch by batch (each batch lasting
about 20 ms), 30 times, so both see the same machine. Printed: the ratio of the fastest batches
and the median of the 30 paired ratios. Gradients are checked against the hand-written backward
first. Nothing asserts on a time.
"""

from __future__ import annotations

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import harness  # noqa: E402

os.environ.update(harness.THREAD_ENV)  # before the first BLAS call starts its thread pool

import importlib  # noqa: E402
import statistics  # noqa: E402

GRADIENT_BENCHMARKS = ["two_layer", "mlp_big", "small_ops", "rnn_loop", "while_loop"]
PAIRS = 30
BATCH_SECONDS = 0.02


def batch(call, number):
    start = time.perf_counter()
    for _ in range(number):
        call()
    return (time.perf_counter() - start) / number


def compare(bench, make_args, pairs=PAIRS):
    args = make_args()
    reference = bench.manual(*args)
    manual, _ = harness.system_manual(bench, args)
    ours, to_numpy = harness.system_sourcegrad(bench, args)
    harness.check(to_numpy(ours()), reference, harness.tolerance(args))  # also compiles
    number = max(1, int(BATCH_SECONDS / batch(manual, 3)))
    pairs = [(batch(manual, number), batch(ours, number)) for _ in range(pairs)]
    fastest = min(m for m, _ in pairs), min(s for _, s in pairs)
    return fastest, statistics.median(s / m for m, s in pairs)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    quick = "--quick" in argv
    names = [a for a in argv if a != "--quick"] or GRADIENT_BENCHMARKS
    print(
        f"{'benchmark':<11} {'case':<30} {'hand-written':>12} {'sourcegrad':>11} {'x (fastest)':>11} {'x (median)':>10}"
    )
    for name in names:
        bench = importlib.import_module(name)
        for case, make_args in bench.cases(quick):
            (m, s), median = compare(bench, make_args, 3 if quick else PAIRS)
            print(
                f"{name:<11} {case:<30} {m * 1e6:>9.1f} us {s * 1e6:>8.1f} us {s / m:>11.2f} {median:>10.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
