"""numba implementations of the runtime helpers that specialized generated code calls.

Imported only by the numba backend (``sourcegrad.backends``): ``sourcegrad.runtime`` itself never
imports numba. Each helper gets an ``@overload`` that numba uses when it compiles generated code
calling the helper (the generated code names the very functions the numpy backend runs), and each
overload covers only the argument types for which it computes exactly what the numpy helper does:
for anything else it raises a typing error, and the backend keeps numpy for that function.

``STAND_INS`` are what the numba variant of the generated code binds in place of helpers it
cannot run: ``descending`` for ``reversed`` over a ``range`` (numba has none), and, for
``finalize`` and ``check_scalar``, helpers that pass the value on, because the thin Python
wrapper around the compiled code (``sourcegrad.backends``) runs the real ones; None for ``ZERO``.
"""

from __future__ import annotations

import builtins

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload

from . import (
    ZERO,
    acc,
    adjoints,
    check_scalar,
    check_sequence,
    copy_value,
    finalize,
    inexact_part,
    scale_repeated,
    seed_like,
    shape_of,
    structures,
    tangents,
    unbroadcast,
    unindex,
    unreduce,
    written_part,
    zero_at,
    zeros_like,
)
from .values import _FLOAT_MAX, _FLOAT_MIN

__all__ = [
    "descending",
    "range_head",
    "as_computed",
    "checked_later",
    "fused_empty",
    "fused_reuse",
    "tape_array",
    "tape_put",
    "STAND_INS",
]


def _is_array(t):
    return isinstance(t, types.Array)


def _is_float_array(t):
    return _is_array(t) and isinstance(t.dtype, types.Float)


def _float_type(t):
    """The dtype of the float array numba builds for array type ``t``: its own, float64 for
    integers and booleans (``runtime._float_dtype`` at typing time)."""
    return t.dtype if isinstance(t.dtype, types.Float) else types.float64


def _is_number(t):
    return isinstance(t, (types.Float, types.Integer)) and not isinstance(t, types.Boolean)


def _is_none(t):
    return t is None or isinstance(t, (types.NoneType, types.Omitted))


def _is_false(t):
    """An argument given as the literal False, or left out (its default is False)."""
    if t is False:
        return True
    if isinstance(t, types.Omitted):
        return t.value is False
    return isinstance(t, types.BooleanLiteral) and t.literal_value is False


def _refuse(helper, *args):
    raise TypingError(
        f"sourcegrad's numba backend has no {helper} for ({', '.join(map(str, args))})"
    )


def descending(r):
    """``reversed(r)`` for a ``range``: the same numbers, last first (compiled: a ``range``)."""
    return reversed(r)


@overload(descending)
def _descending(r):
    if not isinstance(r, types.RangeType):
        _refuse("reversed", r)

    def impl(r):
        n = len(r)
        return range(r.start + (n - 1) * r.step, r.start - r.step, -r.step)

    return impl


def range_head(r, n):
    """``r[:n]`` for a ``range`` and a count ``n`` (compiled: numba slices no range)."""
    return r[:n]


@overload(range_head)
def _range_head(r, n):
    if not (isinstance(r, types.RangeType) and isinstance(n, types.Integer)):
        _refuse("range_head", r, n)

    def impl(r, n):
        m = min(max(n, 0), len(r))
        return range(r.start, r.start + m * r.step, r.step)

    return impl


@overload(unreduce)
def _unreduce(g, like, axis=None, keepdims=False, mean=False):
    if isinstance(g, types.Optional):  # an adjoint that may be ZERO (None), used where it is not
        g = g.type
    if not (_is_none(axis) and _is_false(mean) and _is_number(g)):
        _refuse("unreduce", g, like, axis, keepdims, mean)
    if _is_number(like):
        return lambda g, like, axis=None, keepdims=False, mean=False: g
    if not _is_array(like):
        _refuse("unreduce", g, like, axis, keepdims, mean)
    dtype = _float_type(like)
    if like.ndim == 0:
        return lambda g, like, axis=None, keepdims=False, mean=False: g

    def impl(g, like, axis=None, keepdims=False, mean=False):
        return np.full(like.shape, g, dtype)

    return impl


@overload(seed_like)
def _seed_like(like, mean=False):
    """The seed folded into a sum's (or a mean's) rule: ones (or ``1 / size``) shaped like ``like``."""
    if _is_number(like):
        return lambda like, mean=False: 1.0
    if not _is_array(like):
        _refuse("seed_like", like, mean)
    dtype = _float_type(like)
    if like.ndim == 0:
        return lambda like, mean=False: 1.0

    def impl(like, mean=False):
        return np.full(like.shape, 1.0 / max(like.size, 1) if mean else 1.0, dtype)

    return impl


@overload(unbroadcast)
def _unbroadcast(g, like):
    if _is_number(g) and _is_number(like):
        return lambda g, like: g
    if _is_float_array(g) and _is_array(like) and g.ndim == like.ndim:

        def impl(g, like):
            if g.shape != like.shape:
                # the numpy backend runs the call instead
                raise ValueError("unbroadcast: shapes differ")
            return g

        return impl
    if _is_float_array(g) and _is_number(like):
        return lambda g, like: g.sum()
    _refuse("unbroadcast", g, like)


@overload(zeros_like)
def _zeros_like(x):
    if _is_number(x):
        return lambda x: 0.0
    if _is_array(x):
        dtype = _float_type(x)
        return lambda x: np.zeros(x.shape, dtype)
    _refuse("zeros_like", x)


def _is_basic_index(t):
    """An int, a slice, or a tuple of them: numpy's basic indexing, which writes each entry once."""
    if isinstance(t, types.BaseTuple):
        return all(_is_basic_index(u) and not isinstance(u, types.BaseTuple) for u in t.types)
    return isinstance(t, (types.Integer, types.SliceType)) and not isinstance(t, types.Boolean)


@overload(unindex)
def _unindex(g, like, idx):
    if (
        isinstance(idx, types.Optional)
        and isinstance(idx.type, types.Integer)
        and _is_array(like)
        and (_is_number(g) or _is_float_array(g))
    ):
        # an index variable the backward restores, which numba types as maybe None: int() of it
        # raises where it is None (numpy's backend then runs the call and says what went wrong)
        dtype = _float_type(like)

        def optional_index(g, like, idx):
            out = np.zeros(like.shape, dtype)
            out[int(idx)] = g
            return out

        return optional_index
    if not (_is_array(like) and _is_basic_index(idx) and (_is_number(g) or _is_float_array(g))):
        _refuse("unindex", g, like, idx)
    dtype = _float_type(like)

    def impl(g, like, idx):
        out = np.zeros(like.shape, dtype)
        out[idx] = g
        return out

    return impl


@overload(written_part)
def _written_part(g, idx, value):
    if (
        isinstance(idx, types.Optional)
        and isinstance(idx.type, types.Integer)
        and _is_float_array(g)
    ):
        return lambda g, idx, value: unbroadcast(g[int(idx)], value)  # (as in unindex)
    if not (_is_float_array(g) and _is_basic_index(idx)):
        _refuse("written_part", g, idx, value)
    return lambda g, idx, value: unbroadcast(g[idx], value)


def _is_value(t):
    return _is_number(t) or _is_float_array(t)


@overload(acc)
def _acc(total, g):
    """``total + g`` where either may be ZERO, which is None in compiled code."""

    def part(t):
        return (
            isinstance(t, types.NoneType)
            or _is_value(t)
            or (isinstance(t, types.Optional) and _is_value(t.type))
        )

    if not (part(total) and part(g)):
        _refuse("acc", total, g)
    if isinstance(total, types.NoneType):
        return lambda total, g: g
    if isinstance(g, types.NoneType):
        return lambda total, g: total

    def impl(total, g):
        if total is None:
            return g
        if g is None:
            return total
        return total + g

    return impl


@overload(copy_value)
def _copy_value(x):
    if _is_array(x):
        return lambda x: x.copy()
    if _is_number(x):
        return lambda x: x
    _refuse("copy_value", x)


@overload(check_sequence)
def _check_sequence(seq):
    if _is_array(seq):
        return lambda seq: None  # an array: iterated by index, as the numpy helper allows
    _refuse("check_sequence", seq)


@overload(shape_of)
def _shape_of(x):
    return lambda x: x  # numba keeps the value (or None); only its shape and dtype are read


@overload(inexact_part)
def _inexact_part(g, y):
    """Decided when numba types the code: ``y``'s dtype is known then."""
    kind = y.dtype if isinstance(y, types.Array) else y
    if isinstance(kind, (types.Float, types.Complex)):
        return lambda g, y: g
    if not isinstance(kind, (types.Integer, types.Boolean)):
        _refuse("inexact_part", g, y)
    if _is_array(g):
        return lambda g, y: np.zeros_like(g)
    if _is_number(g):
        return lambda g, y: 0.0 * g
    _refuse("inexact_part", g, y)


@overload(zero_at)
def _zero_at(g, idx):
    if not (_is_float_array(g) and _is_basic_index(idx)):
        _refuse("zero_at", g, idx)

    def impl(g, idx):
        out = g.copy()
        out[idx] = 0
        return out

    return impl


@overload(scale_repeated)
def _scale_repeated(g, k, n):
    if not (
        _is_number(k) and isinstance(n, types.Integer) and (_is_float_array(g) or _is_number(g))
    ):
        _refuse("scale_repeated", g, k, n)

    def impl(g, k, n):
        # inf where Python's float power raises OverflowError: the loop below, as there
        s = float(k) ** n
        if _FLOAT_MIN <= abs(s) <= _FLOAT_MAX:
            return g * s
        for _ in range(n):
            g = g * k
        return g

    return impl


@overload(adjoints.extremum_share)
def _extremum_share(wins, ties, g):
    if not (_is_array(wins) and _is_array(ties) and _is_float_array(g)):
        _refuse("extremum_share", wins, ties, g)
    dtype = g.dtype

    def impl(wins, ties, g):  # 1, 1/2 or 0 exactly, in g's dtype, as numpy's
        return wins.astype(dtype) + ties.astype(dtype) * dtype(0.5)

    return impl


@overload(adjoints.power_slope)
def _power_slope(x, y):
    if not (_is_number(y) and _is_float_array(x)):
        _refuse("power_slope", x, y)

    def impl(x, y):
        if y == 0:
            return np.zeros(x.shape, x.dtype)  # the numpy helper's number 0.0, shaped like x
        if y == 2:
            return x * 2.0
        return y * x ** (y - 1)

    return impl


# ---- forward mode (jvp) ----------------------------------------------------------------------


@overload(tangents.tangent_zeros)
def _tangent_zeros(like):
    if not (_is_number(like) or _is_array(like)):
        _refuse("tangent_zeros", like)
    return lambda like: zeros_like(like)


@overload(tangents.materialize)
def _materialize(t, like):
    if isinstance(t, types.NoneType):
        return lambda t, like: zeros_like(like)
    if isinstance(t, types.Optional):
        return lambda t, like: zeros_like(like) if t is None else t
    return lambda t, like: t


@overload(tangents.selected)
def _selected(t, slope):
    if not ((_is_array(t) or _is_number(t)) and (_is_array(slope) or _is_number(slope))):
        _refuse("selected", t, slope)
    return lambda t, slope: np.where(slope != 0, t * slope, 0.0)


@overload(tangents.expand)
def _expand(t, like):
    """``t`` broadcast to ``like``'s shape, as a fresh array (``t`` itself where they agree)."""
    if _is_number(like) or (_is_array(like) and like.ndim == 0):
        if _is_number(t) or (_is_array(t) and t.ndim == 0):
            return lambda t, like: t
        _refuse("expand", t, like)
    if not _is_array(like):
        _refuse("expand", t, like)
    if _is_number(t):
        return lambda t, like: np.full(like.shape, t)
    if not (_is_float_array(t) and t.ndim <= like.ndim):
        _refuse("expand", t, like)
    if t.ndim == like.ndim:

        def same_rank(t, like):
            if t.shape == like.shape:
                return t
            return np.ascontiguousarray(np.broadcast_to(t, like.shape))

        return same_rank
    return lambda t, like: np.ascontiguousarray(np.broadcast_to(t, like.shape))


def as_computed(g, like):
    """``finalize``'s stand-in: the gradient as the compiled code computed it."""
    return g


@overload(as_computed)
def _as_computed(g, like):
    return lambda g, like: g


def checked_later(value, name):
    """``check_scalar``'s stand-in: the wrapper checks the value the compiled code returns."""


@overload(checked_later)
def _checked_later(value, name):
    return lambda value, name: None


# ZERO, the adjoint known to be zero on some paths (``if s_bar is not ZERO``), is None in compiled
# code: numba types a variable that is None on one path and an array on another as an optional
# array. The wrapper turns a None gradient back into ZERO before ``finalize``.
STAND_INS = {
    id(builtins.reversed): descending,
    id(finalize): as_computed,
    id(structures.finalize): as_computed,
    id(check_scalar): checked_later,
    id(ZERO): None,
}


def _fused_dtype(dtypes):
    """The float dtype numpy gives ``dtypes`` together (float64 for integers, or for none)."""
    dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float64)
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def fused_empty(shape, *operands):
    """The output array of a fused elementwise loop (``transforms/fusion.py``): ``shape``, of
    the float dtype numpy gives the operands' dtypes together (float64 for integers, or for
    none). (The operands are arguments of their own: numba would count references to each on
    every call to put them in a tuple.)"""
    return np.empty(shape, _fused_dtype([a.dtype for a in operands]))


@overload(fused_empty)
def _fused_empty(shape, *operands):
    dtype = _operands_dtype("fused_empty", shape, operands)
    return lambda shape, *operands: np.empty(shape, dtype)


def _operands_dtype(helper, shape, operands):
    from numba.np.numpy_support import as_dtype

    operands = getattr(operands, "types", operands)  # (a StarArgTuple when compiling)
    if not all(map(_is_array, operands)):
        _refuse(helper, shape, *operands)
    return _fused_dtype([as_dtype(t.dtype) for t in operands])


def fused_reuse(buffer, shape, *operands):
    """The output array of a fused loop that runs again (in a loop): ``buffer``, allocated once
    by ``fused_empty``, where it is what ``fused_empty(shape, operands)`` would make (its shape
    and dtype); a fresh array otherwise. The fusion pass passes a buffer only where nothing
    else can hold the loop's last output when it writes the next: every reader of that output
    makes a new value of it."""
    dtype = _fused_dtype([a.dtype for a in operands])
    if buffer.shape == tuple(shape) and buffer.dtype == dtype:
        return buffer
    return np.empty(shape, dtype)


@overload(fused_reuse)
def _fused_reuse(buffer, shape, *operands):
    from numba.np.numpy_support import from_dtype

    dtype = _operands_dtype("fused_reuse", shape, operands)
    same = (
        _is_array(buffer)
        and buffer.dtype == from_dtype(dtype)
        and buffer.ndim == len(shape)
        and buffer.layout == "C"
        and buffer.mutable
    )
    if not same:  # (typed from the values before the loop, which differ): a fresh array
        return lambda buffer, shape, *operands: np.empty(shape, dtype)

    def impl(buffer, shape, *operands):
        if buffer.shape == shape:
            return buffer
        return np.empty(shape, dtype)

    return impl


# ---- preallocated tapes (``transforms/reverse_tape.py``) ---------------------------------------


def tape_array(trips, like):
    """A tape of one row per trip of a loop: rows shaped and typed as ``like``."""
    like = np.asarray(like)
    return np.empty((trips,) + like.shape, like.dtype)


@overload(tape_array)
def _tape_array(trips, like):
    from numba.np.numpy_support import as_dtype

    if _is_array(like) and like.ndim > 0:
        dtype = as_dtype(like.dtype)
        return lambda trips, like: np.empty((trips,) + like.shape, dtype)
    if isinstance(like, (types.Number, types.Boolean)):
        dtype = as_dtype(types.unliteral(like))
        return lambda trips, like: np.empty(trips, dtype)
    _refuse("tape_array", trips, like)  # (a 0-d array: its row would be a number)


def tape_put(tape, k, value):
    """Row ``k`` of ``tape`` is ``value`` (a copy)."""
    tape[k] = value


@overload(tape_put)
def _tape_put(tape, k, value):
    """Compiled only where ``value``'s type is the row's exactly: the array was allocated from
    the variable's value before the loop, which numba may type otherwise than later ones (an
    integer before, floats after: no float is ever cut to an integer). An array is copied entry
    by entry (numba's ``tape[k] = value`` checks for overlap and broadcasts: slower)."""
    if not _is_array(tape):
        _refuse("tape_put", tape, k, value)
    if not _is_array(value):
        if tape.ndim != 1 or types.unliteral(value) != tape.dtype:
            _refuse("tape_put", tape, k, value)

        def number(tape, k, value):
            tape[k] = value

        return number
    if not (value.ndim == tape.ndim - 1 > 0 and value.dtype == tape.dtype):
        _refuse("tape_put", tape, k, value)

    def entries(tape, k, value):
        row = tape[k]
        if value.shape != row.shape:
            raise ValueError("tape_put: the value's shape is not the row's")
        for i in np.ndindex(value.shape):
            row[i] = value[i]

    def vector(tape, k, value):
        row = tape[k]
        if value.shape != row.shape:
            raise ValueError("tape_put: the value's shape is not the row's")
        for i in range(value.shape[0]):
            row[i] = value[i]

    def contiguous(tape, k, value):  # (row and value in the same order: one run of entries)
        if value.shape != tape.shape[1:]:
            raise ValueError("tape_put: the value's shape is not the row's")
        row, flat = tape[k].reshape(-1), value.reshape(-1)
        for i in range(flat.shape[0]):
            row[i] = flat[i]

    if value.ndim == 1:
        return vector
    return contiguous if value.layout == "C" and tape.layout == "C" else entries
