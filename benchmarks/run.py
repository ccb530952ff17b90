"""Run the benchmarks and print a table.

    python benchmarks/run.py                     # every benchmark, every installed system
    python benchmarks/run.py --quick two_layer   # tiny sizes, short timing: a smoke run
    python benchmarks/run.py --systems sourcegrad,manual rnn_loop

Each (benchmark, system) pair runs in its own subprocess with every BLAS/XLA thread pool pinned
to one thread. Before timing, each system's value and gradients are checked against the
hand-written numpy backward; a system that disagrees is reported, not timed. Columns: the median
time per value-and-gradient call (and the fastest sample), the median's ratio to the hand-written
backward and to the numpy forward pass alone, and the check's worst relative error. Every system
runs ``--rounds`` times (alternating order) and its quietest round counts. Nothing here asserts
on a time.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import harness

BENCHMARKS = [
    "two_layer",
    "mlp_big",
    "small_ops",
    "rnn_loop",
    "while_loop",
    "compile_time",
    "memory",
    "checkpoint",
    "forward",
]
MARK = "@@result "


# ---- worker: one benchmark, one system, in this process -----------------------------------------


def worker(name, system, quick):
    bench = importlib.import_module(name)
    if system == "report":
        headers, rows = bench.report(quick)
        result = {"headers": headers, "rows": rows}
    else:
        result = harness.run_system(bench, system, quick)
    print(MARK + json.dumps(result), flush=True)


# ---- parent: one subprocess per pair ------------------------------------------------------------


def spawn(name, system, quick, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, system] + (
        ["--quick"] if quick else []
    )
    env = {**os.environ, **harness.THREAD_ENV}
    try:
        proc = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :]), None
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    return None, f"worker exited {proc.returncode}: {tail[0][:160]}"


def format_seconds(s):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def format_table(headers, rows):
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(_looks_numeric(r[i]) for r in cells[1:]) for i in range(len(headers))]

    def line(r):
        return "  ".join(
            c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric)
        ).rstrip()

    return "\n".join(
        [line(cells[0]), line(["-" * w for w in widths])] + [line(r) for r in cells[1:]]
    )


def _looks_numeric(text):
    return text in ("", "-") or text[0].isdigit() or text[0] == "-" and text[1:2].isdigit()


def gradient_rows(results, systems):
    """Table rows for one gradient benchmark: ``results[system][case]``."""
    cases = list(next(iter(results.values())).keys()) if results else []
    rows = []
    for case in cases:
        base = {k: results.get(k, {}).get(case, {}).get("seconds") for k in ("manual", "forward")}
        for system in systems:
            r = results.get(system, {}).get(case, {})
            if "seconds" in r:
                s = r["seconds"]
                rows.append(
                    [
                        case,
                        harness.LABELS[system],
                        format_seconds(s),
                        format_seconds(r["min"]),
                        _ratio(s, base["manual"]),
                        _ratio(s, base["forward"]),
                        f"{r['error']:.1e}",
                    ]
                )
            else:
                rows.append(
                    [
                        case,
                        harness.LABELS[system],
                        "-",
                        "-",
                        "-",
                        "-",
                        r.get("skip")
                        and f"skipped: {r['skip']}"
                        or f"FAILED: {r.get('fail', '?')}",
                    ]
                )
    return rows


def _ratio(seconds, base):
    return f"{seconds / base:.2f}" if base else "-"


GRADIENT_HEADERS = ["case", "system", "median", "min", "x hand", "x fwd", "check (rel. err)"]


def run_benchmark(name, systems, quick, timeout, rounds=1):
    """Each system once per round, the order reversed every other round; per system and case
    the round with the lowest median counts (a shared machine's load drifts over minutes, and a
    ratio between two processes is only as good as the quieter of their moments)."""
    bench = importlib.import_module(name)
    print(f"\n== {name}: {(bench.__doc__ or '').strip().splitlines()[0]}")
    if not hasattr(bench, "WRT"):
        result, error = spawn(name, "report", quick, timeout)
        print(error or format_table(result["headers"], result["rows"]), flush=True)
        return error is None
    results, ok = {}, True
    for k in range(rounds):
        for system in systems if k % 2 == 0 else systems[::-1]:
            result, error = spawn(name, system, quick, timeout)
            if error:
                ok = False
                result = {case: {"fail": error} for case, _ in bench.cases(quick)}
            ok = ok and not any("fail" in r for r in result.values())
            best = results.setdefault(system, {})
            for case, r in result.items():
                old = best.get(case)
                if (
                    old is None
                    or "seconds" not in old
                    or ("seconds" in r and r["seconds"] < old["seconds"])
                ):
                    best[case] = r
    print(format_table(GRADIENT_HEADERS, gradient_rows(results, systems)), flush=True)
    return ok


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument(
        "names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(BENCHMARKS)})"
    )
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes and short timing: a smoke run"
    )
    parser.add_argument(
        "--systems",
        default=",".join(harness.SYSTEM_KEYS),
        help=f"comma-separated subset of {','.join(harness.SYSTEM_KEYS)}",
    )
    parser.add_argument("--timeout", type=float, default=None, help="seconds per subprocess")
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="times each system is run, alternating; the lowest median counts (default 2, 1 with --quick)",
    )
    parser.add_argument("--worker", nargs=2, metavar=("NAME", "SYSTEM"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        worker(*args.worker, args.quick)
        return 0

    names = args.names or BENCHMARKS
    unknown = [n for n in names if n not in BENCHMARKS]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    bad = [s for s in systems if s not in harness.SYSTEM_KEYS]
    if unknown or bad:
        parser.error(f"unknown benchmark(s) {unknown} or system(s) {bad}")
    systems = [s for s in harness.SYSTEM_KEYS if s in systems]  # table order
    timeout = args.timeout or (120 if args.quick else 900)
    rounds = args.rounds or (1 if args.quick else 2)

    print("sourcegrad benchmarks" + (" (--quick: tiny sizes, short timing)" if args.quick else ""))
    for line in harness.machine_report():
        print(line)
    start = time.perf_counter()
    ok = True
    for name in names:
        ok = run_benchmark(name, systems, args.quick, timeout, rounds) and ok
    print(
        f"\ntotal {time.perf_counter() - start:.1f} s"
        + ("" if ok else "; some systems FAILED (see above)")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
