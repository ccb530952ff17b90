"""sourcegrad's backends against the hand-written numpy backward, side by side in one process.

    python benchmarks/backends.py                     # small_ops, while_loop, rnn_loop, two_layer
    python benchmarks/backends.py small_ops --quick   # tiny sizes, few rounds: a smoke run

Systems: the hand-written numpy backward, sourcegrad's numpy backend, ``backend="numba"``,
``backend="auto"`` and, where JAX is installed and can trace the function, ``jax.jit``. First the
compile cost of each (the first call, which compiles, minus a later call), then every system's
value and gradients are checked against the hand-written backward, then the systems run in
turn, batch by batch (each batch about 20 ms), ``ROUNDS`` times, so all see the same machine.
Printed: each system's median time, and the median over rounds of its ratio to the hand-written
backward in the same round. A system that keeps numpy (with a ``BackendWarning``) says so.
Nothing asserts on a time.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import harness  # noqa: E402

if any(os.environ.get(k) != v for k, v in harness.THREAD_ENV.items()):
    # OpenBLAS sizes its thread pool when numpy loads (harness imports it): start again pinned
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **harness.THREAD_ENV})

import importlib  # noqa: E402
import statistics  # noqa: E402

from interleaved import batch  # noqa: E402

BENCHMARKS = ["small_ops", "while_loop", "rnn_loop", "two_layer"]
ROUNDS = 15
BATCH_SECONDS = 0.02


def sourcegrad_system(bench, args, backend):
    """``(call, to_numpy, note)``; the note names why a compiled backend keeps numpy."""
    import sourcegrad as sg
    from sourcegrad.backends import BackendWarning

    wrt = tuple(bench.WRT)
    f = sg.value_and_grad(bench.loss, wrt=wrt[0] if len(wrt) == 1 else wrt, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BackendWarning)
        started = time.perf_counter()
        f(*args)
        first = time.perf_counter() - started
    note = str(caught[0].message).split(": ", 2)[-1][:100] if caught else ""
    if backend == "auto":
        runner = f.compiled(sg.api.signature_of(args)).function
        note = "chose numba" if getattr(runner, "use_kernel", False) else "chose numpy"
    to_numpy = (lambda r: (r[0], (r[1],))) if len(wrt) == 1 else harness._identity
    return (lambda: f(*args)), to_numpy, note, first


def systems(bench, args):
    """name -> (call, to_numpy, note, first-call seconds)."""
    out = {}
    started = time.perf_counter()
    bench.manual(*args)
    out["numpy hand-written"] = (
        lambda: bench.manual(*args),
        harness._identity,
        "",
        time.perf_counter() - started,
    )
    for backend in ("numpy", "numba", "auto"):
        if backend != "numpy":
            try:
                import numba  # noqa: F401
            except ImportError:
                continue
        out[f"sourcegrad {backend}"] = sourcegrad_system(bench, args, backend)
    try:
        harness.require("jax_jit")
        call, to_numpy = harness.system_jax_jit(bench, args)
        started = time.perf_counter()
        call()
        out["jax.jit"] = (call, to_numpy, "", time.perf_counter() - started)
    except harness.Skip as e:
        out["jax.jit"] = (None, None, str(e), 0.0)
    return out


def compare(bench, make_args, rounds):
    args = make_args()
    reference = bench.manual(*args)
    table = systems(bench, args)
    runnable = {}
    for name, (call, to_numpy, note, first) in table.items():
        if call is not None:
            harness.check(to_numpy(call()), reference, harness.tolerance(args))
            runnable[name] = call
    number = max(1, int(BATCH_SECONDS / batch(runnable["numpy hand-written"], 3)))
    times = {name: [] for name in runnable}
    for _ in range(rounds):
        for name, call in runnable.items():
            times[name].append(batch(call, number))
    base = times["numpy hand-written"]
    rows = []
    for name, (call, _, note, first) in table.items():
        if call is None:
            rows.append((name, None, None, None, note))
            continue
        ratio = statistics.median(t / b for t, b in zip(times[name], base))
        median = statistics.median(times[name])
        rows.append((name, median, ratio, max(first - median, 0.0), note))
    return rows


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    quick = "--quick" in argv
    names = [a for a in argv if a != "--quick"] or BENCHMARKS
    for line in harness.machine_report():
        print(line)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(
        f"{'benchmark':<11} {'case':<28} {'system':<20} {'median':>10} {'x hand':>7} {'compile':>9}  note"
    )
    for name in names:
        bench = importlib.import_module(name)
        for case, make_args in bench.cases(quick)[:1]:
            for system, median, ratio, compile_s, note in compare(
                bench, make_args, 3 if quick else ROUNDS
            ):
                if median is None:
                    print(
                        f"{name:<11} {case:<28} {system:<20} {'-':>10} {'-':>7} {'-':>9}  {note}",
                        flush=True,
                    )
                    continue
                print(
                    f"{name:<11} {case:<28} {system:<20} {median * 1e6:>7.1f} us {ratio:>7.3f} {compile_s:>8.2f}s  {note}",
                    flush=True,
                )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
