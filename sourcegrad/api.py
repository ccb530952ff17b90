"""The public entry points: ``grad``, ``value_and_grad``, ``vjp`` and ``source``.

Compilation is lazy: the first call compiles (so helpers defined later in a module resolve) and
the result is cached per function object and ``wrt``. Concurrent first calls compile once.
"""

from __future__ import annotations

import functools
import threading
import warnings

import inspect
import types

import numpy as np

from .errors import NoSourceError, PullbackError, SourcegradError, UsageError, WrtError, hide_internal_frames

# The compiler (and libcst) loads on the first compilation, not on ``import sourcegrad``.


def parameters_of(fn):
    """Its parameters, keyword-only ones last (the compiled code takes them all by position)."""
    code = fn.__code__
    return list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])


def _all_positional(fn, args, kwargs):
    """``fn``'s arguments, defaults applied, as the positional arguments of its compiled code,
    whose parameters are ``parameters_of(fn)`` (keyword-only ones included, without defaults)."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{_fname(fn)}(): {e}") from None  # as calling fn would
    bound.apply_defaults()
    return tuple(bound.arguments[p] for p in parameters_of(fn)), {}

_MODES = ("value_and_grad", "vjp")


_MISSING = object()
_ndarray = np.ndarray

# After this many compilations caused by changed captured values, a gradient warns (once).
RECOMPILE_WARNING = 8

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
        while isinstance(getattr(fn, "__wrapped__", None), types.FunctionType):
            fn = fn.__wrapped__  # functools.wraps: the function whose source inspect shows
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

    def __init__(self, fn, wrt, mode, kind, check_finite=False, unroll=8, specialize=True, has_aux=False):
        original = fn
        fn, self.bound = _plain_function(fn, kind)
        self.fn = fn
        self.wrt = wrt
        self.mode = mode
        self.kind = kind
        self.check_finite = check_finite
        self.unroll = unroll
        self.specialize = specialize
        self.has_aux = has_aux
        if self.bound is not None:  # a bound method: wrt counts the arguments after self
            wrt = tuple(w + 1 if isinstance(w, int) and w >= 0 else w for w in wrt) if isinstance(wrt, (tuple, list)) \
                else (wrt + 1 if isinstance(wrt, int) and not isinstance(wrt, bool) and wrt >= 0 else wrt)
        self.names, self.single, self.positions = _wrt_names(fn, wrt)
        self.params = parameters_of(fn)
        self._compiled = None
        self._specialized = {}  # argument signature -> emit.Compiled
        self._recompiles = 0  # compiled again because a captured value changed (_recompiled)
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
                # the cap again, under the lock: threads that passed the test above together
                # would otherwise each add a specialization past it
                if signature is not None and signature not in self._specialized \
                        and len(self._specialized) >= MAX_SPECIALIZATIONS:
                    signature = None
                c = self._compiled if signature is None else self._specialized.get(signature)
                if c is None:
                    c = self._compile(signature)
        return c

    def _compile(self, signature):
        """Compile for ``signature`` (None: the general code) and cache it; the lock is held."""
        from .transforms import compile_gradient

        c = compile_gradient(self.fn, self.names, self.mode, self.check_finite, self.unroll, signature, self.has_aux)
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
            if len(args) != len(self.params):
                return
            values = [args[i] for i in self.positions]
        for name, a in zip(self.names, values):
            if type(a) is _ndarray and a.dtype.kind in "fc":  # the common case, first and cheap
                continue
            if a is _MISSING:
                continue
            if type(a) is float or _float_leaves(a):
                continue
            raise WrtError(f"cannot differentiate {_fname(self.fn)} with respect to {name!r}: it is "
                           f"{_describe(a)}; {_wrt_advice(name, a)}")

    def _run(self, args, kwargs):
        if self.bound is not None:
            args = (self.bound,) + args
        if self.fn.__code__.co_kwonlyargcount:
            args, kwargs = _all_positional(self.fn, args, kwargs)
        self._check_args(args, kwargs)
        signature = signature_of(args) if self.specialize and not kwargs else None
        compiled = self.compiled(signature)
        if compiled.guard is not None and not compiled.guard():
            compiled = self._recompiled(signature, compiled)
        try:
            return compiled.function(*args, **kwargs)
        except Exception as e:
            _annotate(e)
            raise

    def _current(self, signature=None):
        """``compiled(signature)``, compiled again if a captured value it decided from changed."""
        c = self.compiled(signature)
        return c if c.guard is None or c.guard() else self._recompiled(signature, c)

    def _recompiled(self, signature, stale):
        """Compile ``stale`` again: a captured value it decided from changed (what a name calls,
        an unrolled loop's bound, an integer's value, whether a constant is a number or an array).
        The generated code reads captured values live; only such decisions need this."""
        changed = stale.changed()
        with self._lock:
            key = None if self._compiled is stale else signature
            current = self._compiled if key is None else self._specialized.get(key)
            if current is stale:  # (not already compiled again by another thread)
                current = self._compile(key)
                self._recompiles += 1
                if self._recompiles == RECOMPILE_WARNING:
                    warnings.warn(
                        f"sourcegrad compiled {_fname(self.fn)} again {self._recompiles} times because values "
                        f"it captures and decides from changed ({', '.join(changed) or '?'}); pass them as "
                        "arguments instead", RuntimeWarning, stacklevel=4)
        return current

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
    library = type(a).__module__.split(".")[0]
    if getattr(dtype, "kind", None) is None and library not in ("builtins", "numpy"):
        if dtype is not None:  # another library's array: a torch tensor
            return f"a {library}.{type(a).__name__} of dtype {dtype}"
        import dataclasses

        return f"a {type(a).__name__} {'dataclass' if dataclasses.is_dataclass(a) else 'object'}"
    if dtype is not None:
        return f"an array of dtype {dtype}"
    return f"a {type(a).__name__}"


_TAKES = "gradients are taken with respect to float arrays and Python floats, or dicts, lists and tuples of them"


def _wrt_advice(name, a):
    """Why a ``wrt`` argument cannot be differentiated, and the fix for its kind of value."""
    if isinstance(a, (list, tuple, dict)):
        bad = _first_bad_leaf(a, name)
        if bad is None:
            return f"there is nothing in it to differentiate ({_TAKES})."
        path, leaf = bad
        return f"{path} is {_describe(leaf)}: {_wrt_advice(path, leaf)}"
    if isinstance(a, (bool, int)):
        return f"gradients need floating-point values. Pass e.g. float({name})."
    kind = getattr(getattr(a, "dtype", None), "kind", None)
    if kind is not None:  # a numpy (or cupy) array or scalar of ints or bools
        return f"gradients need floating-point values. Pass e.g. {name}.astype(float) or {name} * 1.0."
    library = type(a).__module__.split(".")[0]
    if library == "torch":
        return f"sourcegrad differentiates numpy (and cupy) arrays, not torch tensors: pass {name}.detach().cpu().numpy()."
    if hasattr(a, "__array__") or hasattr(a, "__array_interface__"):
        return f"sourcegrad differentiates numpy (and cupy) arrays: pass np.asarray({name})."
    import dataclasses

    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return (f"{_TAKES}: pass dataclasses.asdict({name}), a dict of its fields (the gradient is a dict "
                "too), and read the fields by key.")
    if type(a).__module__ == "builtins":  # None, a string, ...
        if "[" in name:
            return f"{_TAKES}: pass it as an argument of its own, outside {name.split('[')[0]}."
        return f"{_TAKES}; leave {name} out of wrt."
    return f"{_TAKES}: pass the arrays it holds as arguments, or as a dict of them."


def _first_bad_leaf(a, path):
    """``(path, leaf)`` of the first leaf of a dict/list/tuple tree that is not a float value."""
    items = a.items() if isinstance(a, dict) else enumerate(a)
    for key, x in items:
        where = f"{path}[{key!r}]"
        if isinstance(x, (list, tuple, dict)):
            bad = _first_bad_leaf(x, where)
            if bad is not None:
                return bad
        elif _leaves(x) is None:
            return where, x
    return None


def _annotate(e):
    from .transforms.emit import annotate

    if hasattr(e, "add_note"):
        annotate(e, e.__traceback__)
        return
    try:  # Python 3.10 has no exception notes: the note naming the user's line joins the message
        e.add_note = functools.partial(_note_in_message, e)
    except AttributeError:
        return
    try:
        annotate(e, e.__traceback__)
    finally:
        del e.add_note


def _note_in_message(e, note):
    e.__notes__ = [*getattr(e, "__notes__", ()), note]
    if e.args and isinstance(e.args[0], str):
        e.args = (f"{e.args[0]}\n{note}",) + e.args[1:]
    elif not e.args:
        e.args = (note,)


class ValueAndGrad(_Compiled):
    def __call__(self, *args, **kwargs):
        try:
            value, grads = self._run(args, kwargs)
        except SourcegradError as e:
            raise hide_internal_frames(e)  # sourcegrad's own frames hidden; SOURCEGRAD_TRACEBACK=full shows them
        return value, (grads if self.single or len(self.names) > 1 else (grads,))


class Grad(_Compiled):
    def __call__(self, *args, **kwargs):
        try:
            value, grads = self._run(args, kwargs)
        except SourcegradError as e:
            raise hide_internal_frames(e)  # sourcegrad's own frames hidden; SOURCEGRAD_TRACEBACK=full shows them
        grads = grads if self.single or len(self.names) > 1 else (grads,)
        return (grads, value[1]) if self.has_aux else grads


class Vjp(_Compiled):
    def __call__(self, *args, **kwargs):
        try:
            value, pullback = self._run(args, kwargs)
        except SourcegradError as e:
            raise hide_internal_frames(e)  # sourcegrad's own frames hidden; SOURCEGRAD_TRACEBACK=full shows them
        return value, Pullback(pullback, value, wrap=not self.single and len(self.names) == 1)


class Pullback:
    """``pullback(cotangent)`` -> the gradient. Runs once: the backward consumes the tape."""

    __slots__ = ("_fn", "_shape", "_wrap", "_like")

    def __init__(self, fn, value, wrap=False):
        self._fn = fn
        self._shape = getattr(value, "shape", ())
        self._wrap = wrap  # wrt=(0,): a 1-tuple of gradients
        self._like = value  # a list cotangent becomes an array of its module and float dtype

    def __call__(self, cotangent):
        fn = self._fn
        if fn is None:
            raise PullbackError(
                "this pullback was already called; a pullback runs once (it consumes its tape). "
                "Call the vjp function again for another cotangent."
            )
        if isinstance(cotangent, (list, tuple)):  # as the seed writes it: pullback([0.1, 1.0, 0.0001])
            cotangent = _array_like(cotangent, self._like)
        shape = getattr(cotangent, "shape", ())
        if shape != self._shape and not (shape == () and self._shape == ()):
            raise UsageError(f"the cotangent has shape {shape}, but the function's value has shape "
                             f"{self._shape}: pass a cotangent shaped like the value")
        self._fn = self._like = None
        try:
            grads = fn(cotangent)
            return (grads,) if self._wrap else grads
        except SourcegradError as e:
            _annotate(e)
            raise hide_internal_frames(e)  # sourcegrad's own frames hidden; SOURCEGRAD_TRACEBACK=full shows them
        except Exception as e:
            _annotate(e)
            raise


def _array_like(values, like):
    """``values`` (a list or tuple of numbers) as an array of ``like``'s array module, in its
    float dtype."""
    from .runtime import array_module

    dtype = getattr(like, "dtype", None)
    return array_module(like).asarray(values, dtype=dtype if dtype is not None and dtype.kind in "fc" else None)


def _decorator(cls, mode, kind):
    def make(f=None, wrt=0, check_finite=False, unroll=8, specialize=True, has_aux=False):
        if f is None:
            return lambda g: make(g, wrt, check_finite, unroll, specialize, has_aux)
        try:
            return cls(f, wrt, mode, kind, check_finite, unroll, specialize, has_aux)
        except SourcegradError as e:
            raise hide_internal_frames(e)  # sourcegrad's own frames hidden; SOURCEGRAD_TRACEBACK=full shows them

    return make


def grad(f=None, wrt=0, check_finite=False, unroll=8, specialize=True, has_aux=False):
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

    ``has_aux=True`` (as in JAX): ``f`` returns a pair ``(loss, aux)``; the scalar ``loss`` is
    differentiated, ``aux`` (any value) is returned as computed, with no gradient, and the
    gradient function returns ``(gradient, aux)``.
    """
    return _decorator(Grad, "value_and_grad", "grad")(f, wrt, check_finite, unroll, specialize, has_aux)


def value_and_grad(f=None, wrt=0, check_finite=False, unroll=8, specialize=True, has_aux=False):
    """Like ``grad``, but returns ``(value, gradient)`` from one run of the forward; with
    ``has_aux=True``, ``((loss, aux), gradient)``."""
    return _decorator(ValueAndGrad, "value_and_grad", "value_and_grad")(f, wrt, check_finite, unroll, specialize,
                                                                        has_aux)


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
    if g.bound is not None and args:
        args = (g.bound,) + args
    try:
        return g._current(signature_of(args) if args and g.specialize else None).source
    except SourcegradError as e:
        raise hide_internal_frames(e)  # sourcegrad's own frames hidden; SOURCEGRAD_TRACEBACK=full shows them
