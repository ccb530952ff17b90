"""The zero adjoint and the adjoints of containers.

``ZERO`` is the adjoint of a value no output depends on (yet); ``acc`` adds where either side may
be it. A list or tuple's adjoint is a ``SeqAdjoint`` (one entry per element, added entry by
entry), a dict's a ``MapAdjoint``; ``zeros_like`` makes a zero adjoint of any value's kind.
"""

from __future__ import annotations

from .backend import _float_dtype, array_module

__all__ = ["ZERO", "acc", "SeqAdjoint", "MapAdjoint", "split_last", "zeros_like"]


class _Zero:
    """The adjoint of a value no output depends on (yet). Never mixed into arithmetic: generated
    code tests ``x_bar is ZERO`` where the analysis cannot decide statically."""

    __slots__ = ()

    def __repr__(self):
        return "ZERO"

    def __reduce__(self):
        return "ZERO"

    def __bool__(self):
        return False


ZERO = _Zero()


def acc(total, g):
    """``total + g`` where either may be ``ZERO``."""
    if total is ZERO:
        return g
    if g is ZERO:
        return total
    return total + g


class SeqAdjoint(list):
    """The adjoint of a list or tuple: one entry per element (``ZERO`` where nothing flowed).
    ``+`` adds entry by entry, never concatenates."""

    __slots__ = ()

    def __add__(self, other):
        if other is ZERO:
            return self
        return SeqAdjoint(acc(a, b) for a, b in zip(self, other))

    __radd__ = __add__
    __iadd__ = __add__  # never list's extend

    def __getitem__(self, idx):
        got = list.__getitem__(self, idx)
        return SeqAdjoint(got) if isinstance(idx, slice) else got


class MapAdjoint(dict):
    """The adjoint of a dict: one entry per key that a gradient reached."""

    __slots__ = ()

    def __add__(self, other):
        if other is ZERO:
            return self
        out = MapAdjoint(self)
        for k, v in other.items():
            out[k] = acc(out.get(k, ZERO), v)
        return out

    __radd__ = __add__


def split_last(g):
    """The adjoint of a list's last element and of the rest (undoing ``append``)."""
    if g is ZERO:
        return ZERO, ZERO
    return g[-1], g[:-1]


def _container_zeros(like):
    if isinstance(like, dict):
        return MapAdjoint()
    return SeqAdjoint([ZERO] * len(like))


def zeros_like(x):
    """A zero adjoint for ``x``: a float array of its shape, or 0.0 for a Python scalar."""
    if isinstance(x, (list, tuple, dict)):
        return _container_zeros(x)
    if hasattr(x, "shape"):
        return array_module(x).zeros_like(x, dtype=_float_dtype(x))
    return 0.0
