"""Derivatives of gradients: ``grad``, ``value_and_grad`` and ``vjp`` of a gradient made by
sourcegrad, and the adjoint of a call to one inside a differentiated function (a gradient
penalty, a meta-learning step).

A gradient ``g = grad(f, wrt=A)`` computes ``dA f``. Its vector-Jacobian product with a cotangent
``u`` (shaped like ``g``'s value), with respect to the parameters ``B``, is ``dB <dA f, u>``: the
gradient for ``B`` of the forward-mode derivative of ``f`` along ``u`` for ``A``. That is the code
``hvp`` generates (reverse over forward: ``Hvp`` with ``outer=B``), so the second derivatives are
generated, readable code too (``source`` shows it), loops and branches included, and whatever that
code cannot differentiate is refused at the line of ``f`` it comes from.
"""

from __future__ import annotations

import numpy as np

from .arguments import _all_positional, _check_tangent, _describe, _wrt_names
from .errors import SourcegradError, UsageError, hide_internal_frames
from .transformations import Grad, Hvp, ValueAndGrad
from .runtime import ZERO, zeros_like
from .runtime.structures import finalize


def second_order(g, outer, along=None):
    """The compiled ``dB <dA f, u>`` for ``g = grad(f, wrt=A)`` and ``B = outer`` (parameter
    names), made once per ``g`` and ``B``: an ``Hvp`` whose gradient is taken for ``B``. With
    ``along`` (parameter names), ``A`` is those instead of ``g``'s (``tangent_of_call``)."""
    cache = g.__dict__.setdefault("_second_order", {})
    key = (tuple(outer), tuple(along or ()))
    h = cache.get(key)
    if h is None:
        inner = tuple(along) if along else tuple(g.names) if not g.single else g.names[0]
        h = Hvp(g.fn, inner, "hvp", "hvp", unroll=g.unroll)
        h.outer = tuple(outer)
        h.__name__ = f"{g.fn.__name__}_second_order"
        h = cache.setdefault(key, h)
    return h


def _first_order(g, name):
    """``grad(f, wrt=name)`` for ``g``'s ``f``, made once per ``g`` and ``name``."""
    cache = g.__dict__.setdefault("_first_order", {})
    if name not in cache:
        cache.setdefault(name, Grad(g.fn, name, "value_and_grad", "grad", unroll=g.unroll))
    return cache[name]


def refusal(g):
    """Why ``g`` (made by sourcegrad) cannot be differentiated or called in a differentiated
    function: (what it is, the hint), or None."""
    if isinstance(g, OfGradient):
        return (
            "a derivative of a gradient: third derivatives are not supported",
            "differentiate the function once more by hand, or use sourcegrad.hessian of the original function",
        )
    if type(g) not in (Grad, ValueAndGrad):
        return (
            f"a {g.kind} made by sourcegrad: only gradients (grad, value_and_grad) can be differentiated "
            "again",
            f"differentiate the function it is made of; sourcegrad.{g.kind} gives no second derivatives",
        )
    if g.has_aux:
        return (
            "a gradient with has_aux=True: its aux output cannot be differentiated",
            "make a gradient without has_aux for the part you differentiate",
        )
    if g.bound is not None:
        return (
            "a gradient of a bound method: second derivatives take plain functions",
            "differentiate a function of the arrays, called with the object's arrays",
        )
    return None


def _vectors(g, full, parts):
    """One tangent per ``wrt`` argument of ``g`` from the cotangent ``parts`` of its gradients,
    completed to the argument's structure (zeros where nothing flowed: a ``ZERO`` part, a dict
    entry or a list element no adjoint reached), as ``finalize`` completes a gradient."""
    out = []
    for name, i, u in zip(g.names, g.positions, parts):
        u = finalize(ZERO if u is None else u, full[i])
        _check_tangent(name, full[i], u)
        out.append(u)
    return out


def pullback_of_call(g, k, ct, args):
    """The adjoint of ``args[k]`` for ``y = g(*args)`` given ``y``'s adjoint ``ct``
    (``runtime.pullback_of_gradient``, which generated code calls)."""
    full, _ = _all_positional(g.fn, tuple(args), {})
    name = g.params[k]
    value_ct = ZERO
    if type(g) is ValueAndGrad:  # y = (value, gradient)
        value_ct, ct = (ZERO, ZERO) if ct is ZERO else ct
    total = ZERO
    parts = (ct,) if g.single else (ZERO,) * len(g.names) if ct is ZERO else tuple(ct)
    if any(p is not ZERO and p is not None for p in parts):
        total = second_order(g, (name,)).run(full, _vectors(g, full, parts))[1]
    if value_ct is not ZERO:
        first = _first_order(g, name)(*full)
        total = value_ct * first if total is ZERO else total + value_ct * first
    return zeros_like(full[k]) if total is ZERO else total


def tangent_of_call(g, args, tangents):
    """The tangent of ``y = g(*args)`` given the tangents of ``args`` (``ZERO`` where none):
    ``d/de dA f(args + e t) = dA <dK f, t>`` over the arguments ``K`` with a tangent (second
    derivatives are symmetric), and for ``value_and_grad`` the value's tangent ``<dK f, t>``
    (``runtime.tangent_of_gradient``, which forward-mode code calls)."""
    full, _ = _all_positional(g.fn, tuple(args), {})
    live = [
        k for k, t in enumerate(tangents) if t is not ZERO
    ]  # (forward mode calls this with one at least)
    vs = [finalize(tangents[k], full[k]) for k in live]
    for k, v in zip(live, vs):
        _check_tangent(g.params[k], full[k], v)
    (value_tangent, _), hv = second_order(g, g.names, along=[g.params[k] for k in live]).run(
        full, vs
    )
    if not g.single and len(g.names) == 1:
        hv = (hv,)
    return (value_tangent, hv) if type(g) is ValueAndGrad else hv


class OfGradient(Hvp):
    """``grad``, ``value_and_grad`` or ``vjp`` (``kind``) of a gradient ``g = grad(f, wrt=A)`` made
    by sourcegrad, with respect to ``g``'s parameters ``wrt``: ``dB <dA f, u>``, with ``u = 1`` for
    ``grad`` (so ``g`` must have a scalar value: ``A`` is one scalar argument)."""

    def __init__(self, g, wrt, kind):
        why = refusal(g)
        if why is not None:
            raise UsageError(f"sourcegrad.{kind} of {g!r}: it is {why[0]}; {why[1]}")
        if not g.single:
            raise UsageError(
                f"sourcegrad.{kind} of {g!r}: its value is a tuple of gradients; differentiate a "
                "gradient with one wrt argument, or call it inside a function you differentiate"
            )
        super().__init__(g.fn, g.names[0], "hvp", kind, unroll=g.unroll)
        self.inner = g
        names, self.outer_single, _ = _wrt_names(g.fn, wrt)
        self.outer = tuple(names)
        self.__name__ = f"{g.__name__}_{kind}"

    def __call__(self, *args, **kwargs):
        try:
            full, _ = _all_positional(self.fn, args, kwargs)
            self._check_args(full, {})
            for name in self.outer:
                self._check_float(name, full[self.params.index(name)])
            x = full[self.positions[0]]
            if self.kind == "grad" and np.ndim(x) != 0:
                raise UsageError(
                    f"sourcegrad.grad of {self.inner!r} needs a scalar value, but the gradient has shape "
                    f"{np.shape(x)} (that of {self.names[0]}); use sourcegrad.vjp, sourcegrad.hvp or "
                    "sourcegrad.hessian for array arguments"
                )
            value = None if self.kind == "grad" else self.inner(*args, **kwargs)
            if self.kind == "vjp":
                return value, _Pullback(self, full, value)
            one = 1.0 if isinstance(x, float) else np.ones(np.shape(x), dtype=x.dtype)
            grads = self.apply(full, one)
        except SourcegradError as e:
            raise hide_internal_frames(e)
        return grads if self.kind == "grad" else (value, grads)

    def _check_float(self, name, a):
        """An argument differentiated (``wrt``) is a float value, as ``grad`` requires."""
        if not (
            isinstance(a, float) or getattr(getattr(a, "dtype", None), "kind", None) in ("f", "c")
        ):
            raise UsageError(
                f"cannot differentiate {self.inner!r} with respect to {name!r}: it is {_describe(a)}; "
                "second derivatives are taken with respect to float arrays and Python floats"
            )

    def apply(self, full, u):
        """``dB <dA f(full), u>``: one gradient, or a tuple of them for a tuple ``wrt``."""
        _check_tangent(self.names[0], full[self.positions[0]], u)
        hv = self.run(full, (u,))[1]
        return hv if self.outer_single or len(self.outer) > 1 else (hv,)

    def __repr__(self):
        return f"<sourcegrad.{self.kind} of {self.inner!r}>"


class _Pullback:
    """``vjp(grad(f))``'s pullback: the cotangent is shaped like the gradient. Runs any number of
    times (the second-order code keeps no tape between calls)."""

    def __init__(self, of, full, value):
        self._of, self._full, self._shape = of, full, np.shape(value)

    def __call__(self, cotangent):
        if np.shape(cotangent) != self._shape:
            raise UsageError(
                f"the cotangent has shape {np.shape(cotangent)}, but the gradient has shape "
                f"{self._shape}: pass a cotangent shaped like the gradient"
            )
        try:
            return self._of.apply(self._full, cotangent)
        except SourcegradError as e:
            raise hide_internal_frames(e)


def of_gradient(g, wrt, kind):
    """``sourcegrad.grad``/``value_and_grad``/``vjp`` (``kind``) of ``g``, a gradient."""
    try:
        return OfGradient(g, wrt, kind)
    except SourcegradError as e:
        raise hide_internal_frames(e)
