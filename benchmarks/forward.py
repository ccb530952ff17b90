"""Forward mode and Hessian-vector products, side by side in one process.

    python benchmarks/forward.py                   # two_layer, rnn_loop, small_ops, while_loop
    python benchmarks/forward.py small_ops --quick

On each gradient benchmark's ``loss`` (with respect to its ``WRT`` arguments, random directions):
``jvp`` against the forward alone, and ``hvp`` against ``value_and_grad``. The two calls of a
pair alternate, batch by batch (each batch about 20 ms), 30 times, so both see the same machine;
printed are the ratio of the fastest batches and the median of the paired ratios. The results
are checked first: the jvp's tangent against the gradient dotted with the tangent, the hvp
against a central difference of the gradient along ``v``. The issue's goals: jvp at most 3x the
forward, hvp at most 4x value_and_grad. Also a report benchmark (``run.py forward``). Nothing
asserts on a time.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import harness  # noqa: E402

os.environ.update(harness.THREAD_ENV)  # before the first BLAS call starts its thread pool

import importlib  # noqa: E402
import statistics  # noqa: E402

import numpy as np  # noqa: E402

from interleaved import batch  # noqa: E402

BENCHMARKS = ["two_layer", "rnn_loop", "small_ops", "while_loop"]
PAIRS = 30
BATCH_SECONDS = 0.02


def _directions(args, wrt, seed=1):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(np.shape(args[i])).astype(args[i].dtype) for i in wrt)


def small_ops_jvp(w, x, y, w_dot, x_dot):
    """small_ops's jvp by hand, for scale: three numpy calls per step for the value, seven for
    the tangent (``w_dot * y + y_dot * w + x_dot``, times ``1 - y * y``)."""
    y_dot = np.zeros_like(y)
    for i in range(50):
        a_dot = w_dot * y + y_dot * w + x_dot
        y = np.tanh(w * y + x)
        y_dot = a_dot * (1.0 - y * y)
    return np.sum(y), np.sum(y_dot)


HAND_WRITTEN_JVP = {"small_ops": small_ops_jvp}


def calls(bench, args):
    """The four timed calls: forward, jvp, value_and_grad, hvp (compiled and checked here)."""
    import sourcegrad as sg

    wrt = tuple(bench.WRT)
    ts, vs = _directions(args, wrt, 1), _directions(args, wrt, 2)
    jf, vg, hf = (
        sg.jvp(bench.loss, wrt=wrt),
        sg.value_and_grad(bench.loss, wrt=wrt),
        sg.hvp(bench.loss, wrt=wrt),
    )
    _check(bench, args, wrt, jf, vg, hf, ts, vs)
    return (
        (lambda: bench.loss(*args)),
        (lambda: jf(*args, ts)),
        (lambda: vg(*args)),
        (lambda: hf(*args, vs)),
    )


def _check(bench, args, wrt, jf, vg, hf, ts, vs):
    value, grads = vg(*args)
    scale = lambda a: 1e-3 if a.dtype == np.float32 else 1e-6  # noqa: E731
    _, tangent = jf(*args, ts)
    want = sum(float(np.sum(g * t)) for g, t in zip(grads, ts))
    assert abs(tangent - want) <= scale(args[0]) * 100 * max(1.0, abs(want)), (
        bench.__name__,
        tangent,
        want,
    )
    h = 1e-4 if args[0].dtype == np.float32 else 1e-6

    def moved(sign):
        a = list(args)
        for i, v in zip(wrt, vs):
            a[i] = a[i].astype(np.float64) + sign * h * v
        return vg(*a)[1]

    hv = hf(*args, vs)
    for got, up, down in zip(hv, moved(1), moved(-1)):
        fd = (up - down) / (2 * h)
        err = np.max(np.abs(got - fd)) / max(1.0, np.max(np.abs(fd)))
        assert err < (5e-2 if args[0].dtype == np.float32 else 1e-4), (bench.__name__, err)


def compare(first, second, pairs=PAIRS):
    """(first's fastest batch, second's fastest batch), and the median paired ratio."""
    number = max(1, int(BATCH_SECONDS / batch(first, 3)))
    timed = [(batch(first, number), batch(second, number)) for _ in range(pairs)]
    fastest = min(a for a, _ in timed), min(b for _, b in timed)
    return fastest, statistics.median(b / a for a, b in timed)


def measure(name, quick):
    """Rows: (benchmark, case, what, base us, ours us, x fastest, x median)."""
    bench = importlib.import_module(name)
    rows = []
    for case, make_args in bench.cases(quick)[:1]:
        forward, jvp, vg, hvp = calls(bench, make_args())
        pairs = 3 if quick else PAIRS
        pairs_to_time = [("jvp / forward", forward, jvp), ("hvp / value_and_grad", vg, hvp)]
        if name in HAND_WRITTEN_JVP:
            args, (t_w, t_x) = make_args(), _directions(make_args(), bench.WRT, 1)
            by_hand = HAND_WRITTEN_JVP[name]
            assert np.isclose(by_hand(*args, t_w, t_x)[1], jvp()[1]), name
            pairs_to_time.append(
                ("by hand jvp / forward", forward, lambda: by_hand(*args, t_w, t_x))
            )
        for what, base, ours in pairs_to_time:
            (a, b), median = compare(base, ours, pairs)
            rows.append((name, case, what, a * 1e6, b * 1e6, b / a, median))
    return rows


def report(quick):
    headers = ["benchmark", "case", "ratio", "base us", "ours us", "x (fastest)", "x (median)"]
    rows = [
        [n, c, w, f"{a:.1f}", f"{b:.1f}", f"{r:.2f}", f"{m:.2f}"]
        for name in BENCHMARKS
        for n, c, w, a, b, r, m in measure(name, quick)
    ]
    return headers, rows


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    quick = "--quick" in argv
    names = [a for a in argv if a != "--quick"] or BENCHMARKS
    print(
        f"{'benchmark':<11} {'case':<30} {'ratio':<21} {'base':>10} {'ours':>10} {'x (fastest)':>11} {'x (median)':>10}"
    )
    for name in names:
        for n, c, w, a, b, r, m in measure(name, quick):
            print(
                f"{n:<11} {c:<30} {w:<21} {a:>7.1f} us {b:>7.1f} us {r:>11.2f} {m:>10.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
