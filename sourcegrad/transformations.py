"""The callables each transformation returns: ``Grad``, ``ValueAndGrad`` and ``Vjp`` (with its
one-shot ``Pullback``) in reverse mode; ``Jvp`` in forward mode; ``Hvp``, the gradient of the
forward-mode tangent. Each checks its call, runs the compiled code (``compiled.py``), and shapes
the result; an error sourcegrad raises reaches the user without sourcegrad's own frames.
"""

from __future__ import annotations

import numpy as np

from . import backends as _backends
from .arguments import _all_positional, _check_tangent, _fname
from .compiled import _annotate, _Compiled, signature_of
from .errors import PullbackError, SourcegradError, UsageError, hide_internal_frames


class ValueAndGrad(_Compiled):
    def __call__(self, *args, **kwargs):
        try:
            value, grads = self._run(args, kwargs)
        except SourcegradError as e:
            raise hide_internal_frames(e)  # SOURCEGRAD_TRACEBACK=full shows sourcegrad's frames
        return (value, (grads,)) if self._one_tuple else (value, grads)


class Grad(_Compiled):
    def __call__(self, *args, **kwargs):
        try:
            value, grads = self._run(args, kwargs)
        except SourcegradError as e:
            raise hide_internal_frames(e)  # SOURCEGRAD_TRACEBACK=full shows sourcegrad's frames
        if self._one_tuple:
            grads = (grads,)
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
                Pullback(pullback, value, wrap=self._one_tuple),
                aux,
            )
        return value, Pullback(pullback, value, wrap=self._one_tuple)


class Pullback:
    """``pullback(cotangent)`` -> the gradient. Runs once: the backward consumes the tape."""

    __slots__ = ("_fn", "_wrap", "_like")

    def __init__(self, fn, value, wrap=False):
        self._fn = fn
        self._wrap = wrap  # wrt=(0,): a 1-tuple of gradients
        self._like = value  # a list cotangent becomes an array of its module and float dtype

    def __call__(self, cotangent):
        fn = self._fn
        if fn is None:
            raise PullbackError(
                "this pullback was already called; a pullback runs once (it consumes its tape). "
                "Call the vjp function again for another cotangent."
            )
        cotangent = _cotangent_like(cotangent, self._like)
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


def _cotangent_like(cotangent, like, which=""):
    """``cotangent`` checked to have the shape of ``like`` (a list of numbers, as the seed writes
    it, ``pullback([0.1, 1.0, 0.0001])``, made an array). ``which``: the value's entry named."""
    if isinstance(like, tuple):
        return _tuple_cotangent(cotangent, like)
    if isinstance(cotangent, (list, tuple)):
        cotangent = _array_like(cotangent, like)
    shape, want = getattr(cotangent, "shape", ()), getattr(like, "shape", ())
    if shape != want and not (shape == () and want == ()):
        raise UsageError(
            f"the cotangent{which} has shape {shape}, but the function's value{which} has shape "
            f"{want}: pass a cotangent shaped like the value"
        )
    return cotangent


def _tuple_cotangent(cotangent, like):
    """The cotangent of a function whose value is a tuple: a tuple (or list) of as many
    cotangents, each shaped like its entry of the value."""
    if not isinstance(cotangent, (list, tuple)) or len(cotangent) != len(like):
        what = (
            f"{len(cotangent)} values"
            if isinstance(cotangent, (list, tuple))
            else f"a {type(cotangent).__name__}"
        )
        raise UsageError(
            f"the function's value is a tuple of {len(like)} values, so the cotangent is a tuple "
            f"of {len(like)} cotangents, one shaped like each; got {what}"
        )
    return tuple(_cotangent_like(c, v, f"[{k}]") for k, (c, v) in enumerate(zip(cotangent, like)))


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

    def _compile(self, signature, args=None):
        from .transforms import compile_jvp

        c = compile_jvp(self.fn, self.names, self.unroll, examples=args)
        if self.backend != "numpy":
            c = _backends.accelerated_jvp(self, c)
        self._compiled = c
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
            compiled = self._current(None, args)
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

    def _compile(self, signature, args=None):
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

    text = linecache.getline(pos.filename, pos.line)
    if "tangent_of_gradient" in e.message:  # (a gradient called in a function differentiated twice)
        return type(e)(
            "a third derivative: this line calls a gradient made by sourcegrad, and the function "
            "it is in is differentiated twice (grad of a grad, hvp, hessian, jacfwd of a grad), "
            "which would need that gradient's own second derivative; sourcegrad differentiates "
            "twice at most",
            filename=pos.filename,
            lineno=pos.line,
            text=text,
            hint="differentiate the original function twice instead (sourcegrad.hessian(f), "
            "sourcegrad.hvp(f)), or call the plain function here rather than its gradient",
        )
    return type(e)(
        f"{e.message} (in the tangent code of {_fname(jvp_compiled.function)})",
        filename=pos.filename,
        lineno=pos.line,
        text=text,
        hint="hvp and hessian take the gradient of the forward-mode code that sourcegrad.jvp generates "
        "(sourcegrad.source(sourcegrad.jvp(f)) shows it), and that code's line is refused; so do "
        "grad(grad(f)), vjp(grad(f)) and the gradient of a function that calls grad(f)",
    )
