"""The common harness: systems, gradient checks, timing, and the machine report.

A *gradient benchmark* is a module (``two_layer.py``, ``rnn_loop.py``, ...) that defines, once:

- ``loss(*args)``: the user's function, plain numpy through the module-global name ``np``;
- ``manual(*args) -> (value, grads)``: the hand-written numpy backward pass, the reference;
- ``torch_loss(*tensors)``: the same function written for PyTorch (torch has no ``np`` to swap);
- ``WRT``: the positions of the arguments to differentiate;
- ``cases(quick) -> [(case_name, make_args)]``: ``make_args()`` builds the arguments (numpy).

HIPS autograd and JAX run ``loss`` itself with ``np`` rebound to ``autograd.numpy`` or
``jax.numpy``, so every system differentiates the same source text.

A *report benchmark* (``compile_time.py``, ``memory.py``) defines ``report(quick) -> (headers,
rows)`` instead and measures whatever it measures.

``run.py`` runs every (benchmark, system) pair in its own subprocess, with the BLAS and XLA
thread pools pinned to one thread (see ``THREAD_ENV``), and collects the results as JSON.
Nothing here asserts on a time: timings on a shared machine are information, not a test.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import statistics
import sys
import time
import timeit
import types

import numpy as np

# Set in each worker's environment before numpy (or torch, or jax) is imported.
THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "JAX_PLATFORMS": "cpu",
    "TF_CPP_MIN_LOG_LEVEL": "3",
}

# (key, label, the module that must import for it to run)
SYSTEMS = [
    ("forward", "numpy forward only", None),
    ("manual", "numpy hand-written", None),
    ("sourcegrad", "sourcegrad", "sourcegrad"),
    ("sourcegrad_numba", "sourcegrad numba", "numba"),
    ("autograd", "HIPS autograd", "autograd"),
    ("torch", "PyTorch eager CPU", "torch"),
    ("jax", "JAX (no jit)", "jax"),
    ("jax_jit", "JAX jit", "jax"),
]
SYSTEM_KEYS = [key for key, _, _ in SYSTEMS]
LABELS = {key: label for key, label, _ in SYSTEMS}


class Skip(Exception):
    """This system cannot run here (not installed, or cannot express this benchmark)."""


# ---- systems: each returns (call, to_numpy) -----------------------------------------------------
# ``call()`` is what gets timed; ``to_numpy(call())`` gives ``(value, grads)`` for the check.


def rebind(fn, np_module):
    """``fn`` with its global ``np`` replaced by ``np_module`` (same code object, same source)."""
    return types.FunctionType(
        fn.__code__,
        {**fn.__globals__, "np": np_module},
        fn.__name__,
        fn.__defaults__,
        fn.__closure__,
    )


def _identity(result):
    return result


def system_forward(bench, args):
    return (lambda: (bench.loss(*args), ())), _identity


def system_manual(bench, args):
    return (lambda: bench.manual(*args)), _identity


def system_sourcegrad(bench, args):
    import sourcegrad as sg

    wrt = tuple(bench.WRT)
    if len(wrt) == 1:  # the int form, whose gradient is a bare array
        f = sg.value_and_grad(bench.loss, wrt=wrt[0])
        return (lambda: f(*args)), lambda result: (result[0], (result[1],))
    f = sg.value_and_grad(bench.loss, wrt=wrt)
    return (lambda: f(*args)), _identity


def system_sourcegrad_numba(bench, args):
    """``backend="numba"``, compiled and checked against numpy by a first call made here, so the
    call checked and timed is the compiled kernel's. A function that keeps numpy is skipped."""
    import warnings

    import sourcegrad as sg
    from sourcegrad.backends import BackendWarning

    wrt = tuple(bench.WRT)
    f = sg.value_and_grad(bench.loss, wrt=wrt[0] if len(wrt) == 1 else wrt, backend="numba")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BackendWarning)
        f(*args)
    if caught:
        raise Skip(str(caught[0].message).split(": ", 2)[-1][:140])
    if len(wrt) == 1:
        return (lambda: f(*args)), lambda result: (result[0], (result[1],))
    return (lambda: f(*args)), _identity


def system_autograd(bench, args):
    import autograd
    import autograd.numpy as anp

    f = autograd.value_and_grad(rebind(bench.loss, anp), argnum=tuple(bench.WRT))
    return (lambda: f(*args)), _identity


def system_torch(bench, args):
    import torch

    torch.set_num_threads(1)
    targs = [
        torch.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in args
    ]
    params = [targs[i].requires_grad_() for i in bench.WRT]

    def call():
        value = bench.torch_loss(*targs)
        return value, torch.autograd.grad(value, params)

    def to_numpy(result):
        value, grads = result
        return value.detach().numpy(), tuple(g.numpy() for g in grads)

    return call, to_numpy


def _jax_system(bench, args, jit):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)  # float64 cases stay float64
    jargs = [jax.device_put(a) if isinstance(a, np.ndarray) else a for a in args]
    f = jax.value_and_grad(rebind(bench.loss, jnp), argnums=tuple(bench.WRT))
    if jit:
        f = jax.jit(f)

    def call():
        return jax.block_until_ready(f(*jargs))

    def to_numpy(result):
        value, grads = result
        return np.asarray(value), tuple(np.asarray(g) for g in grads)

    return call, to_numpy


def system_jax(bench, args):
    return _jax_system(bench, args, jit=False)


def system_jax_jit(bench, args):
    if getattr(bench, "NO_JIT", None):
        raise Skip(bench.NO_JIT)
    return _jax_system(bench, args, jit=True)


MAKERS = {key: globals()[f"system_{key}"] for key in SYSTEM_KEYS}


def require(system):
    """Raise ``Skip`` if the system's library is not importable."""
    module = {k: m for k, _, m in SYSTEMS}[system]
    if module is None:
        return
    try:
        __import__(module)
    except ImportError:
        raise Skip(f"{module} not installed") from None
    except Exception as e:  # noqa: BLE001 — a broken install: say so rather than crash the table
        raise Skip(f"{module} failed to import: {type(e).__name__}: {e}") from None


# ---- checking -----------------------------------------------------------------------------------


def tolerance(args):
    dtypes = [a.dtype for a in args if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    return 2e-3 if any(d.itemsize <= 4 for d in dtypes) else 1e-8


def relative_error(got, want):
    """The largest error, relative to the largest magnitude of the reference array."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"shape {got.shape} where the hand-written backward has {want.shape}")
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1e-30)
    return float(np.max(np.abs(got - want), initial=0.0)) / scale


def check(result, reference, tol):
    """The worst relative error of ``result`` against the hand-written ``reference``; raises
    ``AssertionError`` if it exceeds ``tol``. A forward-only result checks the value alone."""
    value, grads = result
    ref_value, ref_grads = reference
    errors = [relative_error(value, ref_value)]
    if len(grads) > 0:
        if len(grads) != len(ref_grads):
            raise AssertionError(
                f"{len(grads)} gradients where the hand-written backward has {len(ref_grads)}"
            )
        errors += [relative_error(g, r) for g, r in zip(grads, ref_grads)]
    worst = max(errors)
    if not worst <= tol:
        raise AssertionError(
            f"disagrees with the hand-written backward: relative error {worst:.3g} > {tol:g}"
        )
    return worst


# ---- timing -------------------------------------------------------------------------------------


def measure(call, quick=False):
    """``(median, min, number)``: seconds per call over samples of ``number`` calls each, batched
    to last at least ``target`` seconds. On a shared machine the min is the steadier number."""
    target, repeat = (0.005, 3) if quick else (0.2, 7)
    timer = timeit.Timer(call)
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= target or number >= 1_000_000:
            break
        number = max(number * 2, int(number * target / max(elapsed, 1e-9) * 1.2))
    samples = [elapsed / number] + [
        t / number for t in timer.repeat(repeat=repeat - 1, number=number)
    ]
    return statistics.median(samples), min(samples), number


def run_system(bench, system, quick):
    """Check then time one system on every case of a gradient benchmark: ``{case: result}``."""
    results = {}
    for case, make_args in bench.cases(quick):
        try:
            require(system)
            args = make_args()
            reference = bench.manual(*args)
            call, to_numpy = MAKERS[system](bench, args)
            # also the warm-up / compile
            worst = check(to_numpy(call()), reference, tolerance(args))
            seconds, fastest, number = measure(call, quick)
            results[case] = {"seconds": seconds, "min": fastest, "number": number, "error": worst}
        except Skip as e:
            results[case] = {"skip": str(e)}
        except Exception as e:  # noqa: BLE001 — one system failing must not hide the others
            results[case] = {"fail": f"{type(e).__name__}: {first_line(e)}"}
    return results


def first_line(e):
    text = str(e).strip().splitlines()
    return text[0][:140] if text else ""


# ---- the machine --------------------------------------------------------------------------------


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_info():
    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 — older numpy: no dict mode
        return "unknown"


def version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def sourcegrad_location():
    """Where ``import sourcegrad`` resolves, and the git commit there when it is a checkout."""
    import importlib.util
    import subprocess

    spec = importlib.util.find_spec("sourcegrad")
    if spec is None or not spec.origin:
        return "(not importable)"
    folder = os.path.dirname(os.path.dirname(spec.origin))
    try:
        commit = subprocess.run(
            ["git", "-C", folder, "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return folder + (f" (git {commit})" if commit else "")


def machine_report():
    """Lines describing the machine and the libraries, for the top of the table."""
    libs = {
        name: version(name)
        for name in ("sourcegrad", "numpy", "autograd", "torch", "jax", "jaxlib", "libcst")
    }
    return [
        f"sourcegrad from {sourcegrad_location()}",
        f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}",
        (
            f"python {platform.python_version()} ({sys.implementation.name}); numpy BLAS: {blas_info()}; "
            f"threads pinned to 1 ({', '.join(k for k in THREAD_ENV if k.endswith('THREADS'))})"
        ),
        "versions: "
        + ", ".join(f"{k} {v}" if v else f"{k} (not installed)" for k, v in libs.items()),
        f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
    ]
