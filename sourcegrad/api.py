"""The public entry points: ``grad``, ``value_and_grad``, ``vjp`` and ``source``.

Compilation is lazy: the first call compiles (so helpers defined later in a module resolve) and
the result is cached per function object and ``wrt``. Concurrent first calls compile once.
"""

from __future__ import annotations

import functools
import threading

import inspect
import types

import numpy as np

from .errors import NoSourceError, PullbackError, UsageError, WrtError

# The compiler (and libcst) loads on the first compilation, not on ``import sourcegrad``.


def parameters_of(fn):
    code = fn.__code__
    return list(code.co_varnames[: code.co_argcount])

_MODES = ("value_and_grad", "vjp")


_MISSING = object()
_ndarray = np.ndarray

# How many argument signatures one gradient compiles a specialized version for; calls with
# further signatures share the general code (as fast as before specialization, never wrong).
MAX_SPECIALIZATIONS = 8


def signature_of(args):
    """What specialization keys on: each positional argument's shape if it is an array, ``float``
    or ``int`` for a Python number, None otherwise. None when no argument is an array (nothing
    to specialize on)."""
    key = tuple(_arg_key(a) for a in args)
    return key if any(type(k) is tuple for k in key) else None


def _arg_key(a):
    t = type(a)
    if t is _ndarray:
        return a.shape
    if t is float or t is int:
        return t
    if isinstance(a, np.generic):
        return () if a.dtype.kind in "fc" else None
    if hasattr(a, "shape") and (t.__module__.startswith("cupy") or hasattr(a, "__array_namespace__")):
        return tuple(a.shape)  # a cupy (or other array-API) array
    return None


def _plain_function(fn, kind):
    """The Python function to compile for ``fn``, and the object bound as its first argument
    (a bound method's ``self``), or raise a clear error for anything else."""
    if isinstance(fn, _Compiled):
        raise UsageError(
            f"sourcegrad.{kind} of a function made by sourcegrad ({fn!r}): higher-order derivatives "
            "are not supported yet"
        )
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        return fn.__func__, fn.__self__
    if isinstance(fn, types.FunctionType):
        if fn.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
            from .transforms import compile_gradient

            compile_gradient(fn, [], "vjp")  # refuses *args/**kwargs, pointing at them
        return fn, None
    if not callable(fn):
        raise UsageError(f"sourcegrad.{kind} needs a function, got {fn!r}")
    what = type(fn).__name__
    if hasattr(fn, "__wrapped__"):
        hint = f"differentiate the function it wraps: sourcegrad.{kind}({_fname(fn)}.__wrapped__)"
    elif hasattr(fn, "func") and hasattr(fn, "args"):  # functools.partial
        hint = "write the partial application as a def (or a lambda) that calls the function"
    elif hasattr(type(fn), "__call__") and not isinstance(fn, (types.BuiltinFunctionType,)) and not hasattr(fn, "nin"):
        hint = f"differentiate its __call__ method: sourcegrad.{kind}(obj.__call__)"
    else:
        hint = "register an adjoint rule for it with @sourcegrad.adjoint, and call it from a Python function"
    raise NoSourceError(f"sourcegrad.{kind} differentiates Python functions read from source; {fn!r} ({what}) "
                        f"has no Python source of its own. {hint}.")


def _wrt_names(fn, wrt):
    params = parameters_of(fn)
    single = not isinstance(wrt, (tuple, list))
    items = [wrt] if single else list(wrt)
    if not items:
        raise WrtError("wrt selects no argument; give an index, a parameter name, or a tuple of them")
    names = []
    for w in items:
        if isinstance(w, bool) or not isinstance(w, (int, str)):
            raise WrtError(f"wrt must be an int, a parameter name, or a tuple of them, not {w!r}")
        if isinstance(w, int):
            if not -len(params) <= w < len(params):
                raise WrtError(f"wrt={w} is out of range: {_fname(fn)} has {len(params)} parameter(s) {params}")
            names.append(params[w])
        else:
            if w not in params:
                raise WrtError(f"wrt={w!r} names no parameter of {_fname(fn)}; its parameters are {params}")
            names.append(w)
    if len(set(names)) != len(names):
        raise WrtError(f"wrt names a parameter twice: {names}")
    return names, single, [params.index(n) for n in names]


def _fname(fn):
    return getattr(fn, "__qualname__", repr(fn))


class _Compiled:
    """A lazily compiled gradient of ``fn``; the callable users hold."""

    def __init__(self, fn, wrt, mode, kind, check_finite=False, unroll=8, specialize=True):
        original = fn
        fn, self.bound = _plain_function(fn, kind)
        self.fn = fn
        self.wrt = wrt
        self.mode = mode
        self.kind = kind
        self.check_finite = check_finite
        self.unroll = unroll
        self.specialize = specialize
        if self.bound is not None:  # a bound method: wrt counts the arguments after self
            wrt = tuple(w + 1 if isinstance(w, int) and w >= 0 else w for w in wrt) if isinstance(wrt, (tuple, list)) \
                else (wrt + 1 if isinstance(wrt, int) and not isinstance(wrt, bool) and wrt >= 0 else wrt)
        self.names, self.single, self.positions = _wrt_names(fn, wrt)
        self._compiled = None
        self._specialized = {}  # argument signature -> emit.Compiled
        self._lock = threading.Lock()
        functools.update_wrapper(self, original, updated=())
        self.__name__ = f"{getattr(fn, '__name__', 'f')}_{kind}"

    def compiled(self, signature=None):
        """The general compiled code, or the one specialized to ``signature`` (``signature_of``);
        either is compiled on first use."""
        c = self._compiled if signature is None else self._specialized.get(signature)
        if c is None and signature is not None and len(self._specialized) >= MAX_SPECIALIZATIONS:
            return self.compiled()
        if c is None:
            with self._lock:
                c = self._compiled if signature is None else self._specialized.get(signature)
                if c is None:
                    from .transforms import compile_gradient

                    c = compile_gradient(self.fn, self.names, self.mode, self.check_finite, self.unroll, signature)
                    if signature is None:
                        self._compiled = c
                    else:
                        self._specialized[signature] = c
        return c

    def _check_args(self, args, kwargs):
        if kwargs:
            try:
                bound = inspect.signature(self.fn).bind(*args, **kwargs)
            except TypeError:
                return  # the generated function's own signature reports the mismatch
            values = [bound.arguments.get(n, _MISSING) for n in self.names]
        else:
            if len(args) != self.fn.__code__.co_argcount:
                return
            values = [args[i] for i in self.positions]
        for name, a in zip(self.names, values):
            if type(a) is _ndarray and a.dtype.kind in "fc":  # the common case, first and cheap
                continue
            if a is _MISSING:
                continue
            if type(a) is float or _float_leaves(a):
                continue
            raise WrtError(
                f"cannot differentiate {_fname(self.fn)} with respect to {name!r}: it is "
                f"{_describe(a)}; gradients need floating-point values. Pass e.g. "
                f"{name}.astype(float) or {name} * 1.0."
            )

    def _run(self, args, kwargs):
        if self.bound is not None:
            args = (self.bound,) + args
        self._check_args(args, kwargs)
        signature = signature_of(args) if self.specialize and not kwargs else None
        compiled = self.compiled(signature)
        try:
            return compiled.function(*args, **kwargs)
        except Exception as e:
            _annotate(e)
            raise

    def __repr__(self):
        return f"<sourcegrad.{self.kind} of {_fname(self.fn)} wrt {self.names if not self.single else self.names[0]!r}>"


def _float_leaves(a):
    """Is ``a`` a float array, or a list/tuple/dict whose leaves all are (or Python floats), with at
    least one leaf? (Empty containers inside one are fine: ``{"layers": [], "out": w}``.)"""
    leaves = _leaves(a)
    return leaves is not None and leaves > 0


def _leaves(a):
    """The number of float leaves in ``a``, or None if some leaf is not a float."""
    if type(a) is float:
        return 1
    if isinstance(a, (list, tuple, dict)):
        counts = [_leaves(x) for x in (a.values() if isinstance(a, dict) else a)]
        return None if None in counts else sum(counts)
    return 1 if getattr(getattr(a, "dtype", None), "kind", None) in ("f", "c") else None


def _describe(a):
    if isinstance(a, (list, tuple, dict)) and _leaves(a) == 0:
        return f"an empty {type(a).__name__}"
    if isinstance(a, bool):
        return "a bool"
    if isinstance(a, int):
        return "an int"
    dtype = getattr(a, "dtype", None)
    if dtype is not None:
        return f"an array of dtype {dtype}"
    return f"a {type(a).__name__}"


def _annotate(e):
    from .transforms.emit import annotate

    annotate(e, e.__traceback__)


class ValueAndGrad(_Compiled):
    def __call__(self, *args, **kwargs):
        value, grads = self._run(args, kwargs)
        return value, (grads if self.single or len(self.names) > 1 else (grads,))


class Grad(_Compiled):
    def __call__(self, *args, **kwargs):
        grads = self._run(args, kwargs)[1]
        return grads if self.single or len(self.names) > 1 else (grads,)


class Vjp(_Compiled):
    def __call__(self, *args, **kwargs):
        value, pullback = self._run(args, kwargs)
        return value, Pullback(pullback, value, wrap=not self.single and len(self.names) == 1)


class Pullback:
    """``pullback(cotangent)`` -> the gradient. Runs once: the backward consumes the tape."""

    __slots__ = ("_fn", "_shape", "_wrap")

    def __init__(self, fn, value, wrap=False):
        self._fn = fn
        self._shape = getattr(value, "shape", ())
        self._wrap = wrap  # wrt=(0,): a 1-tuple of gradients

    def __call__(self, cotangent):
        fn = self._fn
        if fn is None:
            raise PullbackError(
                "this pullback was already called; a pullback runs once (it consumes its tape). "
                "Call the vjp function again for another cotangent."
            )
        shape = getattr(cotangent, "shape", ())
        if shape != self._shape and not (shape == () and self._shape == ()):
            raise UsageError(f"the cotangent has shape {shape}, but the function's value has shape "
                             f"{self._shape}: pass a cotangent shaped like the value")
        self._fn = None
        try:
            grads = fn(cotangent)
            return (grads,) if self._wrap else grads
        except Exception as e:
            _annotate(e)
            raise


def _decorator(cls, mode, kind):
    def make(f=None, wrt=0, check_finite=False, unroll=8, specialize=True):
        if f is None:
            return lambda g: cls(g, wrt, mode, kind, check_finite, unroll, specialize)
        return cls(f, wrt, mode, kind, check_finite, unroll, specialize)

    return make


def grad(f=None, wrt=0, check_finite=False, unroll=8, specialize=True):
    """The gradient of a scalar-valued function, compiled from its source.

    ``wrt`` selects the arguments to differentiate: an index, a parameter name, or a tuple of
    them (the gradient is then a tuple). Usable as ``@grad``, ``@grad(wrt=(0, 1))`` or
    ``grad(f, wrt="w1")``::

        >>> df = sourcegrad.grad(lambda x: np.sum(np.sin(x) ** 2))
        >>> df(np.array([0.5, 1.0]))
        array([0.84147098, 0.90929743])

    The gradient has each argument's shape and dtype (a Python float for a float argument). A
    function whose value is not a scalar raises ``NonScalarOutputError``: use ``vjp`` for those.

    ``check_finite=True`` (for debugging) checks every intermediate adjoint as it is computed and
    raises ``FloatingPointError`` naming the first one that holds a NaN or inf and the line of
    your code it belongs to.

    ``unroll`` (default 8): a ``for`` loop over ``range`` whose bounds are literals or
    module-level constants and that runs at most this many times is unrolled at compile time
    (no tape); ``unroll=0`` keeps every loop a loop. ``source()`` shows which form was chosen.

    ``specialize`` (default True): the first call with arrays of new shapes compiles a version
    for those shapes (as ``jax.jit`` does), in which shape inference removes the ``unbroadcast``
    calls and rank dispatch that shapes make unnecessary. Up to ``MAX_SPECIALIZATIONS`` (8)
    signatures per function; other calls, and calls with keyword arguments, run the general
    code. ``source(df, *args)`` shows the code specialized for ``args``.
    """
    return _decorator(Grad, "value_and_grad", "grad")(f, wrt, check_finite, unroll, specialize)


def value_and_grad(f=None, wrt=0, check_finite=False, unroll=8, specialize=True):
    """Like ``grad``, but returns ``(value, gradient)`` from one run of the forward."""
    return _decorator(ValueAndGrad, "value_and_grad", "value_and_grad")(f, wrt, check_finite, unroll, specialize)


def vjp(f=None, wrt=0, check_finite=False, unroll=8, specialize=True):
    """Vector-Jacobian products: ``vf(*args)`` returns ``(value, pullback)``; ``pullback(ct)``
    returns the gradient of ``sum(value * ct)`` with respect to ``wrt``. Any output shape.
    A pullback can be called once (it consumes the forward's tape)."""
    return _decorator(Vjp, "vjp", "vjp")(f, wrt, check_finite, unroll, specialize)


def source(g, *args):
    """The generated Python source of anything made by ``grad``, ``value_and_grad`` or ``vjp``:
    the general code, or, given example arguments, the code specialized for their shapes (what a
    call with those arguments runs)."""
    if not isinstance(g, _Compiled):
        raise UsageError(f"sourcegrad.source needs a function made by grad, value_and_grad or vjp, got {g!r}")
    if not args:
        return g.compiled().source
    if g.bound is not None:
        args = (g.bound,) + args
    return g.compiled(signature_of(args) if g.specialize else None).source
