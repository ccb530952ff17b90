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

import functools
import operator

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
    flags = _exit_flags(fn)
    at = {id(w) for w in writes}
    objects = _points_to(fn, flags, at)
    live_after = _liveness(fn.body)
    in_lists = _appended(fn.body, flags, at)
    for w in writes:
        a = w.target
        env = objects.get(id(w), {})  # (none: no way reaches the write)
        written = env.get(a, _NONE)[0]  # the write changes the memory (or the list) a is
        inplace = isinstance(w, ir.Assign)
        for p in sorted(o[1] for o in written if o[0] == _ARG):
            sym = _augmented_symbol(w) if inplace else ""
            what = f"{sym}= on it" if inplace else "writing into it"
            if p == a:
                _refuse(src, w, f"{a!r} is an argument: {what} would change the caller's data "
                        "(numpy updates arrays in place)",
                        f"write {a} = {a} {sym} ... instead" if inplace else f"work on a copy: {a} = {a}.copy()")
            _refuse(src, w, f"{a!r} may share memory with the argument {p!r}: {what} would change the "
                    "caller's data", f"work on a copy: {a} = np.copy(...)")
        if not isinstance(w, ir.Append):
            for lst in sorted(in_lists.get(id(w), {}).get(a, frozenset()) & live_after.get(id(w), set())):
                _refuse(src, w, f"{a!r} was appended to the list {lst!r}, which is read after this write: "
                        "the list holds the array itself, so it would change too, unseen by the gradient",
                        f"append a copy: {lst}.append(np.copy({a}))")
        for n in sorted(live_after.get(id(w), set()) - {a}):
            if not (env.get(n, _NONE)[1] & written):
                continue
            if naming.snapshots.get(n) == a:
                _refuse(src, w, f"{a!r} is updated in place inside a loop over it: the loop would read the "
                        "changed array, unseen by the gradient",
                        f"loop over a copy (for ... in np.copy({a})), or write {a} = {a} + ... to make a new array")
            if n in naming.temps:
                _refuse(src, w, f"an earlier value computed from {a!r} may share its memory (a view) and is read "
                        "after this write, so it would change too, unseen by the gradient",
                        f"write {a} = {a} + ... (a new array) instead of updating it in place")
            _refuse(src, w, f"{n!r} may share memory with {a!r} (a view, another name for it, or a list or "
                    "tuple holding it) and is read after this write, so it would change too, unseen by the gradient",
                    f"take a copy where {n!r} is made: {n} = np.copy(...)")


def _is_write(s):
    return isinstance(s, (ir.SetItem, ir.Append)) or (isinstance(s, ir.Assign) and s.inplace)


_ARG, _NEW, _OLD = "argument", "newest", "older"
_NONE = (frozenset(), frozenset())


def _points_to(fn, flags=frozenset(), at=None):
    """id(statement) -> {name: (own, reach)} before the statement: the objects the name may *be*
    (whose memory, or list, a write through it changes) and those it may reach (``own`` and,
    for a tuple or list, the objects its entries may reach).

    A forward pass. An object is an argument (``(_ARG, name)``) or an allocation site; each
    site has two abstract objects, the one it made last (``_NEW``) and all it made before
    (``_OLD``), so a buffer allocated afresh in every iteration of a loop is told apart from the
    previous iteration's (recency abstraction). A view or another name is what its base is; an
    entry read from a tuple or list is one of the objects the list reaches besides itself."""
    literals = {id(s) for s in ir.walk(fn.body)
                if isinstance(s, ir.Assign) and s.op.kind == "copy" and isinstance(s.op.args[0], Tup)}

    def kind(own):
        """'list' if ``own`` holds only tuple/list literals, 'array' if none (nor arguments)."""
        lits = sum(1 for o in own if o[0] in literals)
        if own and lits == len(own):
            return "list"
        return "array" if not lits and not any(o[0] == _ARG for o in own) else "either"

    def step(s, env):
        if isinstance(s, ir.Assign) and not s.inplace:
            op = s.op
            base = op.args[0] if op.args else None
            if op.kind == "copy" and isinstance(base, Tup):  # a tuple or list literal holds its entries
                env = _age(env, id(s))
                own = frozenset({(id(s), _NEW)})
                value = (own, own.union(*(env.get(a.id, _NONE)[1] for a in base if isinstance(a, ir.Name))))
            elif _fresh(op) or not isinstance(base, ir.Name):
                env = _age(env, id(s))
                own = frozenset({(id(s), _NEW)})
                value = (own, own)
            else:
                own, reach = env.get(base.id, _NONE)
                entry = op.key is operator.getitem and not _slices(op.args[1])
                if entry and kind(own) == "list":
                    value = (reach - own, reach - own)  # one of the entries
                elif entry and kind(own) == "either":
                    value = (reach, reach)
                else:
                    value = (own, reach)  # a view, or another name for the same object
            env = dict(env)
            env[s.target] = value
            return env
        if isinstance(s, (ir.Append, ir.SetItem)) and isinstance(s.value, ir.Name):
            own, reach = env.get(s.target, _NONE)
            if isinstance(s, ir.Append) or kind(own) != "array":
                env = dict(env)  # the list now holds the value's object (an array copies it in)
                env[s.target] = (own, reach | env.get(s.value.id, _NONE)[1])
        return env

    arg = {p: frozenset({(_ARG, p)}) for p in fn.params}
    return _forward(fn.body, {p: (objs, objs) for p, objs in arg.items()}, step, _merge_points, flags, at)


def _exit_flags(fn):
    """The names that only ever hold ``True`` or ``False`` (literals assigned in the function,
    never a parameter) and are tested as ``if not flag:`` or ``LoopExit(flag)``: the flags that
    ``exits.py`` lowers ``break``, ``continue`` and ``return`` to."""
    constant, other = set(), set(fn.params)
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and not s.inplace and s.op.kind == "copy" \
                and isinstance(s.op.args[0], ir.Const) and type(s.op.args[0].value) is bool:
            constant.add(s.target)
        elif isinstance(s, (ir.Assign, ir.For, ir.SetItem, ir.Append)):
            other.add(s.target)
    tested = {s.test for s in ir.walk(fn.body) if isinstance(s, ir.LoopExit)}
    tested |= {s.test[4:] for s in ir.walk(fn.body) if isinstance(s, ir.If) and s.test.startswith("not ")}
    return frozenset((constant - other) & tested)


def _loop_flags(body, flags):
    """id(loop) -> the exit flags that are the loop's own: set to ``False`` just before it (a
    ``break`` flag) or first thing in its body (an iteration's stop flag), and tested only
    inside it. Once the loop is left their values no longer matter until they are set again."""
    sites, own = {}, {}

    def init(s):
        return isinstance(s, ir.Assign) and s.target in flags and s.op.args[0].value is False

    def walk(stmts, loops):
        inits = set()  # flags set to False by the statements just before this one
        for s in stmts:
            flag = s.test if isinstance(s, ir.LoopExit) else (
                s.test[4:] if isinstance(s, ir.If) and s.test.startswith("not ") else None)
            if flag in flags:
                sites.setdefault(flag, []).append(loops)
            if isinstance(s, ir.If):
                walk(s.body, loops)
                walk(s.orelse, loops)
            elif isinstance(s, (ir.For, ir.While)):
                own[id(s)] = inits | ({s.body[0].target} if s.body and init(s.body[0]) else set())
                walk(s.body, loops | {id(s)})
            inits = inits | {s.target} if init(s) else set()

    walk(body, frozenset())
    return {k: frozenset(f for f in fs if all(k in loops for loops in sites.get(f, ()))) for k, fs in own.items()}


def _forward(body, env, step, merge, flags=frozenset(), at=None):
    """A forward dataflow pass: id(statement) -> the state before it (merged over every way
    there), for the statements whose ids are in ``at`` (all when None). ``step(s, env)`` is a
    simple statement's effect; branches merge, loops iterate to a fixed point.

    Exits (``exits.py``) are followed exactly: the state is kept apart by which ``flags`` are
    set on the way there, so a path that set a loop's exit flag leaves the loop at its
    ``LoopExit`` and skips the statements under ``if not flag:``, and never comes round to the
    next iteration (a buffer returned early is not seen as written again after the return).
    A loop's own flags are forgotten when it is left (``_loop_flags``), so the number of states
    kept apart stays that of the ways out of the loops around a statement."""
    before = {}
    own = _loop_flags(body, flags)

    def join(a, b):  # {flags set: state} from two ways there
        out = dict(a)
        for k, e in b.items():
            out[k] = merge(out[k], e) if k in out else e
        return out

    def block(stmts, parts, leaving):
        for s in stmts:
            if at is None or id(s) in at:
                before[id(s)] = functools.reduce(merge, parts.values(), before.get(id(s), {}))
            parts = transfer(s, parts, leaving)
        return parts

    def transfer(s, parts, leaving):
        if isinstance(s, ir.If):
            flag = s.test[4:] if s.test.startswith("not ") else None
            if flag in flags:
                return join(block(s.body, _where(parts, flag, False), leaving),
                            block(s.orelse, _where(parts, flag, True), leaving))
            return join(block(s.body, parts, leaving), block(s.orelse, parts, leaving))
        if isinstance(s, (ir.For, ir.While)):
            head = parts
            while True:
                left = []
                new = join(head, block(s.body, head, left))
                if new == head:
                    return _forget(functools.reduce(join, left, head), own[id(s)], join)
                head = new
        if isinstance(s, ir.LoopExit):
            if s.test not in flags:
                leaving.append(parts)  # may leave the loop here, or go on
                return parts
            leaving.append(_where(parts, s.test, True))
            return _where(parts, s.test, False)
        if isinstance(s, ir.Assign) and s.target in flags:
            out = {}
            for k, e in parts.items():
                key = k | {s.target} if s.op.args[0].value else k - {s.target}
                out = join(out, {key: step(s, e)})
            return out
        return {k: step(s, e) for k, e in parts.items()}

    block(body, {frozenset(): env}, [])
    return before


def _forget(parts, flags, join):
    """``parts`` with ``flags`` no longer told apart (as if not set)."""
    if not flags:
        return parts
    out = {}
    for k, e in parts.items():
        out = join(out, {k - flags: e})
    return out


def _where(parts, flag, is_set):
    """The states of ``parts`` in which ``flag`` is (or is not) set."""
    return {k: e for k, e in parts.items() if (flag in k) == is_set}


def _age(env, site):
    """A new object from ``site``: what was its newest is now one of its older ones."""
    new, old = (site, _NEW), (site, _OLD)

    def aged(objs):
        return (objs - {new}) | {old} if new in objs else objs

    changed = {n: (aged(own), aged(reach)) for n, (own, reach) in env.items() if new in own or new in reach}
    return {**env, **changed} if changed else env


def _merge_points(a, b):
    if a is b:
        return a
    out = dict(a)
    for k, v in b.items():
        w = out.get(k)
        if w is None:
            out[k] = v
        elif w is not v and w != v:
            out[k] = (w[0] | v[0], w[1] | v[1])
    return out


def _appended(body, flags=frozenset(), at=None):
    """id(statement) -> {name: lists that may hold the object the name holds there}.

    A forward pass: ``xs.append(a)`` puts a's object in xs; rebinding ``a`` takes it out again
    (the name now holds another object)."""

    def step(s, held):
        if isinstance(s, ir.Append) and isinstance(s.value, ir.Name):
            held = dict(held)
            held[s.value.id] = held.get(s.value.id, frozenset()) | {s.target}
            return held
        if isinstance(s, ir.Assign) and not s.inplace and s.target in held:
            held = dict(held)
            del held[s.target]
        return held

    return _forward(body, {}, step, _merge, flags, at)


def _merge(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, frozenset()) | v
    return out


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
            return (live - {s.target}) | ir.reads(s)
        if isinstance(s, ir.If):
            return block(s.body, live) | block(s.orelse, live) | ir.reads(s)
        if isinstance(s, (ir.For, ir.While)):
            head = set(live)
            while True:
                body_in = block(s.body, head)
                if isinstance(s, ir.For):
                    body_in = body_in - {s.target}
                new = head | body_in | ir.reads(s)
                if new <= head:
                    return head
                head |= new
        return live | ir.reads(s)

    block(body, set())
    return after


def _slices(index):
    return any(isinstance(p, ir.Slice) for p in index.parts)


def _refuse(src, stmt, msg, hint):
    raise located(UnsupportedSyntaxError, src, stmt.pos, f"unsupported in-place write: {msg} (in {src.fn.__qualname__})", hint)


def _augmented_symbol(w):
    """The operator of ``a op= b`` (its statement's text is ``a op b``)."""
    parts = w.op.text.split(" ")
    return parts[1] if len(parts) == 3 else "+"
