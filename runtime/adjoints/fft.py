"""The discrete Fourier transform (``transforms/rules/fft.py``), with JAX's complex convention.

An adjoint helper takes the output adjoint ``g`` first and returns the input's adjoint; a slope
helper (masks, shares) returns what a template multiplies ``g`` by. All work through the arrays'
own module and allocate like the input (``zeros_like``)."""

from __future__ import annotations

import math

import numpy as np

from ..backend import _shape, array_module
from .common import _is_complex, _nd
from .elementwise import real_part


def _real_like(g, x):
    """The adjoint ``g`` of ``x``: its real part where ``x`` is real."""
    return g if _is_complex(x) else real_part(g)


def _fft_axes(nd, s, axes):
    """The axes a transform runs over, as numpy chooses them (``s`` alone: the last ``len(s)``)."""
    if axes is None:
        return tuple(range(nd - len(s), nd)) if s is not None else tuple(range(nd))
    return tuple(int(a) % nd for a in (axes if isinstance(axes, (tuple, list)) else (axes,)))


def _as_tuple(s):
    return None if s is None else tuple(s) if isinstance(s, (tuple, list)) else (s,)


def _resized(g, shape, axes):
    """``g`` cropped or zero-padded at the end of each of ``axes`` to ``shape`` (the adjoint of a
    transform's ``n``/``s``, which crops or pads its input)."""
    for ax in axes:
        have, want = g.shape[ax], shape[ax]
        if have > want:
            g = g[(slice(None),) * ax + (slice(0, want),)]
        elif have < want:
            pad = [(0, 0)] * g.ndim
            pad[ax] = (0, want - have)
            g = np.pad(g, pad)
    return g


_FFT_SCALE = {None: "unit", "backward": "unit", "ortho": "sqrt", "forward": "full"}


def fft_adjoint(g, a, s, axes, norm, inverse):
    """Adjoint of ``np.fft.fftn(a, s, axes, norm)`` (``ifftn`` where ``inverse``; the 1-d and 2-d
    forms too: ``s`` may be ``n`` and ``axes`` an axis). The DFT matrix is symmetric, so the
    transpose is the same transform with the same ``norm``; cropping or padding ``a`` to ``s``
    transposes to padding or cropping back."""
    xp = array_module(g)
    axes = _fft_axes(_nd(a), _as_tuple(s), axes)
    t = (xp.fft.ifftn if inverse else xp.fft.fftn)(g, axes=axes, norm=norm)
    return _real_like(_resized(t, _shape(a), axes), a)


def rfft_adjoint(g, a, s, axes, norm):
    """Adjoint of ``np.fft.rfftn(a, s, axes, norm)`` (and ``rfft``, ``rfft2``): the full
    transform's transpose applied to ``g`` padded with zeros to the whole spectrum, real part."""
    xp = array_module(g)
    s = _as_tuple(s)
    axes = _fft_axes(_nd(a), s, axes)
    lengths = s if s is not None else tuple(_shape(a)[ax] for ax in axes)
    t = xp.fft.fftn(g, s=lengths, axes=axes, norm=norm)
    return real_part(_resized(t, _shape(a), axes))


def irfft_adjoint(g, a, s, axes, norm):
    """Adjoint of ``np.fft.irfftn(a, s, axes, norm)`` (and ``irfft``, ``irfft2``), as JAX's
    transpose rule: ``conj(scale * mask * rfftn(g))``, where the mask counts each kept frequency of
    the last axis once for itself and once for its mirror (the zero frequency and, for an even
    length, the Nyquist one, have none)."""
    xp = array_module(g)
    g = real_part(g)  # the adjoint of a real result
    axes = _fft_axes(_nd(g), _as_tuple(s), axes)
    lengths = tuple(_shape(g)[ax] for ax in axes)
    t = xp.fft.rfftn(g, axes=axes)
    k, odd = t.shape[axes[-1]], lengths[-1] % 2
    mask = xp.full(k, 2.0, dtype=t.real.dtype)
    mask[0] = 1.0
    if not odd:
        mask[-1] = 1.0
    size = math.prod(lengths)
    scale = {"unit": 1.0 / size, "sqrt": 1.0 / math.sqrt(size), "full": 1.0}[_FFT_SCALE[norm]]
    t = np.conj(t * (scale * xp.reshape(mask, (k,) + (1,) * (t.ndim - 1 - axes[-1]))))
    return _real_like(_resized(t, _shape(a), axes), a)
