"""The public entry points: ``grad``, ``value_and_grad``, ``vjp`` and ``source``.

Compilation is lazy: the first call compiles (so helpers defined later in a module resolve) and
the result is cached per function object and ``wrt``. Concurrent first calls compile once.
"""

from __future__ import annotations

import functools
import threading
import warnings

import inspect
import sys
import types

import numpy as np

from . import backends as _backends
from .runtime import structures as _structures
from .errors import (
    NoSourceError,
    PullbackError,
    SourcegradError,
    UsageError,
    WrtError,
    hide_internal_frames,
)

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


def _keyword_only(fn, args):
    """The positional arguments ``_all_positional`` made, split as the generated function takes
    them: its keyword-only parameters are keyword-only, as they are ``fn``'s."""
    n = fn.__code__.co_argcount
    return args[:n], dict(zip(parameters_of(fn)[n:], args[n:]))


_MISSING = object()
_ndarray = np.ndarray

# After this many compilations caused by changed captured values, a gradient warns (once).
RECOMPILE_WARNING = 8

# How many argument signatures one gradient compiles a specialized version for; calls with
# further signatures share the general code (as fast as before specialization, never wrong).
MAX_SPECIALIZATIONS = 8


def signature_of(args):
    """What specialization keys on: each positional argument's shape if it is an array, ``float``
    or ``int`` for a Python number, ``list`` or ``tuple`` for a Python sequence (``a + b`` of two
    lists concatenates), None otherwise. None when no argument is an array or a sequence (nothing
    to specialize on)."""
    key = tuple(_arg_key(a) for a in args)
    return key if any(type(k) is tuple or k is list or k is tuple for k in key) else None


# What the checks and the signature of a call depend on, for arguments of these types: an array's
# shape and dtype (its dtype decides whether it can be differentiated), a number's type.
_KEYED_TYPES = frozenset((float, int, bool, str, type(None)))
_MAX_CHECKED = 64


def _fast_key(args):
    """A key that decides ``_check_args`` and ``signature_of`` for ``args``, or None when some
    argument's outcome depends on more than its type (containers, objects, array subclasses)."""
    key = []
    for a in args:
        t = type(a)
        if t is _ndarray:
            key.append((a.shape, a.dtype))
        elif t in _KEYED_TYPES:
            key.append(t)
        else:
            return None
    return tuple(key)


def _arg_key(a):
    t = type(a)
    if t is _ndarray:
        return a.shape
    if t is float or t is int or t is list or t is tuple:
        return t
    if isinstance(a, np.generic):
        return () if a.dtype.kind in "fc" else None
    if hasattr(a, "shape") and (
        t.__module__.startswith("cupy")
        or hasattr(a, "__array_namespace__")
        or (hasattr(a, "__array_function__") and not isinstance(a, np.ndarray))
    ):
        shape = tuple(a.shape)  # a cupy (or other array-API) array, a dask array
        # dask's unknown chunk sizes: nan
        return shape if all(type(n) is int for n in shape) else None
    return None


_DASK = "dask"
_PLAIN = frozenset({_ndarray, float, int, bool, type(None), str})  # never lazy: skipped at once


def _any_lazy(args, kwargs):
    """Is an argument (or an entry of a dict, list or tuple argument) a dask collection? Asked
    only of functions with data-dependent tests."""
    for a in (*args, *kwargs.values()):
        if type(a) in _PLAIN:
            continue
        if isinstance(a, dict):
            a = tuple(a.values())
        if isinstance(a, (list, tuple)):
            if any(type(v) is not _ndarray and hasattr(v, "__dask_graph__") for v in a):
                return True
        elif hasattr(a, "__dask_graph__"):
            return True
    return False


def _plain_function(fn, kind):
    """The Python function to compile for ``fn``, and the object bound as its first argument
    (a bound method's ``self``), or raise a clear error for anything else."""
    if isinstance(fn, _Compiled):
        raise UsageError(
            f"sourcegrad.{kind} of a function made by sourcegrad ({fn!r}): sourcegrad.grad, value_and_grad "
            f"and vjp take a gradient (grad(grad(f)), and functions that call one); for sourcegrad.{kind}, "
            "differentiate the original function (sourcegrad.hvp and sourcegrad.hessian give second derivatives)"
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
    elif (
        hasattr(type(fn), "__call__")
        and not isinstance(fn, (types.BuiltinFunctionType,))
        and not hasattr(fn, "nin")
    ):
        hint = f"differentiate its __call__ method: sourcegrad.{kind}(obj.__call__)"
    else:
        hint = "register an adjoint rule for it with @sourcegrad.adjoint, and call it from a Python function"
    raise NoSourceError(
        f"sourcegrad.{kind} differentiates Python functions read from source; {fn!r} ({what}) "
        f"has no Python source of its own. {hint}."
    )


def _wrt_names(fn, wrt):
    params = parameters_of(fn)
    single = not isinstance(wrt, (tuple, list))
    items = [wrt] if single else list(wrt)
    if not items:
        raise WrtError(
            "wrt selects no argument; give an index, a parameter name, or a tuple of them"
        )
    names = []
    for w in items:
        if isinstance(w, bool) or not isinstance(w, (int, str)):
            raise WrtError(f"wrt must be an int, a parameter name, or a tuple of them, not {w!r}")
        if isinstance(w, int):
            if not -len(params) <= w < len(params):
                raise WrtError(
                    f"wrt={w} is out of range: {_fname(fn)} has {len(params)} parameter(s) {params}"
                )
            names.append(params[w])
        else:
            if w not in params:
                raise WrtError(
                    f"wrt={w!r} names no parameter of {_fname(fn)}; its parameters are {params}"
                )
            names.append(w)
    if len(set(names)) != len(names):
        raise WrtError(f"wrt names a parameter twice: {names}")
    return names, single, [params.index(n) for n in names]


def _fname(fn):
    return getattr(fn, "__qualname__", repr(fn))


class _Compiled:
    """A lazily compiled gradient of ``fn``; the callable users hold."""

    def __init__(
        self,
        fn,
        wrt,
        mode,
        kind,
        check_finite=False,
        unroll=8,
        specialize=True,
        has_aux=False,
        checkpoint=None,
        backend="numpy",
    ):
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
        self.checkpoint = _checkpoint_option(checkpoint)
        self.backend = _backends.check_backend(backend)
        if self.bound is not None:  # a bound method: wrt counts the arguments after self
            wrt = (
                tuple(w + 1 if isinstance(w, int) and w >= 0 else w for w in wrt)
                if isinstance(wrt, (tuple, list))
                else (
                    wrt + 1
                    if isinstance(wrt, int) and not isinstance(wrt, bool) and wrt >= 0
                    else wrt
                )
            )
        self.names, self.single, self.positions = _wrt_names(fn, wrt)
        self.params = parameters_of(fn)
        self._compiled = None
        self._specialized = {}  # argument signature -> emit.Compiled
        self._lazy = {}  # signature (None: the general code) -> the code for dask arrays (_for_lazy)
        self._recompiles = 0  # compiled again because a captured value changed (_recompiled)
        # argument key (_fast_key) -> the emit.Compiled that calls with such arguments run, once
        # they passed every check (_run's fast path)
        self._checked = {}
        self._by_position = not fn.__code__.co_kwonlyargcount
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
                if (
                    signature is not None
                    and signature not in self._specialized
                    and len(self._specialized) >= MAX_SPECIALIZATIONS
                ):
                    signature = None
                c = self._compiled if signature is None else self._specialized.get(signature)
                if c is None:
                    c = self._compile(signature)
        return c

    def _compile(self, signature):
        """Compile for ``signature`` (None: the general code) and cache it; the lock is held."""
        from .transforms import compile_gradient

        c = compile_gradient(
            self.fn,
            self.names,
            self.mode,
            self.check_finite,
            self.unroll,
            signature,
            self.has_aux,
            checkpoint=self.checkpoint,
        )
        if self.backend != "numpy":
            c = _backends.accelerated(self, c, signature)
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
            raise WrtError(
                f"cannot differentiate {_fname(self.fn)} with respect to {name!r}: it is "
                f"{_describe(a)}; {_wrt_advice(name, a)}"
            )

    def _run(self, args, kwargs):
        key = _fast_key(args) if not kwargs and self._by_position else None
        compiled = self._checked.get(key) if key is not None else None
        if compiled is not None:  # arguments like these passed every check before and ran this
            if compiled.guard is None or compiled.guard():
                try:
                    return (
                        compiled.function(*args)
                        if self.bound is None
                        else compiled.function(self.bound, *args)
                    )
                except Exception as e:
                    _annotate(e)
                    raise
        return self._run_checked(args, kwargs, key)

    def _run_checked(self, args, kwargs, key=None):
        """``_run`` with every check made; remembers the outcome for arguments ``key`` describes."""
        if self.bound is not None:
            args = (self.bound,) + args
        if self.fn.__code__.co_kwonlyargcount:
            args, kwargs = _all_positional(self.fn, args, kwargs)
        self._check_args(args, kwargs)
        signature = signature_of(args) if self.specialize and not kwargs else None
        compiled = self.compiled(signature)
        if compiled.guard is not None and not compiled.guard():
            compiled = self._recompiled(signature, compiled)
        # (no dask array without dask)
        if compiled.tests and _DASK in sys.modules and _any_lazy(args, kwargs):
            compiled = self._for_lazy(signature, compiled)
        if key is not None and (key in self._checked or len(self._checked) < _MAX_CHECKED):
            self._checked[key] = compiled
        try:
            if self.fn.__code__.co_kwonlyargcount:  # keyword-only in the generated code too
                args, kwargs = _keyword_only(self.fn, args)
            return compiled.function(*args, **kwargs)
        except Exception as e:
            _annotate(e)
            raise

    def _current(self, signature=None):
        """``compiled(signature)``, compiled again if a captured value it decided from changed."""
        c = self.compiled(signature)
        return c if c.guard is None or c.guard() else self._recompiled(signature, c)

    def _for_lazy(self, signature, plain):
        """The code for dask arguments of a function with data-dependent tests: ``plain`` (the
        code for ``signature``, or the general code) with the live values persisted before each
        test (``runtime/lazy.py``). Compiled on first use, and again if its guard fails."""
        key = None if plain is self._compiled else signature
        c = self._lazy.get(key)
        if c is None or (c.guard is not None and not c.guard()):
            from .transforms import compile_gradient

            with self._lock:
                c = self._lazy.get(key)
                if c is None or (c.guard is not None and not c.guard()):
                    c = self._lazy[key] = compile_gradient(
                        self.fn,
                        self.names,
                        self.mode,
                        self.check_finite,
                        self.unroll,
                        key,
                        self.has_aux,
                        checkpoint=self.checkpoint,
                        lazy=True,
                    )
        return c

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
                        "arguments instead",
                        RuntimeWarning,
                        stacklevel=4,
                    )
        return current

    def refusal_in_gradient(self):
        """Why this cannot be called inside a differentiated function: (what it is, the hint), or
        None (a gradient: its second derivatives are generated, ``higher.py``)."""
        from .higher import refusal

        return refusal(self)

    def tangent_of_call(self, args, tangents):
        """The tangent of ``self(*args)`` given the tangents of ``args`` (``higher.py``)."""
        from .higher import tangent_of_call

        return tangent_of_call(self, args, tangents)

    def pullback_of_call(self, k, ct, args):
        """The adjoint of ``args[k]`` for ``y = self(*args)`` given ``y``'s adjoint (``higher.py``)."""
        from .higher import pullback_of_call

        return pullback_of_call(self, k, ct, args)

    def _repr_html_(self):
        """Jupyter's view: the function beside its generated code, each line linked to its source."""
        from .notebook import html

        return html(self)

    def __repr__(self):
        return f"<sourcegrad.{self.kind} of {_fname(self.fn)} wrt {self.names if not self.single else self.names[0]!r}>"


def _float_leaves(a):
    """Is ``a`` a float array, or a list/tuple/dict whose leaves all are (or Python floats), with at
    least one leaf? (Empty containers inside one are fine: ``{"layers": [], "out": w}``.)"""
    leaves = _leaves(a)
    return leaves is not None and leaves > 0


def _leaves(a):
    """The number of float leaves in ``a``, or None if some leaf is not a float. A dataclass or
    namedtuple counts the fields that hold float values (the others are static), a registered
    object its children (``runtime/structures.py``)."""
    if type(a) is float:
        return 1
    if _structures.is_structure(a):
        children = _structures.differentiable_children(a)
        if set(children) & _structures.ARRAY_ATTRIBUTES:
            return None  # p.T, p.shape read as array attributes
        counts = [_leaves(x) for x in children.values()]
        return None if None in counts else sum(counts)
    if isinstance(a, (list, tuple, dict)):
        counts = [_leaves(x) for x in (a.values() if isinstance(a, dict) else a)]
        return None if None in counts else sum(counts)
    return 1 if getattr(getattr(a, "dtype", None), "kind", None) in ("f", "c") else None


def _describe(a):
    if _structures.is_namedtuple(a):
        return f"a {type(a).__name__} namedtuple"
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


_TAKES = (
    "gradients are taken with respect to float arrays and Python floats, or dicts, lists, tuples, dataclasses, "
    "namedtuples and registered objects of them"
)


def _wrt_advice(name, a):
    """Why a ``wrt`` argument cannot be differentiated, and the fix for its kind of value."""
    if _structures.is_structure(a):
        return _structure_advice(name, a)
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
        return (
            f"gradients need floating-point values. Pass e.g. {name}.astype(float) or {name} * 1.0."
        )
    library = type(a).__module__.split(".")[0]
    if library == "torch":
        return f"sourcegrad differentiates numpy (and cupy) arrays, not torch tensors: pass {name}.detach().cpu().numpy()."
    if hasattr(a, "__array__") or hasattr(a, "__array_interface__"):
        return f"sourcegrad differentiates numpy (and cupy) arrays: pass np.asarray({name})."
    if type(a).__module__ == "builtins":  # None, a string, ...
        if "[" in name:
            return f"{_TAKES}: pass it as an argument of its own, outside {name.split('[')[0]}."
        return f"{_TAKES}; leave {name} out of wrt."
    return (
        f"{_TAKES}: make {type(a).__name__} a dataclass, or register it with "
        f"sourcegrad.register_structure({type(a).__name__}, flatten, unflatten); or pass the arrays it holds "
        "as arguments, or as a dict of them."
    )


def _structure_advice(name, a):
    """Why a dataclass, namedtuple or registered object cannot be differentiated."""
    children = _structures.differentiable_children(a)
    clash = sorted(set(children) & _structures.ARRAY_ATTRIBUTES)
    if clash:
        return (
            f"its field {clash[0]!r} holds float values but {name}.{clash[0]} reads as the array attribute "
            f".{clash[0]} in a differentiated function: rename the field."
        )
    bad = _first_bad_leaf(a, name)
    if bad is not None:
        path, leaf = bad
        return f"{path} is {_describe(leaf)}: {_wrt_advice(path, leaf)}"
    return (
        f"there is nothing in it to differentiate: none of its fields holds float values ({_TAKES}; a "
        "field of ints, strings or None is carried over unchanged)."
    )


def _first_bad_leaf(a, path):
    """``(path, leaf)`` of the first leaf of a dict/list/tuple tree that is not a float value
    (a structure's differentiable fields as ``path.name``)."""
    if _structures.is_structure(a):
        items = [(f"{path}.{k}", x) for k, x in _structures.differentiable_children(a).items()]
    else:
        items = [
            (f"{path}[{k!r}]", x) for k, x in (a.items() if isinstance(a, dict) else enumerate(a))
        ]
    for where, x in items:
        if (
            _structures.is_structure(x)
            and set(_structures.differentiable_children(x)) & _structures.ARRAY_ATTRIBUTES
        ):
            return where, x
        if isinstance(x, (list, tuple, dict)) or _structures.is_structure(x):
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
            raise hide_internal_frames(e)  # SOURCEGRAD_TRACEBACK=full shows sourcegrad's frames
        return value, (grads if self.single or len(self.names) > 1 else (grads,))


class Grad(_Compiled):
    def __call__(self, *args, **kwargs):
        try:
            value, grads = self._run(args, kwargs)
        except SourcegradError as e:
            raise hide_internal_frames(e)  # SOURCEGRAD_TRACEBACK=full shows sourcegrad's frames
        grads = grads if self.single or len(self.names) > 1 else (grads,)
        return (grads, value[1]) if self.has_aux else grads


class Vjp(_Compiled):
    def __call__(self, *args, **kwargs):
        try:
            value, pullback = self._run(args, kwargs)
        except SourcegradError as e:
            raise hide_internal_frames(e)  # SOURCEGRAD_TRACEBACK=full shows sourcegrad's frames
        if self.has_aux:  # as jax.vjp(f, x, has_aux=True): (value, pullback, aux)
            value, aux = value
            return (
                value,
                Pullback(pullback, value, wrap=not self.single and len(self.names) == 1),
                aux,
            )
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
        # as the seed writes it: pullback([0.1, 1.0, 0.0001])
        if isinstance(cotangent, (list, tuple)):
            cotangent = _array_like(cotangent, self._like)
        shape = getattr(cotangent, "shape", ())
        if shape != self._shape and not (shape == () and self._shape == ()):
            raise UsageError(
                f"the cotangent has shape {shape}, but the function's value has shape "
                f"{self._shape}: pass a cotangent shaped like the value"
            )
        self._fn = self._like = None
        try:
            grads = fn(cotangent)
            return (grads,) if self._wrap else grads
        except SourcegradError as e:
            _annotate(e)
            raise hide_internal_frames(e)  # SOURCEGRAD_TRACEBACK=full shows sourcegrad's frames
        except Exception as e:
            _annotate(e)
            raise


def _array_like(values, like):
    """``values`` (a list or tuple of numbers) as an array of ``like``'s array module, in its
    float dtype."""
    from .runtime import array_module

    dtype = getattr(like, "dtype", None)
    return array_module(like).asarray(
        values, dtype=dtype if dtype is not None and dtype.kind in "fc" else None
    )


class Jvp(_Compiled):
    """``jf(*args, tangent)`` -> ``(value, tangent of the value)`` (forward mode, ``jvp``)."""

    def _positional(self, args, kwargs):
        """The arguments as the compiled code takes them: all by position, defaults applied
        (binding a signature costs microseconds; a call that passes every parameter by position
        needs none)."""
        if kwargs or self.fn.__code__.co_kwonlyargcount or len(args) != len(self.params):
            args, _ = _all_positional(self.fn, args, kwargs)
        return args

    def _compile(self, signature):
        from .transforms import compile_jvp

        self._compiled = c = compile_jvp(self.fn, self.names, self.unroll)
        return c

    def __call__(self, *args, **kwargs):
        try:
            if not args:
                raise UsageError(
                    f"{self.__name__} takes {_fname(self.fn)}'s arguments followed by the tangent"
                )
            args, tangents = args[:-1], self._tangents(args[-1])
            if self.bound is not None:
                args = (self.bound,) + args
            args = self._positional(args, kwargs)
            self._check_args(args, {})
            for name, i, t in zip(self.names, self.positions, tangents):
                _check_tangent(name, args[i], t)
            compiled = self._current()
        except SourcegradError as e:
            raise hide_internal_frames(e)  # SOURCEGRAD_TRACEBACK=full shows sourcegrad's frames
        try:
            return compiled.function(*args, *tangents)
        except Exception as e:
            _annotate(e)
            raise

    def _tangents(self, tangent):
        if self.single:
            return (tangent,)
        if not isinstance(tangent, tuple) or len(tangent) != len(self.names):
            raise UsageError(
                f"wrt={tuple(self.names)!r} selects {len(self.names)} arguments: pass a tuple of "
                f"{len(self.names)} tangents, one for each, in that order"
            )
        return tangent


def _check_tangent(name, x, t):
    """A tangent has its argument's shape (containers: checked where the code reads them)."""
    if isinstance(x, (list, tuple, dict)) or _structures.is_structure(x):
        return
    if np.shape(t) != np.shape(x):
        raise UsageError(
            f"the tangent for {name!r} has shape {np.shape(t)}, but {name} has shape {np.shape(x)}: "
            "pass a tangent shaped like the argument"
        )


def jvp(f=None, wrt=0, unroll=8, backend="numpy"):
    """Jacobian-vector products (forward mode), compiled from the source as readable code:
    ``jf = jvp(f)``; ``jf(*args, tangent)`` returns ``(f(*args), J @ tangent)``, the derivative
    of ``f`` at ``args`` in the direction ``tangent`` (shaped like the ``wrt`` argument; a tuple of
    tangents, one per argument, for a tuple ``wrt``)::

        >>> jf = sourcegrad.jvp(lambda x: np.sin(x) * 2.0)
        >>> jf(np.array([0.0, 1.0]), np.array([1.0, 0.0]))
        (array([0.        , 1.68294197]), array([2., 0.]))

    ``source(jf)`` shows the generated code: each line of ``f`` followed by its tangent line.
    A primitive without a tangent rule reached by the tangent is refused when ``jf`` compiles.
    ``backend``: forward mode runs on numpy; ``"numba"`` says so with a ``BackendWarning``."""
    if f is None:
        return lambda g: jvp(g, wrt, unroll, backend)
    if _backends.check_backend(backend) == "numba":
        warnings.warn(
            f"sourcegrad: jvp of {_fname(f)} runs on numpy, not numba: forward mode is not compiled "
            "with numba yet",
            _backends.BackendWarning,
            stacklevel=2,
        )
    try:
        return Jvp(f, wrt, "jvp", "jvp", unroll=unroll, specialize=False)
    except SourcegradError as e:
        raise hide_internal_frames(e)


def jacfwd(f, wrt=0, unroll=8):
    """The Jacobian by forward mode, one ``jvp`` per entry of the ``wrt`` argument (by columns):
    ``jacfwd(f)(*args)`` has shape ``f(*args).shape + x.shape`` (a tuple of them for a tuple
    ``wrt``). Best when the input is smaller than the output; see ``jacobian``."""
    jf = jvp(f, wrt, unroll)

    def jacobian_by_columns(*args, **kwargs):
        xs = _wrt_values(jf, args, kwargs)
        columns = []
        for k, x in enumerate(xs):
            cols = []
            for e in _basis(x):
                ts = tuple(e if j == k else _zeros_of(x2) for j, x2 in enumerate(xs))
                _, t = jf(*args, ts[0] if jf.single else ts, **kwargs)
                cols.append(np.asarray(t))
            out = np.stack(cols, axis=-1) if cols else np.zeros((0,))
            columns.append(out.reshape(out.shape[:-1] + np.shape(x)))
        return columns[0] if jf.single else tuple(columns)

    return functools.update_wrapper(jacobian_by_columns, f, updated=())


def jacobian(f, wrt=0, unroll=8):
    """The Jacobian by reverse mode, one pullback per entry of the output (by rows):
    ``jacobian(f)(*args)`` has shape ``f(*args).shape + x.shape`` (a tuple of them for a tuple
    ``wrt``). Best when the output is smaller than the input; see ``jacfwd``."""
    vf = vjp(f, wrt=wrt, unroll=unroll)

    def jacobian_by_rows(*args, **kwargs):
        value, pullback = vf(*args, **kwargs)
        shape = np.shape(value)
        rows = []
        for k in range(int(np.prod(shape))):
            if k:
                value, pullback = vf(*args, **kwargs)  # a pullback runs once
            e = np.zeros(
                shape,
                dtype=np.result_type(value, np.float64) if np.iscomplexobj(value) else np.float64,
            )
            e[np.unravel_index(k, shape)] = 1.0
            g = pullback(e)
            rows.append(g if isinstance(g, tuple) else (g,))
        xs = _wrt_values(vf, args, kwargs)
        out = []
        for j, x in enumerate(xs):
            r = (
                np.stack([np.asarray(row[j]) for row in rows])
                if rows
                else np.zeros((0,) + np.shape(x))
            )
            out.append(r.reshape(shape + np.shape(x)))
        return out[0] if vf.single else tuple(out)

    return functools.update_wrapper(jacobian_by_rows, f, updated=())


class Hvp(_Compiled):
    """``hf(*args, v)`` -> the Hessian of scalar ``f`` times ``v`` (``hvp``).

    ``outer`` (parameter names; the ``wrt`` ones by default) are what the gradient of the tangent
    is taken for: the mixed second derivatives that ``grad`` of a gradient needs
    (``higher.py``)."""

    outer = None
    _positional = Jvp._positional

    _jvp = None

    def run(self, args, vs):
        """``((tangent, value), gradients)`` at ``args`` (all positional, checked by the caller):
        ``f``'s value, its tangent along ``vs`` and that tangent's gradients for ``outer`` (or
        ``wrt``), as many as the compiled code returns."""
        return self._call(self._current(self.signature(args, vs)), args, vs)

    def signature(self, args, vs):
        """What the compiled code for these arguments and vectors is specialized to."""
        return signature_of(tuple(args) + tuple(vs)) if self.specialize else None

    @staticmethod
    def _call(compiled, args, vs):
        try:
            return compiled.function(*args, *vs)
        except Exception as e:
            _annotate(e)
            raise

    def _compile(self, signature):
        """The gradient of the tangent code; ``signature`` (``signature_of`` the arguments and
        then the vectors) specializes it to their shapes, as ``value_and_grad`` is."""
        from .transforms import compile_gradient, compile_jvp

        # the tangent function of f, returning (tangent, value); its gradient is H v
        if self._jvp is None or (self._jvp.guard is not None and not self._jvp.guard()):
            self._jvp = compile_jvp(self.fn, self.names, self.unroll, tangent_first=True)
        try:
            c = compile_gradient(
                self._jvp.function,
                list(self.outer or self.names),
                "value_and_grad",
                unroll=self.unroll,
                signature=signature,
                has_aux=True,
            )
        except SourcegradError as e:
            raise _at_user_line(e, self._jvp) from None
        if signature is None:
            self._compiled = c
        else:
            self._specialized[signature] = c
        return c

    def __call__(self, *args, **kwargs):
        try:
            if not args:
                raise UsageError(
                    f"{self.__name__} takes {_fname(self.fn)}'s arguments followed by the vector v"
                )
            args, vs = args[:-1], Jvp._tangents(self, args[-1])
            if self.bound is not None:
                args = (self.bound,) + args
            args = self._positional(args, kwargs)
            self._check_args(args, {})
            for name, i, v in zip(self.names, self.positions, vs):
                _check_tangent(name, args[i], v)
            compiled = self._current(self.signature(args, vs))
        except SourcegradError as e:
            raise hide_internal_frames(e)
        (_, value), hv = self._call(compiled, args, vs)
        if np.ndim(value) != 0:
            raise UsageError(
                f"hvp needs a scalar-valued function; {_fname(self.fn)} returned shape {np.shape(value)}"
            )
        return hv


def _at_user_line(e, jvp_compiled):
    """An error located in generated jvp code (a helper with no second-order rule), moved to the
    user's line that code comes from."""
    from .errors import LocatedError

    pos = jvp_compiled.user_line(e.lineno) if isinstance(e, LocatedError) and e.lineno else None
    if pos is None or getattr(e, "filename", None) != jvp_compiled.filename:
        return e
    import linecache

    return type(e)(
        f"{e.message} (in the tangent code of {_fname(jvp_compiled.function)})",
        filename=pos.filename,
        lineno=pos.line,
        text=linecache.getline(pos.filename, pos.line),
        hint="hvp and hessian take the gradient of the forward-mode code that sourcegrad.jvp generates "
        "(sourcegrad.source(sourcegrad.jvp(f)) shows it), and that code's line is refused; so do "
        "grad(grad(f)), vjp(grad(f)) and the gradient of a function that calls grad(f)",
    )


def hvp(f=None, wrt=0, unroll=8):
    """Hessian-vector products of a scalar function: ``hvp(f)(*args, v)`` is ``H @ v``, shaped like
    the ``wrt`` argument (a tuple of vectors and of products for a tuple ``wrt``). Computed as the
    gradient of the forward-mode tangent ``grad f . v`` (reverse over forward), both generated as
    readable code: ``source(hf)`` shows it."""
    if f is None:
        return lambda g: hvp(g, wrt, unroll)
    try:
        return Hvp(f, wrt, "hvp", "hvp", unroll=unroll)
    except SourcegradError as e:
        raise hide_internal_frames(e)


def hessian(f, wrt=0, unroll=8):
    """The Hessian of a scalar function, one ``hvp`` per entry of the ``wrt`` argument:
    ``hessian(f)(*args)`` has shape ``x.shape + x.shape`` (one ``wrt`` argument)."""
    hf = hvp(f, wrt, unroll)
    if not hf.single:
        raise UsageError("hessian takes one wrt argument; use hvp for several")

    def hessian_by_columns(*args, **kwargs):
        (x,) = _wrt_values(hf, args, kwargs)
        cols = [np.asarray(hf(*args, e, **kwargs)) for e in _basis(x)]
        out = np.stack(cols, axis=-1) if cols else np.zeros(np.shape(x) + (0,))
        return out.reshape(np.shape(x) + np.shape(x))

    return functools.update_wrapper(hessian_by_columns, f, updated=())


def _wrt_values(compiled, args, kwargs):
    """The values of the ``wrt`` arguments of a call (arrays or Python floats only)."""
    full = ((compiled.bound,) + tuple(args)) if compiled.bound is not None else tuple(args)
    full, _ = _all_positional(compiled.fn, full, kwargs)
    xs = [full[i] for i in compiled.positions]
    for name, x in zip(compiled.names, xs):
        if not (
            isinstance(x, float) or getattr(getattr(x, "dtype", None), "kind", None) in ("f", "c")
        ):
            raise UsageError(
                f"a Jacobian is taken with respect to float arrays and Python floats; {name} is {_describe(x)}"
            )
    return xs


def _basis(x):
    if isinstance(x, float):
        yield 1.0
        return
    for k in range(np.size(x)):
        e = np.zeros(np.shape(x), dtype=x.dtype)
        e[np.unravel_index(k, np.shape(x))] = 1.0
        yield e


def _zeros_of(x):
    return 0.0 if isinstance(x, float) else np.zeros(np.shape(x), dtype=x.dtype)


def _checkpoint_option(checkpoint):
    """``checkpoint``: None/False, True (the default number of snapshots), or a number of snapshots."""
    if checkpoint is None or checkpoint is False:
        return None
    if checkpoint is True or (
        isinstance(checkpoint, int) and not isinstance(checkpoint, bool) and checkpoint > 0
    ):
        return checkpoint
    raise UsageError(
        f"checkpoint must be True, False or a number of snapshots (a positive int), not {checkpoint!r}"
    )


def _decorator(cls, mode, kind):
    def make(
        f=None,
        wrt=0,
        check_finite=False,
        unroll=8,
        specialize=True,
        has_aux=False,
        checkpoint=None,
        backend="numpy",
    ):
        if f is None:
            return lambda g: make(
                g, wrt, check_finite, unroll, specialize, has_aux, checkpoint, backend
            )
        if isinstance(f, _Compiled) and not has_aux:  # grad(grad(f)): second derivatives
            if backend == "numba":
                raise UsageError(
                    "a derivative of a gradient runs on the numpy backend only: drop backend='numba'"
                )
            from .higher import of_gradient

            return of_gradient(f, wrt, kind)
        try:
            return cls(
                f, wrt, mode, kind, check_finite, unroll, specialize, has_aux, checkpoint, backend
            )
        except SourcegradError as e:
            raise hide_internal_frames(e)  # SOURCEGRAD_TRACEBACK=full shows sourcegrad's frames

    return make


def grad(
    f=None,
    wrt=0,
    check_finite=False,
    unroll=8,
    specialize=True,
    has_aux=False,
    checkpoint=None,
    backend="numpy",
):
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

    ``checkpoint`` trades time for memory in long loops: ``True`` or a number of snapshots. Every
    loop outside other loops then keeps snapshots of its state instead of what every iteration
    overwrites, and the backward runs iterations again from them. A ``for`` loop follows the
    binomial schedule (Griewank's revolve): with ``n`` snapshots and ``T`` iterations it runs
    about ``(r - 1) * T`` iterations again, where ``C(n + r, n) >= T``; ``True`` takes the fewest
    snapshots with which that is at most ``T`` (about ``sqrt(2 * T)``). A ``while`` loop keeps a
    snapshot every so many iterations (``True``: about ``sqrt`` of them). The gradient is the
    same to the last bit. ``for t in sourcegrad.checkpointed(range(T)):`` checkpoints one loop
    without this keyword. ``sourcegrad.memory`` shows what is kept either way.

    ``backend``: ``"numpy"`` (default); ``"numba"`` compiles the code specialized to each
    signature with numba (``pip install "sourcegrad[numba]"``), keeping numpy, with one
    ``BackendWarning`` naming the reason, for anything it cannot compile exactly; ``"auto"``
    compiles with numba for small arrays and keeps whichever ran faster. See the README's Backends.
    """
    return _decorator(Grad, "value_and_grad", "grad")(
        f, wrt, check_finite, unroll, specialize, has_aux, checkpoint, backend
    )


def value_and_grad(
    f=None,
    wrt=0,
    check_finite=False,
    unroll=8,
    specialize=True,
    has_aux=False,
    checkpoint=None,
    backend="numpy",
):
    """Like ``grad``, but returns ``(value, gradient)`` from one run of the forward; with
    ``has_aux=True``, ``((loss, aux), gradient)``."""
    return _decorator(ValueAndGrad, "value_and_grad", "value_and_grad")(
        f, wrt, check_finite, unroll, specialize, has_aux, checkpoint, backend
    )


def vjp(
    f=None,
    wrt=0,
    check_finite=False,
    unroll=8,
    specialize=True,
    has_aux=False,
    checkpoint=None,
    backend="numpy",
):
    """Vector-Jacobian products: ``vf(*args)`` returns ``(value, pullback)``; ``pullback(ct)``
    returns the gradient of ``sum(value * ct)`` with respect to ``wrt``. Any output shape.
    A pullback can be called once (it consumes the forward's tape).

    ``has_aux=True`` (as in JAX): ``f`` returns a pair ``(value, aux)``; ``vf(*args)`` returns
    ``(value, pullback, aux)``, ``aux`` as computed, with no gradient."""
    return _decorator(Vjp, "vjp", "vjp")(
        f, wrt, check_finite, unroll, specialize, has_aux, checkpoint, backend
    )


def source(g, *args, **kwargs):
    """The generated Python source of anything made by ``grad``, ``value_and_grad`` or ``vjp``:
    the general code, or, given example arguments, the code specialized for their shapes (what a
    call with those arguments runs; keyword-only parameters by keyword, defaults applied; with
    dask arrays, the code that persists before data-dependent tests)."""
    if not isinstance(g, _Compiled):
        raise UsageError(
            f"sourcegrad.source needs a function made by grad, value_and_grad, vjp or jvp, got {g!r}"
        )
    try:
        return _current_compiled(g, args, kwargs).source
    except SourcegradError as e:
        raise hide_internal_frames(e)  # SOURCEGRAD_TRACEBACK=full shows sourcegrad's frames


def _current_compiled(g, args, kwargs=None):
    """The ``emit.Compiled`` a call of ``g`` with ``args`` runs (the general code without them)."""
    kwargs = kwargs or {}
    if isinstance(g, (Jvp, Hvp)):  # forward mode has one code, for every shape
        args, kwargs = (), {}
    if g.bound is not None and (args or kwargs):
        args = (g.bound,) + args
    if (args or kwargs) and g.fn.__code__.co_kwonlyargcount:  # bound as a call binds them (_run)
        args, kwargs = _all_positional(g.fn, args, kwargs)
    if kwargs:
        raise UsageError(
            "sourcegrad.source takes keyword arguments only for keyword-only parameters; "
            "pass the others by position"
        )
    signature = signature_of(args) if args and g.specialize else None
    c = g._current(signature)
    if c.tests and not isinstance(g, (Jvp, Hvp)) and _any_lazy(args, {}):
        c = g._for_lazy(signature, c)  # dask arguments: the code that persists before its tests
    return c
