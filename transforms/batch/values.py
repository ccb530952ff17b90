"""The batch analysis's abstract values, its tables of primitives by kind, and the bindings of
calls no rule binds.

Expects nothing; guarantees the lattice ``batch/__init__.py`` documents (``SAME``, ``Rows``,
``Total``, ``COUNT``, ``IOTA``, ``RowShape``, ``Seq``, ``Mixed``) with its join, and for a
primitive, which kind of rule the walk applies to it (``is_in``, ``elementwise_key``).
"""

from __future__ import annotations

import builtins
import inspect
import operator
from dataclasses import dataclass

import numpy as np

from .. import ir


# ---- abstract values --------------------------------------------------------------------------


@dataclass(frozen=True)
class Rows:
    axis: int  # negative: counted from the end
    ndim: object = None  # the rank, where known


@dataclass(frozen=True)
class Total:
    kind: str  # "sum" | "mean"


@dataclass(frozen=True)
class RowShape:
    position: int  # the rows' axis, counted from the start
    ndim: int


@dataclass(frozen=True)
class Seq:
    item: object  # the join of a list's entries


@dataclass(frozen=True)
class Mixed:
    kinds: tuple


SAME, ZERO, COUNT, IOTA = "same", "zero", "count", "iota"  # ZERO: a literal 0 (a sum's start)


def join(a, b):
    if a is None or a == b:
        return b
    if b is None:
        return a
    if {a, b} <= {SAME, ZERO}:
        return SAME
    if a is ZERO and isinstance(b, Total):  # total = 0.0; for ...: total += np.sum(rows)
        return b
    if b is ZERO and isinstance(a, Total):
        return a
    if isinstance(a, Seq) and isinstance(b, Seq):
        return Seq(join(a.item, b.item))
    if isinstance(a, Rows) and isinstance(b, Rows) and a.axis == b.axis:
        return Rows(a.axis)  # ranks differ: not known
    return Mixed((a, b))


def is_same(v):
    return v is SAME or v is ZERO or (isinstance(v, Seq) and is_same(v.item))


# ---- primitives by kind -----------------------------------------------------------------------

OPERATORS = {
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.floordiv,
    operator.mod,
    operator.pow,
    operator.neg,
    operator.pos,
    operator.abs,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
    operator.eq,
    operator.ne,
    operator.and_,
    operator.or_,
    operator.xor,
    operator.invert,
    operator.not_,
}
ELEMENTWISE = {
    np.where,
    np.clip,
    np.real,
    np.imag,
    np.conj,
    np.asarray,
    np.array,
    np.copy,
    np.asanyarray,
    np.nan_to_num,
    np.heaviside,
    builtins.abs,
    builtins.float,
    builtins.complex,
}
SUMS = {np.sum, np.nansum, np.add.reduce}
MEANS = {np.mean}
REDUCTIONS = (
    SUMS
    | MEANS
    | {
        np.max,
        np.amax,
        np.min,
        np.amin,
        np.prod,
        np.var,
        np.std,
        np.nanmax,
        np.nanmin,
        np.nanmean,
        np.median,
        np.all,
        np.any,
        np.argmax,
        np.argmin,
        np.ptp,
        np.maximum.reduce,
        np.minimum.reduce,
        np.multiply.reduce,
        np.logaddexp.reduce,
        np.linalg.norm,
    }
)
ALONG_AXIS = {np.cumsum, np.cumprod, np.sort, np.argsort, np.flip, np.diff}
MATMUL = {operator.matmul, np.matmul, np.dot}
LIKE = {np.zeros_like, np.ones_like, np.full_like, np.empty_like}
LINEAR_UNARY = {
    operator.neg,
    operator.pos,
    np.negative,
    np.positive,
    np.real,
    np.imag,
    np.conj,
    np.asarray,
    np.array,
    np.copy,
    builtins.float,
    builtins.complex,
}


def _optional(module, *names):
    out = set()
    for name in names:
        try:
            mod = __import__(module, fromlist=["_"])
            out.add(getattr(mod, name))
        except (ImportError, AttributeError):
            pass
    return out


REDUCTIONS |= _optional("scipy.special", "logsumexp")
ALONG_AXIS |= _optional("scipy.special", "softmax", "log_softmax")
STOP = _optional("sourcegrad.runtime", "stop_gradient")


def astype_keys():
    from ..rules import indexing  # x.astype(...) is a call of a function of the rules' own

    return {k for k in (getattr(indexing, "_astype", None),) if k is not None}


NOT_CONST = object()


@dataclass(frozen=True)
class Bound:
    values: dict


def plain_binding(op):
    """Operands by parameter for a call no rule binds (``np.argmax``, which carries no gradient),
    from the function's own signature, or None."""
    try:
        bound = inspect.signature(op.key).bind(*op.args, **dict(op.kwargs))
    except (TypeError, ValueError):
        return None
    values = {}
    for name, param in bound.signature.parameters.items():
        if name in bound.arguments:
            values[name] = bound.arguments[name]
        elif param.default is not inspect.Parameter.empty and param.kind != param.VAR_KEYWORD:
            values[name] = ir.Const(param.default, repr(param.default))
    return Bound(values)


def name_of(a):
    return a.id if isinstance(a, ir.Name) else None


def is_in(key, kinds):
    if isinstance(kinds, str):
        return False
    try:
        return key in kinds
    except TypeError:  # an unhashable key
        return False


def elementwise_key(key):
    if isinstance(key, np.ufunc):
        return key.signature is None and key.nout == 1
    return is_in(key, OPERATORS) or is_in(key, ELEMENTWISE) or is_in(key, LINEAR_UNARY)
