"""Rows per second of one gradient: numpy, dask's lazy mode, data-parallel on 1 and 2 workers.

    python benchmarks/dask_scale.py                    # 4,000,000 rows in 8 chunks, 5 rounds
    python benchmarks/dask_scale.py --rows 16000000 --chunks 16 --rounds 7
    python benchmarks/dask_scale.py --quick            # 40,000 rows: a smoke run

The loss is a 16-32-1 tanh network's mean squared error over rows, ``loss(w1, b1, w2, x, y)``.
Each system computes its value and its gradient with respect to the weights, on the same data:

- ``numpy``: ``sourcegrad.value_and_grad`` on one numpy array (this process);
- ``lazy``: the same gradient called with dask arrays, computed by dask's threads (this process);
- ``hand dask threads``: the gradient written by hand with ``dask.array``, on dask's threads;
- ``data_parallel 1 worker`` / ``2 workers``: ``sourcegrad.dask.data_parallel`` on a
  ``distributed.LocalCluster`` of 1 or 2 worker processes (one thread each);
- ``hand dask 2 workers``: the hand-written dask gradient on the 2-worker cluster.

The data is generated once by dask (a fixed seed) and held in memory where each system computes:
as a numpy array, as persisted chunks in this process, and persisted on each cluster's workers.
Every system's value and gradients are checked against numpy's first (``check``: the largest
difference relative to numpy's largest entry). Then the systems run in turns, ``--rounds`` times,
so that all see the same machine; the table gives each one's median seconds and rows per second,
and the ratio of 2 workers to 1. BLAS is pinned to one thread everywhere. The load average
before and after is printed: on a machine others are using, the scaling is depressed. Nothing
asserts on a time.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import harness  # noqa: E402

os.environ.update(harness.THREAD_ENV)  # before the first BLAS call, and inherited by the workers

import numpy as np  # noqa: E402

FEATURES, HIDDEN = 16, 32


def loss(w1, b1, w2, x, y):
    h = np.tanh(x @ w1 + b1)
    return np.mean((h @ w2 - y) ** 2)


def hand_dask(w1, b1, w2, x, y):
    """The loss and its gradient written by hand with ``dask.array``: lazy, as sourcegrad's."""
    import dask.array as da

    n = x.shape[0]
    h = da.tanh(x @ w1 + b1)
    r = h @ w2 - y
    value = da.mean(r**2)
    d_out = r * (2.0 / (n * r.shape[1]))
    d_z = (d_out @ w2.T) * (1.0 - h * h)
    return value, (x.T @ d_z, d_z.sum(axis=0), h.T @ d_out)


def weights(seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(FEATURES, HIDDEN)) / 4.0,
        rng.normal(size=HIDDEN) * 0.1,
        rng.normal(size=(HIDDEN, 1)) / 6.0,
    )


def make_data(rows, chunk_rows, seed=1):
    """Lazy: features and targets generated chunk by chunk (the same numbers on every scheduler)."""
    import dask.array as da

    rng = da.random.default_rng(seed)
    x = rng.normal(size=(rows, FEATURES), chunks=(chunk_rows, FEATURES))
    y = da.sin(x[:, :1] * 2.0) + 0.1 * rng.normal(size=(rows, 1), chunks=(chunk_rows, 1))
    return x, y


def systems(rows, chunk_rows, clusters):
    """name -> (a call that returns (value, grads) computed, cleanup-free)."""
    import dask

    import sourcegrad as sg
    from sourcegrad.dask import data_parallel

    vg = sg.value_and_grad(loss, wrt=(0, 1, 2))
    dp = data_parallel(vg, over=("x", "y"))
    w = weights()
    x, y = make_data(rows, chunk_rows)
    x, y = dask.persist(x, y, scheduler="threads")  # in this process's memory
    xn, yn = dask.compute(x, y, scheduler="threads")
    out = {
        "numpy": lambda: vg(*w, xn, yn),
        "lazy": lambda: dask.compute(*vg(*w, x, y), scheduler="threads"),
        "hand dask threads": lambda: dask.compute(*hand_dask(*w, x, y), scheduler="threads"),
    }
    for workers, client in clusters:
        cx, cy = client.persist(list(make_data(rows, chunk_rows)))  # on the workers
        label = f"{workers} worker{'s' if workers > 1 else ''}"
        out[f"data_parallel {label}"] = _on(client, lambda cx=cx, cy=cy: dp(*w, cx, cy))
        if workers > 1:
            out[f"hand dask {label}"] = _on(client, lambda cx=cx, cy=cy: hand_dask(*w, cx, cy))
    return out


def _on(client, make):
    def call():
        return client.compute(list(make()), sync=True)

    return call


def _flat(result):
    value, grads = result
    return [np.asarray(value, dtype=np.float64)] + [np.asarray(g, dtype=np.float64) for g in grads]


def check(result, reference):
    got, want = _flat(result), _flat(reference)
    return max(
        float(np.max(np.abs(g - r))) / max(1e-300, float(np.max(np.abs(r))))
        for g, r in zip(got, want)
    )


def start_clusters(counts):
    from distributed import Client, LocalCluster

    # the scheduler's INFO lines as clusters close
    logging.getLogger("distributed").setLevel(logging.ERROR)

    clusters = []
    for n in counts:
        cluster = LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        )
        clusters.append((n, Client(cluster, set_as_default=False)))
    return clusters


def run(rows, chunks, rounds):
    chunk_rows = -(-rows // chunks)
    load_before = os.getloadavg()
    clusters = start_clusters((1, 2))
    try:
        calls = systems(rows, chunk_rows, clusters)
        reference = calls["numpy"]()
        checks = {name: check(call(), reference) for name, call in calls.items()}  # also warms up
        times = {name: [] for name in calls}
        for r in range(rounds):
            order = list(calls) if r % 2 == 0 else list(reversed(calls))
            for name in order:
                start = time.perf_counter()
                calls[name]()
                times[name].append(time.perf_counter() - start)
            print(
                f"round {r + 1}: " + ", ".join(f"{name} {times[name][-1]:.2f} s" for name in calls),
                flush=True,
            )
    finally:
        for _, client in clusters:
            cluster = client.cluster
            client.close()
            cluster.close()
    load_after = os.getloadavg()
    return times, checks, load_before, load_after


def table(rows, chunks, times, checks):
    medians = {name: statistics.median(t) for name, t in times.items()}
    base = medians["numpy"]
    lines = [
        f"{'system':<26} {'median s':>9} {'min s':>8} {'rows/s':>13} {'x numpy':>8} {'check':>9}",
        "-" * 78,
    ]
    for name, t in times.items():
        m = medians[name]
        lines.append(
            f"{name:<26} {m:>9.3f} {min(t):>8.3f} {rows / m:>13,.0f} {base / m:>8.2f} {checks[name]:>9.1e}"
        )
    one, two = medians.get("data_parallel 1 worker"), medians.get("data_parallel 2 workers")
    if one and two:
        lines.append(
            f"data_parallel: 2 workers / 1 worker = {one / two:.2f}x the rows per second (goal: 1.5x)"
        )
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=4_000_000)
    p.add_argument("--chunks", type=int, default=8)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="40,000 rows in 4 chunks, 2 rounds")
    a = p.parse_args(argv)
    rows, chunks, rounds = (40_000, 4, 2) if a.quick else (a.rows, a.chunks, a.rounds)
    import dask
    import distributed

    for line in harness.machine_report():
        print(line)
    print(f"dask {dask.__version__}, distributed {distributed.__version__}")
    print(
        f"== dask_scale: {rows:,} rows x {FEATURES} features ({rows * FEATURES * 8 / 2**20:,.0f} MiB), "
        f"{chunks} chunks, 16-32-1 tanh network, {rounds} rounds"
    )
    times, checks, before, after = run(rows, chunks, rounds)
    print(
        f"load average before: {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}; "
        f"after: {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}"
    )
    for line in table(rows, chunks, times, checks):
        print(line)


if __name__ == "__main__":
    # the workers import the loss by its module's name (they cannot import "__main__")
    import dask_scale

    dask_scale.main()
