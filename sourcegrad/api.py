"""The public entry points: ``grad``, ``value_and_grad``, ``vjp`` and ``source``.

Compilation is lazy: the first call compiles (so helpers defined later in a module resolve) and
the result is cached per function object and ``wrt``. Concurrent first calls compile once.
"""

from __future__ import annotations

import functools
import threading

from .errors import WrtError

# The compiler (and libcst) loads on the first compilation, not on ``import sourcegrad``.


def parameters_of(fn):
    code = fn.__code__
    return list(code.co_varnames[: code.co_argcount])

_MODES = ("value_and_grad", "vjp")


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

    def __init__(self, fn, wrt, mode, kind, check_finite=False, unroll=8):
        if not callable(fn):
            raise TypeError(f"sourcegrad.{kind} needs a function, got {fn!r}")
        self.fn = fn
        self.wrt = wrt
        self.mode = mode
        self.kind = kind
        self.check_finite = check_finite
        self.unroll = unroll
        self.names, self.single, self.positions = _wrt_names(fn, wrt)
        self._compiled = None
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn, updated=())
        self.__name__ = f"{getattr(fn, '__name__', 'f')}_{kind}"

    def compiled(self):
        c = self._compiled
        if c is None:
            with self._lock:
                c = self._compiled
                if c is None:
                    from .transforms import compile_gradient

                    c = self._compiled = compile_gradient(self.fn, self.names, self.mode, self.check_finite, self.unroll)
        return c

    def _check_args(self, args, kwargs):
        nparams = self.fn.__code__.co_argcount
        if kwargs or len(args) != nparams:
            return  # the generated function's own signature reports the mismatch
        for name, i in zip(self.names, self.positions):
            a = args[i]
            if type(a) is float or _float_leaves(a):
                continue
            raise WrtError(
                f"cannot differentiate {_fname(self.fn)} with respect to {name!r}: it is "
                f"{_describe(a)}; gradients need floating-point values. Pass e.g. "
                f"{name}.astype(float) or {name} * 1.0."
            )

    def _run(self, args, kwargs):
        self._check_args(args, kwargs)
        compiled = self.compiled()
        try:
            return compiled.function(*args, **kwargs)
        except Exception as e:
            _annotate(e)
            raise

    def __repr__(self):
        return f"<sourcegrad.{self.kind} of {_fname(self.fn)} wrt {self.names if not self.single else self.names[0]!r}>"


def _float_leaves(a):
    """Is ``a`` a float array, or a list/tuple/dict whose leaves all are (or Python floats)?"""
    if type(a) is float:
        return True
    if isinstance(a, (list, tuple)):
        return len(a) > 0 and all(_float_leaves(x) for x in a)
    if isinstance(a, dict):
        return len(a) > 0 and all(_float_leaves(x) for x in a.values())
    return getattr(getattr(a, "dtype", None), "kind", None) in ("f", "c")


def _describe(a):
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
        return self._run(args, kwargs)


class Grad(_Compiled):
    def __call__(self, *args, **kwargs):
        return self._run(args, kwargs)[1]


class Vjp(_Compiled):
    def __call__(self, *args, **kwargs):
        value, pullback = self._run(args, kwargs)
        return value, Pullback(pullback)


class Pullback:
    """``pullback(cotangent)`` -> the gradient. Runs once: the backward consumes the tape."""

    __slots__ = ("_fn",)

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, cotangent):
        fn = self._fn
        if fn is None:
            raise RuntimeError(
                "this pullback was already called; a pullback runs once (it consumes its tape). "
                "Call the vjp function again for another cotangent."
            )
        self._fn = None
        try:
            return fn(cotangent)
        except Exception as e:
            _annotate(e)
            raise


def _decorator(cls, mode, kind):
    def make(f=None, wrt=0, check_finite=False, unroll=8):
        if f is None:
            return lambda g: cls(g, wrt, mode, kind, check_finite, unroll)
        return cls(f, wrt, mode, kind, check_finite, unroll)

    return make


def grad(f=None, wrt=0, check_finite=False, unroll=8):
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
    """
    return _decorator(Grad, "value_and_grad", "grad")(f, wrt, check_finite, unroll)


def value_and_grad(f=None, wrt=0, check_finite=False, unroll=8):
    """Like ``grad``, but returns ``(value, gradient)`` from one run of the forward."""
    return _decorator(ValueAndGrad, "value_and_grad", "value_and_grad")(f, wrt, check_finite, unroll)


def vjp(f=None, wrt=0, check_finite=False, unroll=8):
    """Vector-Jacobian products: ``vf(*args)`` returns ``(value, pullback)``; ``pullback(ct)``
    returns the gradient of ``sum(value * ct)`` with respect to ``wrt``. Any output shape.
    A pullback can be called once (it consumes the forward's tape)."""
    return _decorator(Vjp, "vjp", "vjp")(f, wrt, check_finite, unroll)


def source(g):
    """The generated Python source of anything made by ``grad``, ``value_and_grad`` or ``vjp``."""
    if not isinstance(g, _Compiled):
        raise TypeError(f"sourcegrad.source needs a function made by grad, value_and_grad or vjp, got {g!r}")
    return g.compiled().source
