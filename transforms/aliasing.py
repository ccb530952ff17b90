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
import re

import numpy as np

from sourcegrad.errors import UnsupportedSyntaxError

from . import ir
from sourcegrad.runtime import stop_gradient

from .fence import located
from .normalize import ATTRIBUTE_READ, Tup
from .rules import NONDIFF

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
    if key is ATTRIBUTE_READ:
        return True  # x.shape, x.ndim, x.size, x.dtype: never a view
    if op.kind == "nondiff" and key is not stop_gradient and key is not operator.getitem:
        try:
            if key in NONDIFF:
                return True  # comparisons, argmax, len, ...: new values
        except TypeError:
            pass
    if op.kind == "copy":
        a = op.args[0]
        return isinstance(a, Tup) or (isinstance(a, ir.Const) and type(a.value) in (int, float, bool))
    if isinstance(key, np.ufunc):
        return True
    try:
        return key in _FRESH or getattr(key, "__name__", "") in ("_astype",)
    except TypeError:
        return False


def check(fn, src, naming, varied):
    """Raise if an in-place write into a differentiated value could be seen through another
    name: one that may share its memory and is still read after the write."""
    stmts = list(ir.walk(fn.body))
    params = set(fn.params)
    writes = [s for s in stmts if _is_write(s) and (s.target in varied or (s.target in params and not isinstance(s, ir.Assign)))]
    if not writes:
        return
    lists = {s.target for s in stmts if isinstance(s, ir.Append)}
    group = _alias_groups(stmts, lists)
    live_after = _liveness(fn.body)
    in_lists = _appended(fn.body)
    for w in writes:
        a = w.target
        members = group.members(a)
        inplace = isinstance(w, ir.Assign)
        if not inplace and a in fn.params and a not in varied:
            members = members | {a}  # writing into any argument changes the caller's data
        for p in sorted(members & set(fn.params)):
            what = "+= on it" if inplace else "writing into it"
            if p == a:
                _refuse(src, w, f"{a!r} is an argument: {what} would change the caller's data "
                        "(numpy updates arrays in place)",
                        f"write {a} = {a} + ... instead" if inplace else f"work on a copy: {a} = {a}.copy()")
            _refuse(src, w, f"{a!r} may share memory with the argument {p!r}: {what} would change the "
                    "caller's data", f"work on a copy: {a} = np.copy(...)")
        if not isinstance(w, ir.Append):
            for lst in sorted(in_lists.get(id(w), {}).get(a, frozenset()) & live_after.get(id(w), set())):
                _refuse(src, w, f"{a!r} was appended to the list {lst!r}, which is read after this write: "
                        "the list holds the array itself, so it would change too, unseen by the gradient",
                        f"append a copy: {lst}.append(np.copy({a}))")
        for n in sorted((members - {a}) & live_after.get(id(w), set())):
            if naming.snapshots.get(n) == a:
                _refuse(src, w, f"{a!r} is updated in place inside a loop over it: the loop would read the "
                        "changed array, unseen by the gradient",
                        f"loop over a copy (for ... in np.copy({a})), or write {a} = {a} + ... to make a new array")
            if n in naming.temps:
                _refuse(src, w, f"an earlier value computed from {a!r} may share its memory (a view) and is read "
                        "after this write, so it would change too, unseen by the gradient",
                        f"write {a} = {a} + ... (a new array) instead of updating it in place")
            _refuse(src, w, f"{n!r} may share memory with {a!r} (a view or another name for it) and is read after this write, "
                    "so it would change too, unseen by the gradient",
                    f"take a copy where {n!r} is made: {n} = np.copy(...)")


def _is_write(s):
    return isinstance(s, (ir.SetItem, ir.Append)) or (isinstance(s, ir.Assign) and s.inplace)


class _Groups:
    """Union-find of names that may share memory."""

    def __init__(self):
        self.parent = {}

    def find(self, n):
        self.parent.setdefault(n, n)
        while self.parent[n] != n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def union(self, a, b):
        self.parent[self.find(a)] = self.find(b)

    def members(self, n):
        root = self.find(n)
        return {m for m in list(self.parent) if self.find(m) == root}


def _alias_groups(stmts, lists):
    groups = _Groups()
    for s in stmts:
        if isinstance(s, ir.For):
            groups.find(s.target)
        if not isinstance(s, ir.Assign) or s.inplace or _fresh(s.op):
            continue
        base = s.op.args[0] if s.op.args else None  # a view shares its first operand's memory
        if isinstance(base, ir.Name):
            n = base.id
            if not (n in lists and s.op.key is operator.getitem and not _slices(s.op.args[1])):
                groups.union(s.target, n)  # (an element of a list is not a view of the list)
        groups.find(s.target)
    return groups


def _appended(body):
    """id(statement) -> {name: lists that may hold the object the name holds there}.

    A forward pass: ``xs.append(a)`` puts a's object in xs; rebinding ``a`` takes it out again
    (the name now holds another object)."""
    before = {}

    def block(stmts, held):
        for s in stmts:
            before[id(s)] = _merge(before.get(id(s), {}), held)
            held = transfer(s, held)
        return held

    def transfer(s, held):
        if isinstance(s, ir.Append) and isinstance(s.value, ir.Name):
            held = dict(held)
            held[s.value.id] = held.get(s.value.id, frozenset()) | {s.target}
            return held
        if isinstance(s, ir.Assign) and not s.inplace and s.target in held:
            held = dict(held)
            del held[s.target]
            return held
        if isinstance(s, ir.If):
            return _merge(block(s.body, held), block(s.orelse, held))
        if isinstance(s, (ir.For, ir.While)):
            head = held
            while True:
                new = _merge(head, block(s.body, head))
                if new == head:
                    return head
                head = new
        return held

    block(body, {})
    return before


def _merge(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, frozenset()) | v
    return out


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _idents(text):
    return set(_IDENT.findall(text))


def _liveness(body):
    """id(statement) -> the names that may be read after it (before being redefined)."""
    after = {}

    def block(stmts, live):
        for s in reversed(stmts):
            after[id(s)] = after.get(id(s), set()) | live
            live = transfer(s, live)
        return live

    def transfer(s, live):
        if isinstance(s, ir.Assign):
            return (live - {s.target}) | set(s.op.arg_names()) | ({s.target} if s.inplace else set())
        if isinstance(s, ir.SetItem):
            return live | {s.target} | set(s.index.names()) | set(ir.atom_names(s.value))
        if isinstance(s, ir.Append):
            return live | {s.target} | set(ir.atom_names(s.value))
        if isinstance(s, (ir.Effect, ir.LoopExit)):
            return live | _idents(s.text if isinstance(s, ir.Effect) else s.test)
        if isinstance(s, ir.Return):
            return live | set(ir.atom_names(s.value))
        if isinstance(s, ir.If):
            return block(s.body, live) | block(s.orelse, live) | _idents(s.test)
        if isinstance(s, (ir.For, ir.While)):
            head = set(live)
            while True:
                body_in = block(s.body, head)
                if isinstance(s, ir.For):
                    body_in = body_in - {s.target}
                new = head | body_in | _idents(s.test if isinstance(s, ir.While) else s.range_text)
                if new <= head:
                    return head
                head |= new
        return live

    block(body, set())
    return after


def _slices(index):
    return any(isinstance(p, ir.Slice) for p in index.parts)


def _refuse(src, stmt, msg, hint):
    raise located(UnsupportedSyntaxError, src, stmt.pos, f"unsupported in-place write: {msg} (in {src.fn.__qualname__})", hint)
