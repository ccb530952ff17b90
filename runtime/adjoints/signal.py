"""``scipy.signal``'s linear filter (``transforms/rules/signal.py``); scipy imports lazily.

``y = lfilter(b, a, x)`` is ``Y = (B / A) X`` in the delay operator: ``a[0] y[n] = sum_k b[k]
x[n - k] - sum_{k >= 1} a[k] y[n - k]``, from rest. Its transpose runs the same filter backward in
time, so with ``q`` the adjoint ``g`` passed back through ``1 / A`` (``g`` reversed, filtered by
``lfilter([1], a, .)``, reversed again)::

    x: the same with B / A          b[k]: sum_n q[n] x[n - k]          a[k]: -sum_n q[n] y[n - k]

summed over the other axes (the coefficients are shared by every signal).
"""

from __future__ import annotations

import numpy as np

from ..backend import _float_dtype
from ..broadcast import unbroadcast


def _backward(b, a, g, axis):
    """``g`` filtered by ``b / a`` backward in time along ``axis``: the filter's transpose."""
    from scipy import signal

    return np.flip(signal.lfilter(b, a, np.flip(g, axis), axis=axis), axis)


def lfilter_adjoint_x(g, b, a, x, axis=-1):
    """Adjoint of ``x`` in ``lfilter(b, a, x, axis)``."""
    out = _backward(b, a, np.asarray(g), axis)
    return unbroadcast(out, x).astype(_float_dtype(x), copy=False)


def _correlate_lags(q, v, n, axis):
    """``sum_n q[n] v[n - k]`` for ``k = 0 .. n-1`` along ``axis``, summed over the other axes."""
    q, v = np.moveaxis(q, axis, -1), np.moveaxis(np.broadcast_to(v, np.shape(q)), axis, -1)
    length = q.shape[-1]
    return np.array(
        [np.sum(q[..., k:] * v[..., : length - k]) if k < length else 0.0 for k in range(n)]
    )


def _coefficients(out, like):
    if isinstance(like, (list, tuple)):
        return unbroadcast(out, like)  # a list of coefficients: its entries'
    return np.reshape(out, np.shape(like)).astype(_float_dtype(like), copy=False)


def lfilter_adjoint_b(g, b, a, x, axis=-1):
    """Adjoint of the numerator ``b`` in ``lfilter(b, a, x, axis)``."""
    q = _backward([1.0], a, np.asarray(g), axis)
    return _coefficients(_correlate_lags(q, np.asarray(x), np.size(b), axis), b)


def lfilter_adjoint_a(g, b, a, y, axis=-1):
    """Adjoint of the denominator ``a`` in ``y = lfilter(b, a, x, axis)`` (``a[0]`` included)."""
    q = _backward([1.0], a, np.asarray(g), axis)
    return _coefficients(-_correlate_lags(q, np.asarray(y), np.size(a), axis), a)
