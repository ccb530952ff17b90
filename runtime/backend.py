"""Which array library a value belongs to, and what it tells about itself without computing.

``array_module`` answers numpy, cupy (an array-API namespace) or, for another NEP 18 duck array
(dask), a ``LikeModule``: numpy whose creation functions make arrays of that type. Nothing here
moves data between host and device; cupy is looked up lazily through the arrays, never imported.
``ShapeOf`` stands in for an array whose shape, dtype and module the backward needs, not its values.
"""

from __future__ import annotations

import functools
import operator
import sys

import numpy as np

from .errors import UnsupportedValueError

__all__ = ["array_module", "LikeModule", "ShapeOf"]

_ndarray = np.ndarray


def array_module(*xs):
    """numpy, or the module of the first argument that is an array of another library: its
    array-API namespace (cupy), or, for any other NEP 18 duck array (a dask array), numpy whose
    creation functions make arrays of that type (``LikeModule``)."""
    for x in xs:
        if type(x) is _ndarray:
            continue
        if type(x) is ShapeOf:
            return x.module
        mod = type(x).__module__
        if mod != "numpy" and hasattr(x, "__array_namespace__"):
            return x.__array_namespace__()
        if mod.startswith("cupy"):
            return sys.modules["cupy"]
        if hasattr(type(x), "__array_function__") and not isinstance(x, (_ndarray, np.generic)):
            return LikeModule(x)
    return np


# numpy's functions that make an array from Python values and take NEP 35's ``like=``
_LIKE_CREATORS = frozenset(
    {
        "array",
        "asarray",
        "asanyarray",
        "ascontiguousarray",
        "asfortranarray",
        "arange",
        "empty",
        "zeros",
        "ones",
        "full",
        "eye",
        "identity",
        "tri",
        "fromfunction",
        "fromiter",
        "frombuffer",
    }
)


class LikeModule:
    """numpy for a NEP 18 duck array that has no array-API namespace (a dask array): functions of
    arrays dispatch to the array's library through ``__array_function__`` as they are, and the
    functions that make arrays from Python values pass ``like=`` (NEP 35), so ``xp.asarray(1.0)``
    and ``xp.zeros(n)`` are arrays of the argument's type (lazy ones for dask), never host arrays
    mixed into its computation."""

    __slots__ = ("like",)

    def __init__(self, like):
        self.like = like

    def __getattr__(self, name):
        fn = getattr(np, name)
        if name not in _LIKE_CREATORS:
            return fn
        like = self.like
        return functools.partial(fn, like=like)

    def __repr__(self):
        return f"<numpy like {type(self.like).__module__}.{type(self.like).__name__}>"


class ShapeOf:
    """Stands in for an array whose shape and dtype, but not values, the backward needs."""

    __slots__ = ("shape", "dtype", "module")

    def __init__(self, shape, dtype, module):
        self.shape = shape
        self.dtype = dtype
        self.module = module  # the array's module, for arrays made in its place

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for k in self.shape:
            n *= k
        return n


def _shape(x):
    shape = getattr(x, "shape", None)
    if shape is not None:
        return shape
    if isinstance(x, (list, tuple)):  # numpy's view of a (nested, regular) sequence
        return (len(x),) + (_shape(x[0]) if len(x) else ())
    return ()


def _float_dtype(x):
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype.kind not in "fc":
        return np.float64
    return dtype


def _norm_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(a % ndim for a in axis))
    return (operator.index(axis) % ndim,)


def _known(shape):
    """``shape``, whose every length must be known: a lazy array with chunks of unknown length
    (dask's nan) cannot be differentiated where a rule counts its entries."""
    for n in shape:
        if n != n:
            raise UnsupportedValueError(
                f"an array of shape {shape} has lengths that are not known (chunks of unknown size); "
                "sourcegrad needs them for the gradient: call x.compute_chunk_sizes() first"
            )
    return shape
