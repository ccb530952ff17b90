"""``scipy.special``'s reductions and slopes (``transforms/rules/special.py``); scipy imports lazily.

An adjoint helper takes the output adjoint ``g`` first and returns the input's adjoint; a slope
helper (masks, shares) returns what a template multiplies ``g`` by. All work through the arrays'
own module and allocate like the input (``zeros_like``)."""

from __future__ import annotations

import numpy as np

from ..backend import _float_dtype
from ..broadcast import unbroadcast, unreduce
from .indexing import cast_like


def polygamma_of(n, x):
    """``scipy.special.polygamma(n, x)`` in ``x``'s dtype (the slope of ``gammaln``, ``digamma``)."""
    from scipy import special

    return (
        special.polygamma(n, x).astype(_float_dtype(x), copy=False)
        if hasattr(x, "shape")
        else float(special.polygamma(n, x))
    )


def _logsumexp_exponentials(a, y, axis=None, b=None, keepdims=False):
    """``exp(a - y)`` on the shape ``a`` and ``b`` broadcast to, and an array of that shape (the
    terms of ``y = logsumexp(a, axis, b)`` over ``y``'s exponential, ``b`` not applied)."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b)) if b is not None else np.shape(a)
    like = np.broadcast_to(np.asarray(a), shape)
    return np.exp(a - unreduce(y, like, axis, keepdims)), like


def logsumexp_adjoint(g, a, y, axis=None, b=None, keepdims=False, which=0):
    """Adjoint of ``a`` (``which`` 0) or ``b`` (1) in ``y = logsumexp(a, axis, b, keepdims)``:
    ``g b exp(a - y)`` and ``g exp(a - y)``, broadcast back over the reduced axes. Where every
    ``a`` is ``-inf`` (``y`` is ``-inf``) the adjoint is NaN."""
    e, like = _logsumexp_exponentials(a, y, axis, b, keepdims)
    gg = unreduce(g, like, axis, keepdims)
    out = gg * e * (1.0 if b is None else b) if which == 0 else gg * e
    return unbroadcast(cast_like(out, [a, b][which]), [a, b][which])


def softmax_adjoint(g, y, axis=None):
    """Adjoint of ``y = softmax(x, axis)``: ``y (g - sum(g y))`` over ``axis``."""
    return y * (g - np.sum(g * y, axis=axis, keepdims=True))


def log_softmax_adjoint(g, y, axis=None):
    """Adjoint of ``y = log_softmax(x, axis)``: ``g - exp(y) sum(g)`` over ``axis``."""
    return g - np.exp(y) * np.sum(g, axis=axis, keepdims=True)
