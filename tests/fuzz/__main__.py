"""Run many random programs without stopping at the first failure::

    python -m tests.fuzz --programs 5000 --seed 0 --time-limit 3600 [--out DIR]

Prints counts by outcome and by category, and writes each failing or refused program (with the
error as a comment) and a ``summary.json`` under ``--out`` (by default a new temporary folder,
never the working tree; its path is printed first and last).
"""

import argparse
import collections
import json
import os
import signal
import sys
import tempfile
import time

from .check import Outcome, check_program
from .generate import RandomChooser, generate


class _Timeout(BaseException):
    """Not an ``Exception``: the compiler must not take it for its own error (an internal
    compiler error "during aliasing" was a slow pass stopped by the alarm)."""


def _alarm(signum, frame):
    raise _Timeout()


def run(programs, seed, time_limit, out, per_program=60):
    os.makedirs(out, exist_ok=True)
    counts = collections.Counter()
    categories = collections.Counter()
    examples = {}
    features = collections.Counter()
    start = time.time()
    signal.signal(signal.SIGALRM, _alarm)
    done = 0
    for k in range(seed, seed + programs):
        if time.time() - start > time_limit:
            break
        program = generate(RandomChooser(k))
        features.update(program.features)
        signal.alarm(per_program)
        try:
            outcome = check_program(program, seed=k)
        except _Timeout:
            outcome = Outcome("fail", f"took more than {per_program} s", "timeout")
        finally:
            signal.alarm(0)
        done += 1
        counts[outcome.status] += 1
        if outcome.status in ("fail", "refused", "invalid", "known"):
            key = f"{outcome.status}: {outcome.category}"
            categories[key] += 1
            path = os.path.join(out, f"{outcome.status}_{k}.py")
            comment = "\n".join("# " + line for line in outcome.detail.splitlines())
            with open(path, "w") as fh:
                fh.write(f"# seed {k}: {key}\n{comment}\n\n{program.source}")
            examples.setdefault(key, []).append(path)
        if done % 100 == 0:
            print(f"{done} programs, {time.time() - start:.0f} s: {dict(counts)}", flush=True)
    summary = {
        "programs": done,
        "seconds": round(time.time() - start, 1),
        "counts": dict(counts),
        "categories": dict(categories.most_common()),
        "examples": {k: v[:5] for k, v in examples.items()},
        "features": dict(features.most_common()),
    }
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz")
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=3600.0)
    ap.add_argument(
        "--out", default=None, help="where to write results (default: a new temporary folder)"
    )
    a = ap.parse_args(argv)
    out = a.out or tempfile.mkdtemp(prefix="sourcegrad_fuzz_results_")
    print(f"results in {out}", flush=True)
    summary = run(a.programs, a.seed, a.time_limit, out)
    print(
        json.dumps(
            {k: summary[k] for k in ("programs", "seconds", "counts", "categories")}, indent=1
        )
    )
    print(f"results in {out}")
    return 1 if summary["counts"].get("fail") or summary["counts"].get("invalid") else 0


if __name__ == "__main__":
    sys.exit(main())
