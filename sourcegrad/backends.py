"""Backends: where the generated code of a specialized gradient runs.

``numpy`` (the default) runs the generated Python. ``numba`` compiles a variant of the same code
(``compile_gradient(..., jit=True)``: no ``del``, numba implementations of the runtime helpers in
``runtime/jit.py``) with ``numba.njit``, inside a thin Python wrapper that keeps what numba cannot
do: ``check_scalar`` on the value, and ``finalize`` of each gradient (dtype, Python floats).
``auto`` compiles for numba where the arrays are small and keeps whichever of the two ran faster
on the first calls.

Forward mode (``jvp``) compiles its one code for every shape (``compile_jvp(..., jit=True)``);
its wrapper checks each new combination of argument dtypes and shapes against numpy first.

Deny by default, never wrong: the numba variant runs only for ``grad``/``value_and_grad`` of code
specialized to its arguments' shapes (and for ``jvp``), whose captured values are all modules, functions or
integers the guard checks (numba freezes what it reads), and that numba types. On its first call
it runs beside the numpy code and must agree with it. Anything else keeps numpy for that
function, with one ``BackendWarning`` naming the reason (``backend="numba"``; ``auto`` is silent).
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings

import numpy as np

from .runtime import ZERO, check_scalar, finalize

BACKENDS = ("numpy", "numba", "auto")

# auto: larger arguments (in numbers, all arrays together) keep numpy without compiling for numba
# (numba's scalar transcendental functions and its own BLAS calls gain nothing on big arrays)
AUTO_MAX_NUMBERS = 100_000
# auto: numba is kept when its first timed calls take at most this fraction of numpy's
AUTO_MARGIN = 0.9
_TIMED_CALLS = 3


class BackendWarning(UserWarning):
    """A gradient asked for a compiled backend runs on numpy instead (the message says why)."""


def check_backend(backend):
    from .errors import UsageError

    if backend not in BACKENDS:
        raise UsageError(
            f"backend must be one of {', '.join(map(repr, BACKENDS))}, not {backend!r}"
        )
    return backend


def accelerated(owner, compiled, signature):
    """``compiled`` (the numpy code for ``signature``), or code that runs on ``owner.backend``
    with ``compiled`` as its fallback."""
    reason = _refusal(owner, compiled, signature)
    if reason is not None:
        _fallback_warning(owner, reason)
        return compiled
    from .transforms import compile_gradient

    variant = compile_gradient(
        owner.fn,
        owner.names,
        owner.mode,
        owner.check_finite,
        owner.unroll,
        signature,
        owner.has_aux,
        checkpoint=owner.checkpoint,
        jit=True,
    )
    import numba

    # an IndexError, as numpy raises, never a stray read
    kernel = numba.njit(variant.function, boundscheck=True)
    runner = _Runner(owner, kernel, compiled.function)
    return dataclasses.replace(variant, function=runner, guard=compiled.guard, reads=compiled.reads)


def accelerated_jvp(owner, compiled):
    """``compiled`` (the numpy code of ``owner``'s forward mode), or code that runs it on
    ``owner.backend``, each new combination of argument dtypes and shapes checked first."""
    reason = _common_refusal(owner, compiled)
    if reason is not None:
        _fallback_warning(owner, reason, _JVP_DEPTH)
        return compiled
    from .transforms import compile_jvp

    variant = compile_jvp(owner.fn, owner.names, owner.unroll, jit=True)
    import numba

    kernel = numba.njit(variant.function, boundscheck=True)
    runner = _JvpRunner(owner, kernel, compiled.function)
    return dataclasses.replace(variant, function=runner, guard=compiled.guard, reads=compiled.reads)


def _common_refusal(owner, compiled):
    """Why ``owner`` keeps numpy whatever its arguments (grad and jvp alike), or None."""
    if owner.backend == "numpy":
        return ""
    try:
        import numba  # noqa: F401
    except ImportError:
        return 'numba is not installed (pip install "sourcegrad[numba]")'
    if owner.bound is not None:
        return "bound methods run on numpy"
    if owner.fn.__code__.co_kwonlyargcount:
        return "keyword-only parameters run on numpy"
    if compiled.arg_reads:
        return "it was compiled for what its arguments' objects hold (an object's class, a function passed in)"
    if any(r.check not in ("is", "eq", "absent") for r in compiled.reads):
        live = ", ".join(
            r.describe() for r in compiled.reads if r.check not in ("is", "eq", "absent")
        )
        return f"it reads captured values ({live}) live, and numba would freeze them: pass them as arguments"
    return None


def _refusal(owner, compiled, signature):
    """Why ``owner``'s code for ``signature`` keeps numpy, or None."""
    common = _common_refusal(owner, compiled)
    if common is not None:
        return common
    if signature is None:
        return (
            "only code specialized to its arguments' shapes compiles (specialize=False, keyword arguments "
            "and calls past MAX_SPECIALIZATIONS run the general numpy code)"
        )
    if owner.mode != "value_and_grad":
        return "the numba backend compiles grad and value_and_grad; vjp's pullback runs on numpy"
    if owner.has_aux or owner.check_finite or owner.checkpoint:
        return "has_aux, check_finite and checkpoint run on numpy"
    if any(k is None or k is list or k is tuple for k in signature):
        return _NOT_ARRAYS
    if owner.backend == "auto":
        numbers = sum(math.prod(k) for k in signature if type(k) is tuple)
        if numbers > AUTO_MAX_NUMBERS:
            return ""
    return None


_NOT_ARRAYS = "an argument is neither an array nor a number (containers and objects run on numpy)"
# frames from the warning to the user's call: through api's _run and _compile (grad), through
# Jvp.__call__ and _compile (jvp), through Jvp.__call__ and the runner's first call (jvp)
_GRAD_DEPTH, _JVP_DEPTH, _JVP_CALL_DEPTH = 8, 7, 6


def _fallback_warning(owner, reason, depth=_GRAD_DEPTH):
    if owner.backend == "numba" and reason and not getattr(owner, "_backend_warned", False):
        owner._backend_warned = True
        warnings.warn(
            f"sourcegrad: {getattr(owner.fn, '__qualname__', owner.fn)} runs on numpy, not numba: {reason}",
            BackendWarning,
            stacklevel=depth,
        )


class _Runner:
    """The thin Python wrapper around the numba kernel: value checks and gradient conversion, the
    first call with each combination of argument types checked against numpy (numba compiles
    the kernel again for new dtypes), and the fallback to numpy."""

    def __init__(self, owner, kernel, numpy_function):
        self.owner = owner
        self.kernel = kernel
        self.numpy = numpy_function
        # argument types (_types) -> the value's type when the kernel runs them, None: numpy runs them
        self.value_types = {}
        self.name = owner.fn.__name__
        self.positions = tuple(owner.positions)
        self.single = len(self.positions) == 1

    @property
    def use_kernel(self):
        """Does the kernel run some argument types (all that were tried, so far, but refused ones)?"""
        return any(t is not None for t in self.value_types.values())

    def __call__(self, *args):
        key = _types(args)
        value_type = self.value_types.get(key, _UNTRIED)
        if value_type is None:
            return self.numpy(*args)
        if value_type is _UNTRIED:
            if len(self.value_types) >= _MAX_KEYS:
                return self.numpy(*args)
            return self._first(args, key)
        try:
            value, raw = self.kernel(*args)
        except Exception:  # noqa: BLE001 — a run-time refusal of a helper: numpy runs it (or raises it)
            return self.numpy(*args)
        return self._finished(value_type, value, raw, args)

    def _finished(self, value_type, value, raw, args):
        check_scalar(value, self.name)
        if self.single:
            return value_type(value), finalize(
                ZERO if raw is None else raw, args[self.positions[0]]
            )
        return value_type(value), tuple(
            [finalize(ZERO if g is None else g, args[i]) for g, i in zip(raw, self.positions)]
        )

    def _first(self, args, key):
        want = self.numpy(*args)  # raises what the user's code raises: nothing is decided then
        try:
            value, raw = self.kernel(*args)  # numba compiles for these argument types
        except Exception as e:  # noqa: BLE001 — numba could not type or run it
            return self._give_up(key, _first_line(e), want)
        value_type = type(want[0]) if isinstance(want[0], np.generic) else float
        error = _disagreement(self._finished(value_type, value, raw, args), want, args)
        if error is not None:
            return self._give_up(key, f"its first result differs from numpy's ({error})", want)
        faster = self.owner.backend != "auto" or _faster(
            lambda: self._finished(value_type, *self.kernel(*args), args),
            lambda: self.numpy(*args),
        )
        self.value_types[key] = value_type if faster else None
        return want

    def _give_up(self, key, reason, result):
        self.value_types[key] = None
        _fallback_warning(self.owner, reason)
        return result


_UNTRIED = object()


class _JvpRunner:
    """The forward mode's wrapper around its numba kernel. Forward code is one code for every
    shape, so the first call with each combination of argument dtypes and shapes runs beside
    numpy and must agree with it; each output keeps numpy's type (a numpy scalar, a float)."""

    def __init__(self, owner, kernel, numpy_function):
        self.owner = owner
        self.kernel = kernel
        self.numpy = numpy_function
        # argument key (_shapes) -> the (value, tangent) types when the kernel runs them, or None
        self.output_types = {}

    @property
    def use_kernel(self):
        return any(t is not None for t in self.output_types.values())

    def __call__(self, *args):
        key = _shapes(args)
        kinds = self.output_types.get(key, _UNTRIED)
        if kinds is None:
            return self.numpy(*args)
        if kinds is _UNTRIED:
            if len(self.output_types) >= _MAX_KEYS:
                return self.numpy(*args)
            return self._first(args, key)
        try:
            value, tangent = self.kernel(*args)
        except Exception:  # noqa: BLE001 — a run-time refusal of a helper: numpy runs it (or raises it)
            return self.numpy(*args)
        return _as_type(value, kinds[0]), _as_type(tangent, kinds[1])

    def _first(self, args, key):
        want = self.numpy(*args)  # raises what the user's code raises: nothing is decided then
        reason = _jvp_refusal(self.owner, args, want)
        if reason is None:
            try:
                value, tangent = self.kernel(*args)  # numba compiles for these argument types
            except Exception as e:  # noqa: BLE001 — numba could not type or run it
                reason = _first_line(e)
        if reason is None:
            kinds = tuple(type(w) if isinstance(w, np.generic) else None for w in want)
            got = (_as_type(value, kinds[0]), _as_type(tangent, kinds[1]))
            error = _disagreement(got, want, args)
            if error is not None:
                reason = f"its first result differs from numpy's ({error})"
        if reason is not None:
            self.output_types[key] = None
            _fallback_warning(self.owner, reason, _JVP_CALL_DEPTH)
            return want
        faster = self.owner.backend != "auto" or _faster(
            lambda: self.kernel(*args), lambda: self.numpy(*args)
        )
        self.output_types[key] = kinds if faster else None
        return want


def _jvp_refusal(owner, args, want):
    """Why a forward-mode call with ``args`` keeps numpy (knowing numpy's result), or None."""
    if not all(type(a) in (float, int, bool, np.ndarray) for a in args):
        return _NOT_ARRAYS
    if not all(type(w) in (float, np.ndarray) or isinstance(w, np.generic) for w in want):
        return "the value or its tangent is not an array or a number (containers run on numpy)"
    numbers = sum(a.size for a in args if type(a) is np.ndarray)
    if owner.backend == "auto" and numbers > AUTO_MAX_NUMBERS:
        return ""
    return None


def _as_type(x, kind):
    return x if kind is None else kind(x)


def _shapes(args):
    """The key of a first-call check for forward code (one code for every shape)."""
    return tuple([(a.dtype, a.shape) if type(a) is np.ndarray else _int_key(a) for a in args])


def _faster(kernel, numpy):
    """Does ``kernel()`` beat ``numpy()`` (best of a few calls each)?"""

    def best(call):
        times = []
        for _ in range(_TIMED_CALLS):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        return min(times)

    return best(kernel) <= AUTO_MARGIN * best(numpy)


def _types(args):
    """What numba dispatches on, as far as the specialization does not fix it: dtypes and types;
    and a Python integer's value (``_int_key``)."""
    return tuple([a.dtype if type(a) is np.ndarray else _int_key(a) for a in args])


def _int_key(a):
    """A Python integer's value, other values' type. numba computes with int64 where Python's
    integers are exact (a large ``k * k * k`` wraps around) and raises ``2 ** k`` to an integer
    power where Python gives a float for ``k < 0``: a result checked against numpy holds only for
    the integer it was checked with, so each integer value is a call checked first (at most
    ``_MAX_KEYS`` of them; beyond, numpy runs it)."""
    t = type(a)
    return (int, a) if t is int else t


# first-checked calls one wrapper remembers (a loop over many integer arguments): beyond, numpy
_MAX_KEYS = 64


def _first_line(e):
    """numba's reason, without its pipeline header, source excerpt and context lines."""
    skip = (
        "Failed in ",
        "File ",
        "During:",
        "<source elided>",
        "^",
        "This error may have been caused",
        "There are ",
        " - Of which",
    )
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    detail = next((line for line in lines if not line.startswith(skip)), lines[0] if lines else "")
    return f"numba cannot compile it ({type(e).__name__}: {detail[:200]})"


def _disagreement(got, want, args=()):
    """None when ``got`` (value, gradients) agrees with numpy's ``want``; else what differs.

    Each output is compared relative to its own largest entry, and below a floor of rounding
    noise relative to the largest number of the call (its arguments and all its results): a
    gradient that is a sum of terms cancelling to zero is rounding noise in both, and numba's
    noise differs from numpy's (a relative error to a zero is 1, and meant nothing)."""
    pairs = [(got[0], want[0])]
    g, w = got[1], want[1]
    pairs += list(zip(g, w)) if isinstance(w, tuple) else [(g, w)]
    pairs = [(np.asarray(a), np.asarray(b)) for a, b in pairs]
    reference = max([1.0] + [_largest(b) for _, b in pairs] + [_largest(x) for x in args])
    for a, b in pairs:
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"shape or dtype {a.shape} {a.dtype} for {b.shape} {b.dtype}"
        single = b.dtype.itemsize <= 4
        tol, noise = (1e-3, 1e-5) if single else (1e-9, 1e-12)
        finite = np.isfinite(b)
        if not np.array_equal(a[~finite], b[~finite], equal_nan=True):
            return "non-finite entries"
        diff = float(np.max(np.abs(a[finite] - b[finite]), initial=0.0))
        if diff > max(tol * _largest(b), noise * reference):
            return f"relative error {diff / max(_largest(b), 1e-300):.3g}, absolute {diff:.3g}"
    return None


def _largest(x):
    """The largest finite magnitude in ``x`` (0.0 for none, or for what is not numbers)."""
    x = np.asarray(x)
    if x.dtype.kind not in "biuf":
        return 0.0
    return float(np.max(np.abs(x[np.isfinite(x)]), initial=0.0))
