"""Refuse in-place writes that the adjoint could not see.

The backward treats ``a[i] = v`` and ``xs.append(v)`` as producing a new value of ``a``/``xs``.
That is sound only if no other variable shares the written memory: a parameter (the caller's
array), a view (``v = a[0:2]``, ``a.T``, ``a.reshape(...)``) or a second name (``b = a``) would
see the write in the forward while its adjoint never hears of it -- a silently wrong gradient.

Expects: normalized IR. Guarantees: every written variable is defined only by operations that
return fresh memory (allocations, arithmetic, reductions, copies, list literals), and is never
the source of an alias that a user variable holds. Otherwise ``UnsupportedSyntaxError``, located
at the write, with the fix (``.copy()``).
"""

from __future__ import annotations

import operator

import numpy as np

from sourcegrad.errors import UnsupportedSyntaxError

from . import ir
from .normalize import Tup

# Operations whose result never shares memory with an operand.
_FRESH = {
    np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like, np.full_like,
    np.array, np.copy, np.arange, np.linspace, np.eye, np.identity, np.concatenate, np.stack,
    np.hstack, np.vstack, np.tile, np.repeat, np.pad, np.where, np.clip, np.outer, np.dot,
    np.matmul, np.inner, np.tensordot, np.kron, np.cumsum, np.sort, np.take, np.diff, np.cross,
    np.sum, np.mean, np.prod, np.max, np.min, np.var, np.std, np.trace, np.tril, np.triu,
    np.linalg.inv, np.linalg.solve, np.random.randn, np.random.rand, np.random.normal,
    np.random.uniform,
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
    operator.pow, operator.neg, operator.pos, operator.matmul, operator.lt, operator.le,
    operator.gt, operator.ge, operator.eq, operator.ne, operator.invert, operator.and_,
    operator.or_, operator.xor, operator.not_,
}


def _fresh(op):
    key = op.key
    if op.kind == "copy":
        a = op.args[0]
        return isinstance(a, Tup) or (isinstance(a, ir.Const) and type(a.value) in (int, float, bool))
    if isinstance(key, np.ufunc):
        return True
    try:
        return key in _FRESH or getattr(key, "__name__", "") in ("_astype",)
    except TypeError:
        return False


def check(fn, src, naming):
    """Raise if an in-place write could be seen through another name."""
    stmts = list(ir.walk(fn.body))
    written = {}
    for s in stmts:
        if isinstance(s, (ir.SetItem, ir.Append)) or (isinstance(s, ir.Assign) and s.inplace):
            written.setdefault(s.target, s)
    if not written:
        return
    for name, write in written.items():
        if name in fn.params:
            inplace = isinstance(write, ir.Assign)
            _refuse(src, write, f"{name!r} is an argument: {'+= on it' if inplace else 'writing into it'} "
                    "would change the caller's data (numpy updates arrays in place)",
                    f"write {name} = {name} + ... instead" if inplace else f"work on a copy: {name} = {name}.copy()")
    defs = {}
    for s in stmts:
        if isinstance(s, ir.Assign):
            defs.setdefault(s.target, []).append(s)
        elif isinstance(s, ir.For):
            defs.setdefault(s.target, []).append(s)
    for name, write in written.items():
        for d in defs.get(name, []):
            if d is write or (isinstance(d, ir.Assign) and d.inplace):
                continue
            if isinstance(d, ir.For) or not _fresh(d.op):
                _refuse(src, write, f"{name!r} may share memory with another array here "
                        f"(it is defined at line {d.pos.line} by an operation that can return a view)",
                        f"make it a fresh array first: {name} = np.copy(...)")
    lists = {n for n, w in written.items() if isinstance(w, ir.Append)}
    aliases = _aliases(stmts, set(written), lists)
    for s in stmts:
        if not isinstance(s, ir.Assign) or s.target in naming.temps or s.target in written:
            continue
        for n in sorted(aliases.get(s.target, ())):
            _refuse(src, written[n], f"{s.target!r} (line {s.pos.line}) may be a view of {n!r}, "
                    f"so this write would change it too, unseen by the gradient",
                    f"take a copy: {s.target} = ....copy()")


def _aliases(stmts, written, lists):
    """name -> the written arrays it may share memory with (through views, copies, temporaries)."""
    out = {}
    changed = True
    while changed:
        changed = False
        for s in stmts:
            if not isinstance(s, ir.Assign) or s.inplace or _fresh(s.op):
                continue
            srcs = set()
            for n in s.op.arg_names():
                if n in written:
                    if n in lists and s.op.key is operator.getitem and not _slices(s.op.args[1]):
                        continue  # an element of a list is not a view of the list
                    srcs.add(n)
                srcs |= out.get(n, set())
            srcs.discard(s.target)
            if srcs - out.get(s.target, set()):
                out.setdefault(s.target, set()).update(srcs)
                changed = True
    return out


def _slices(index):
    return any(isinstance(p, ir.Slice) for p in index.parts)


def _refuse(src, stmt, msg, hint):
    pos = stmt.pos
    raise UnsupportedSyntaxError(
        f"unsupported in-place write: {msg} (in {src.fn.__qualname__})",
        filename=pos.filename, lineno=pos.line, offset=pos.col, text=src.line_text(pos.line), hint=hint,
    )
