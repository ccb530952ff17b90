"""The callable a transformation returns, and the cache of code compiled for it.

``_Compiled`` holds what was asked (the function, ``wrt``, the options) and compiles on first use,
once even under concurrent calls: the general code, and up to ``MAX_SPECIALIZATIONS`` versions
specialized to argument shapes (``signature_of``). A call whose arguments have the types and
shapes of one that passed every check runs its code at once (``_fast_key``, the per-call fast
path); code that decided from a captured value that has since changed is compiled again.
The compiler (and libcst) loads on the first compilation, not on ``import sourcegrad``.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import types
import warnings

import numpy as np

from . import backends as _backends
from .arguments import (
    _all_positional,
    _checkpoint_option,
    _fname,
    _keyword_only,
    _wrt_names,
    check_array_kinds,
    check_wrt_values,
    parameters_of,
)
from .errors import NoSourceError, UsageError
from .runtime.contexts import unwind_contexts
from .primitives import wrapper_of

_ndarray = np.ndarray


# After this many compilations caused by changed captured values, a gradient warns (once).
RECOMPILE_WARNING = 8


# How many argument signatures one gradient compiles a specialized version for; calls with
# further signatures share the general code (as fast as before specialization, never wrong).
MAX_SPECIALIZATIONS = 8


# What ``signature_of`` records of an argument that is None (a bool is recorded as itself).
NONE_ARGUMENT = "None"


def signature_of(args):
    """What specialization keys on: each positional argument's shape if it is an array, ``float``
    or ``int`` for a Python number, ``list`` or ``tuple`` for a Python sequence (``a + b`` of two
    lists concatenates), the bool itself for a bool and ``NONE_ARGUMENT`` for None (a branch on
    ``verbose`` or ``ax is None`` is decided when compiling: the code of a path the call cannot
    take is left out), None otherwise. None when no argument is an array or a sequence (nothing
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
        elif t is bool:
            key.append(a)  # the code is specialized to its value (signature_of)
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
    if t is bool:
        return a
    if a is None:
        return NONE_ARGUMENT
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
    wrapper = wrapper_of(fn)  # grad(np.tanh): a library (or registered) function with a rule
    if wrapper is not None:
        return wrapper, None
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        return fn.__func__, fn.__self__
    if isinstance(fn, types.FunctionType):
        if isinstance(getattr(fn, "__wrapped__", None), types.FunctionType):
            from .transforms.source import unwrap

            fn = unwrap(fn)  # functools.wraps: what it wraps, where the wrapper adds nothing
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
        # signature (None: the general code) -> the codes compiled for it that decided from the
        # arguments' objects (their classes, a function passed in): each call runs the one whose
        # arg_guard its arguments pass (``_for_arguments``), newest first
        self._variants = {}
        self._lazy = {}  # signature (None: the general code) -> the code for dask arrays (_for_lazy)
        self._recompiles = 0  # compiled again because a captured value changed (_recompiled)
        # argument key (_fast_key) -> (the function, its guard) that calls with such arguments run,
        # once they passed every check (_run's fast path); a bound method's object already bound
        self._checked = {}
        # wrt=(0,): the gradient is a 1-tuple of the one the compiled code returns
        self._one_tuple = not self.single and len(self.names) == 1
        self._by_position = not fn.__code__.co_kwonlyargcount
        self._lock = threading.Lock()
        functools.update_wrapper(self, original, updated=())
        self.__name__ = f"{getattr(fn, '__name__', 'f')}_{kind}"

    def compiled(self, signature=None, args=None):
        """The general compiled code, or the one specialized to ``signature`` (``signature_of``);
        either is compiled on first use (``args``: the call's arguments, all by position, the
        compile's examples: what an object argument's attributes hold)."""
        c = self._compiled if signature is None else self._specialized.get(signature)
        if c is None and signature is not None and len(self._specialized) >= MAX_SPECIALIZATIONS:
            return self.compiled(None, args)
        if c is not None and c.blind and args is not None:
            with self._lock:  # (compiled before any call, without the arguments it decides from)
                c = self._compiled if signature is None else self._specialized.get(signature)
                if c.blind:
                    c = self._compile(signature, args)
            return c
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
                    c = self._compile(signature, args)
        return c

    def _count_recompile(self, changed, why):
        """Count a compile made again (``why``: the reason, with ``{}`` for what changed); warn
        once, at the ``RECOMPILE_WARNING``-th."""
        self._recompiles += 1
        if self._recompiles == RECOMPILE_WARNING:
            warnings.warn(
                f"sourcegrad compiled {_fname(self.fn)} again {self._recompiles} times because "
                + why.format(", ".join(changed) or "?"),
                RuntimeWarning,
                stacklevel=5,
            )

    def _compile(self, signature, args=None):
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
            examples=args,
        )
        if c.arg_guard is not None:
            variants = self._variants.setdefault(signature, [])
            variants.insert(0, c)
            del variants[MAX_SPECIALIZATIONS:]
        if self.backend != "numpy":
            c = _backends.accelerated(self, c, signature)
        if signature is None:
            self._compiled = c
        else:
            self._specialized[signature] = c
        return c

    def _check_args(self, args, kwargs):
        check_array_kinds(self.fn, args, kwargs)
        check_wrt_values(self.fn, self.names, self.positions, args, kwargs)

    def _run(self, args, kwargs):
        key = _fast_key(args) if not kwargs and self._by_position else None
        hit = self._checked.get(key) if key is not None else None
        if hit is not None:  # arguments like these passed every check before and ran this
            function, guard, arg_guard = hit
            if (guard is None or guard()) and (
                arg_guard is None or arg_guard(args if self.bound is None else (self.bound,) + args)
            ):
                try:
                    return function(*args)
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
        # every argument, defaults applied: what the compile may decide from (a function passed
        # in, or a parameter's default one), and what its arg_guard checks
        full = args
        if kwargs or len(args) != len(self.params):
            try:
                full = _all_positional(self.fn, args, kwargs)[0]
            except TypeError:  # (the call itself says what is wrong with it, as Python would)
                pass
        compiled = self.compiled(signature, full)
        if compiled.guard is not None and not compiled.guard():
            compiled = self._recompiled(signature, compiled, full)
        if compiled.arg_guard is not None and not compiled.arg_guard(full):
            compiled = self._for_arguments(signature, compiled, full)
        # (no dask array without dask)
        if compiled.tests and _DASK in sys.modules and _any_lazy(args, kwargs):
            compiled = self._for_lazy(signature, compiled, full)
        if key is not None and (key in self._checked or len(self._checked) < _MAX_CHECKED):
            function = compiled.function
            if self.bound is not None:
                function = functools.partial(function, self.bound)
            self._checked[key] = (function, compiled.guard, compiled.arg_guard)
        try:
            if self.fn.__code__.co_kwonlyargcount:  # keyword-only in the generated code too
                args, kwargs = _keyword_only(self.fn, args)
            return compiled.function(*args, **kwargs)
        except Exception as e:
            _annotate(e)
            raise

    def _current(self, signature=None, args=None):
        """``compiled(signature)``, compiled again if a captured value it decided from changed
        (or, given the call's ``args``, a part of them it decided from)."""
        c = self.compiled(signature, args)
        if c.guard is not None and not c.guard():
            c = self._recompiled(signature, c, args)
        if args is not None and c.arg_guard is not None and not c.arg_guard(args):
            c = self._for_arguments(signature, c, args)
        return c

    def _for_arguments(self, signature, stale, args):
        """The code for ``signature`` whose decisions from the arguments' objects ``args`` pass
        (the class of an attribute whose method it inlined, a function passed in): one compiled
        before for arguments like these, or a new one. ``stale``: the code they did not pass."""
        with self._lock:
            key = None if self._compiled is stale else signature
            for c in self._variants.get(key, ()):
                if (c.guard is None or c.guard()) and c.arg_guard(args):
                    break
            else:
                changed = stale.changed(args)
                c = self._compile(key, args)
                self._count_recompile(
                    changed,
                    "what its arguments hold changed ({}): the class of an object whose method it "
                    "calls, or a function passed in",
                )
            if key is None:
                self._compiled = c
            else:
                self._specialized[key] = c
        return c

    def _for_lazy(self, signature, plain, args=None):
        """The code for dask arguments of a function with data-dependent tests: ``plain`` (the
        code for ``signature``, or the general code) with the live values persisted before each
        test (``runtime/lazy.py``). Compiled on first use, and again if its guard fails."""
        key = None if plain is self._compiled else signature
        c = self._lazy.get(key)
        if c is None or not _holds(c, args):
            from .transforms import compile_gradient

            with self._lock:
                c = self._lazy.get(key)
                if c is None or not _holds(c, args):
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
                        examples=args,
                    )
        return c

    def _recompiled(self, signature, stale, args=None):
        """Compile ``stale`` again: a captured value it decided from changed (what a name calls,
        an unrolled loop's bound, an integer's value, whether a constant is a number or an array).
        The generated code reads captured values live; only such decisions need this."""
        changed = stale.changed()
        with self._lock:
            key = None if self._compiled is stale else signature
            current = self._compiled if key is None else self._specialized.get(key)
            if current is stale:  # (not already compiled again by another thread)
                self._variants.pop(key, None)  # (they decided from the same captured values)
                current = self._compile(key, args)
                self._count_recompile(
                    changed,
                    "values it captures and decides from changed ({}); pass them as arguments instead",
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


def _holds(c, args):
    """Do the values ``c`` was compiled from still hold (the arguments' parts, given ``args``)?"""
    return (c.guard is None or c.guard()) and (
        args is None or c.arg_guard is None or c.arg_guard(args)
    )


def _annotate(e):
    """An exception leaving generated code: the context managers it entered are exited, and the
    exception names the user's line."""
    from .transforms.emit import annotate

    unwind_contexts(e)
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
