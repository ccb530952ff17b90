"""Peak memory of one value-and-gradient call (tracemalloc), for two_layer and rnn_loop.

tracemalloc sees numpy's array buffers, so it measures the numpy-based systems: the forward
pass, the hand-written backward, sourcegrad, and HIPS autograd when installed. PyTorch and JAX
allocate outside Python's tracer and are not listed. The peak counts everything allocated
during the call above what existed before it, the returned gradients included.
"""

import tracemalloc

import harness
import rnn_loop
import two_layer

SYSTEMS = ["forward", "manual", "sourcegrad", "autograd"]


def peak_bytes(call):
    call()  # compile / warm up outside the measurement
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak - before


def report(quick):
    headers = ["benchmark", "case", "system", "peak MiB", "x hand"]
    rows = []
    for bench in (two_layer, rnn_loop):
        case, make_args = bench.cases(quick)[0]
        args = make_args()
        peaks = {}
        for system in SYSTEMS:
            try:
                harness.require(system)
                call, _ = harness.MAKERS[system](bench, args)
                peaks[system] = peak_bytes(call)
            except harness.Skip as e:
                peaks[system] = f"skipped: {e}"
        for system, peak in peaks.items():
            if isinstance(peak, str):
                rows.append([bench.__name__, case, harness.LABELS[system], "-", peak])
            else:
                rows.append(
                    [
                        bench.__name__,
                        case,
                        harness.LABELS[system],
                        f"{peak / 2**20:.3f}",
                        f"{peak / peaks['manual']:.2f}",
                    ]
                )
    return headers, rows
