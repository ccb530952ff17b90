"""Checks generated code makes at run time, each raising the error a user can act on: a
scalar value for ``grad``, a sequence (not a dict) to loop over, the count of an unpacking, and
(``check_finite=True``) an adjoint free of NaN and inf.
"""

from __future__ import annotations

from collections import abc

import numpy as np

from .backend import array_module
from .errors import NonScalarOutputError, UnsupportedValueError
from .zeros import ZERO, MapAdjoint, SeqAdjoint

__all__ = [
    "check_scalar",
    "seed_of",
    "check_sequence",
    "check_unpack",
    "check_unpack_star",
    "check_star_length",
    "check_entry_read",
    "check_finite",
]


def check_scalar(value, name):
    """``grad`` needs a scalar: refuse anything else before running the backward. An array of
    one entry (shape ``(1,)``, ``(1, 1)``) is one, as autograd and PyTorch take it: its gradient
    is its entry's (``seed_of``)."""
    if type(value) is np.float64 or type(value) is float:  # the common cases, first and cheap
        return
    shape = getattr(value, "shape", None)
    if shape is None:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = all(n == 1 for n in shape) and value.dtype.kind in "fiu"
    if isinstance(value, tuple):
        raise NonScalarOutputError(
            f"grad needs {name} to return a real scalar, but it returned a tuple of "
            f"{len(value)} values. With has_aux=True, {name} returns (loss, aux) and only the "
            "loss is differentiated; sourcegrad.vjp(f) takes a tuple of cotangents, one per value."
        )
    if not ok:
        raise NonScalarOutputError(
            f"grad needs {name} to return a real scalar, but it returned "
            f"{type(value).__name__}{' of shape ' + str(shape) if shape else ''}. "
            "For a non-scalar output use sourcegrad.vjp(f) and pass a cotangent to the pullback."
        )


def seed_of(value):
    """The adjoint a gradient starts from for the (checked) scalar ``value``: 1.0, or an array of
    ones shaped as a one-entry array is."""
    shape = getattr(value, "shape", ())
    if not shape:
        return 1.0
    xp = array_module(value)
    return xp.ones(shape, dtype=value.dtype if value.dtype.kind == "f" else np.float64)


def check_sequence(seq):
    """``for x in seq`` is compiled as indexing ``seq[0], seq[1], ...``: refuse a dict, whose
    iteration yields keys, not items by position, and anything else whose entries by position
    are not what iterating it gives (a set, a dict view, an iterator)."""
    if isinstance(seq, dict):
        raise UnsupportedValueError(
            "a differentiated function cannot loop over a dict directly; "
            "loop over d.items(), d.keys() or d.values()"
        )
    if isinstance(seq, (abc.Mapping, abc.Set, abc.MappingView, abc.Iterator)) or not hasattr(
        type(seq), "__getitem__"
    ):
        raise UnsupportedValueError(
            f"a differentiated function loops over a list, tuple or array of its own values, "
            f"not a {type(seq).__name__}; make it a list first (list(...), or sorted(...) for "
            "a set)"
        )


def check_unpack(value, n):
    """``a, b = value`` unpacks by indexing: first check the count, as Python would."""
    if len(value) != n:
        raise ValueError(f"cannot unpack {len(value)} values into {n} targets")


def check_unpack_star(value, n):
    """``a, *rest, z = value`` unpacks by indexing: first check there are at least ``n`` values
    (the targets other than the starred one), as Python would."""
    if len(value) < n:
        raise ValueError(f"not enough values to unpack (expected at least {n}, got {len(value)})")


def check_star_length(value, n, written):
    """``f(*args)`` (``written``) is compiled to pass ``n`` values, the length of the literal the
    name was bound to: refuse a value that gained or lost entries since (in place, through
    another name or a function it was passed to), which Python would pass in full."""
    if len(value) != n:
        raise UnsupportedValueError(
            f"{written} unpacks {len(value)} values here, but the function was compiled for the "
            f"{n} of the literal the name is bound to (its length changed in place since): pass "
            "the values one by one, or unpack a new tuple"
        )


def check_entry_read(value, where):
    """``y[0], y[1] = y[1], y[0]`` reads each entry before writing any: an element is a copy, so
    the entries swap; a row of a larger array is a view, which Python reads only after the
    first write (both rows end up equal). Refuse that case, which is rarely what was meant."""
    if getattr(value, "ndim", 0):
        raise UnsupportedValueError(
            f"{where}: this assignment swaps entries of an array that are themselves arrays "
            "(rows): numpy reads them as views, so each is read after the other was written "
            "and they do not swap; write y[[0, 1]] = y[[1, 0]] to swap them"
        )


def check_finite(g, where):
    """Raise ``FloatingPointError`` naming the user's line when ``g`` holds NaN or inf.
    (Debugging only: the test synchronizes with the device.)"""
    if g is ZERO or isinstance(g, (SeqAdjoint, MapAdjoint)):
        return g
    xp = array_module(g)
    if not bool(xp.all(xp.isfinite(g))):
        raise FloatingPointError(f"the gradient became non-finite: {where} holds NaN or inf")
    return g
