"""Refuse in-place writes that the adjoint could not see.

The backward treats ``a[i] = v`` and ``xs.append(v)`` as producing a new value of ``a``/``xs``.
That is sound only if no other variable shares the written memory: a parameter (the caller's
array), a view (``v = a[0:2]``, ``a.T``, ``a.reshape(...)``) or a second name (``b = a``) would
see the write in the forward while its adjoint never hears of it -- a silently wrong gradient.

Expects: normalized IR. Guarantees: every written variable is defined only by operations that
return fresh memory (allocations, arithmetic, reductions, copies, list literals), and is never
the source of an alias that a user variable holds. Otherwise ``UnsupportedSyntaxError``, located
at the write, with the fix (``.copy()``).

Cost: linear in the program (``_Forward``, ``_liveness``); ``work`` counts the steps.
"""

from __future__ import annotations

import operator

import numpy as np

from sourcegrad.errors import UnsupportedSyntaxError

from . import ir
from sourcegrad.runtime import stop_gradient

from .fence import located
from .ir import ATTRIBUTE_READ, Tup
from .rules import FRESH, NONDIFF, UFUNC_AT


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
        return isinstance(a, Tup) or (
            isinstance(a, ir.Const) and type(a.value) in (int, float, bool)
        )
    if isinstance(key, np.ufunc):
        return True
    try:
        return key in FRESH  # declared with each primitive's rule (``rules.facts``)
    except TypeError:
        return False


def check(fn, src, naming, varied):
    """Raise if an in-place write into a differentiated value could be seen through another
    name: one that may share its memory and is still read after the write."""
    params = set(fn.params)
    writes = [
        s
        for s in ir.walk(fn.body)
        if _is_write(s)
        and (s.target in varied or (s.target in params and not isinstance(s, ir.Assign)))
    ]
    if not writes:
        return
    flags = _exit_flags(fn)
    live_after, dead = _liveness(fn.body, {id(w) for w in writes})
    objects = _points_to(
        fn, flags, {id(w): live_after.get(id(w), set()) | {w.target} for w in writes}, dead
    )
    in_lists = _appended(fn.body, flags, {id(w): {w.target} for w in writes}, dead)
    for w in writes:
        a = w.target
        env = objects.get(id(w), {})  # (none: no way reaches the write)
        written = env.get(a, _NONE)[0]  # the write changes the memory (or the list) a is
        inplace = isinstance(w, ir.Assign)
        for p in sorted(o[1] for o in written if o[0] == _ARG):
            scatter = _scatter_of(w) if inplace else None
            sym = _augmented_symbol(w) if inplace and scatter is None else ""
            what = (
                (f"{scatter} on it" if scatter else f"{sym}= on it")
                if inplace
                else "writing into it"
            )
            if p == a:
                _refuse(
                    src,
                    w,
                    f"{a!r} is an argument: {what} would change the caller's data "
                    "(numpy updates arrays in place)",
                    f"write {a} = {a} {sym} ... instead"
                    if inplace and not scatter
                    else f"work on a copy: {a} = {a}.copy()",
                )
            _refuse(
                src,
                w,
                f"{a!r} may share memory with the argument {p!r}: {what} would change the "
                "caller's data",
                f"work on a copy: {a} = np.copy(...)",
            )
        if not isinstance(w, ir.Append):
            for lst in sorted(
                in_lists.get(id(w), {}).get(a, frozenset()) & live_after.get(id(w), set())
            ):
                _refuse(
                    src,
                    w,
                    f"{a!r} was appended to the list {lst!r}, which is read after this write: "
                    "the list holds the array itself, so it would change too, unseen by the gradient",
                    f"append a copy: {lst}.append(np.copy({a}))",
                )
        for n in sorted(live_after.get(id(w), set()) - {a}):
            if not (env.get(n, _NONE)[1] & written):
                continue
            if naming.snapshots.get(n) == a:
                _refuse(
                    src,
                    w,
                    f"{a!r} is updated in place inside a loop over it: the loop would read the "
                    "changed array, unseen by the gradient",
                    f"loop over a copy (for ... in np.copy({a})), or write {a} = {a} + ... to make a new array",
                )
            if n in naming.temps:
                _refuse(
                    src,
                    w,
                    f"an earlier value computed from {a!r} may share its memory (a view) and is read "
                    "after this write, so it would change too, unseen by the gradient",
                    f"write {a} = {a} + ... (a new array) instead of updating it in place",
                )
            _refuse(
                src,
                w,
                f"{n!r} may share memory with {a!r} (a view, another name for it, or a list or "
                "tuple holding it) and is read after this write, so it would change too, unseen by the gradient",
                f"take a copy where {n!r} is made: {n} = np.copy(...)",
            )


def _is_write(s):
    return isinstance(s, (ir.SetItem, ir.Append)) or (isinstance(s, ir.Assign) and s.inplace)


class Work:
    """What the analyses did, summed over every compile in the process: statements visited, and
    name entries touched one by one (merged where two ways meet, aged by an allocation, recorded
    at a write, dropped when dead). ``tests/test_aliasing.py`` holds it linear in the program."""

    def __init__(self):
        self.statements = 0
        self.entries = 0

    def total(self):
        return self.statements + self.entries


work = Work()

_ARG, _NEW, _OLD = "argument", "newest", "older"
_NONE = (frozenset(), frozenset())


def _points_to(fn, flags, keep, dead):
    """id(write) -> {name: (own, reach)} before the write, for the names in ``keep[id(write)]``."""
    arg = {p: frozenset({(_ARG, p)}) for p in fn.params}
    env = {p: (objs, objs) for p, objs in arg.items()}
    return _Forward(fn.body, _PointsTo(fn), flags, keep, dead).run(env)


class _PointsTo:
    """The objects each name may *be* (``own``: whose memory, or list, a write through it
    changes) and those it may reach (``reach``: ``own`` and, for a tuple or list, the objects its
    entries may reach).

    An object is an argument (``(_ARG, name)``) or an allocation site; each site has two abstract
    objects, the one it made last (``_NEW``) and all it made before (``_OLD``), so a buffer
    allocated afresh in every iteration of a loop is told apart from the previous iteration's
    (recency abstraction). A view or another name is what its base is; an entry read from a
    tuple or list is one of the objects the list reaches besides itself.

    ``step`` updates a state in place. ``holders`` remembers, for each site, every name that was
    ever given its newest object, so that an allocation ages those names only instead of every
    name in the state."""

    def __init__(self, fn):
        self.literals = {
            id(s)
            for s in ir.walk(fn.body)
            if isinstance(s, ir.Assign) and s.op.kind == "copy" and isinstance(s.op.args[0], Tup)
        }
        self.holders = {}

    def kind(self, own):
        """'list' if ``own`` holds only tuple/list literals, 'array' if none (nor arguments)."""
        lits = sum(1 for o in own if o[0] in self.literals)
        if own and lits == len(own):
            return "list"
        return "array" if not lits and not any(o[0] == _ARG for o in own) else "either"

    def step(self, s, env):
        if isinstance(s, ir.Assign) and not s.inplace:
            self.put(env, s.target, self.value(s, env))
        elif isinstance(s, (ir.Append, ir.SetItem)) and isinstance(s.value, ir.Name):
            own, reach = env.get(s.target, _NONE)
            if isinstance(s, ir.Append) or self.kind(own) != "array":
                # the list now holds the value's object (an array copies it in)
                self.put(env, s.target, (own, reach | env.get(s.value.id, _NONE)[1]))

    def value(self, s, env):
        op = s.op
        base = op.args[0] if op.args else None
        if op.kind == "copy" and isinstance(base, Tup):  # a tuple or list literal holds its entries
            own = self.allocate(env, id(s))
            return own, own.union(
                *(env.get(a.id, _NONE)[1] for a in base if isinstance(a, ir.Name))
            )
        if _fresh(op) or not isinstance(base, ir.Name):
            own = self.allocate(env, id(s))
            return own, own
        own, reach = env.get(base.id, _NONE)
        entry = op.key is operator.getitem and not _slices(op.args[1])
        if entry and self.kind(own) == "list":
            return reach - own, reach - own  # one of the entries
        if entry and self.kind(own) == "either":
            return reach, reach
        return own, reach  # a view, or another name for the same object

    def allocate(self, env, site):
        """A new object from ``site``: what was its newest is now one of its older ones."""
        new, old = (site, _NEW), (site, _OLD)
        holders = self.holders.get(site, ())
        work.entries += len(holders)
        for n in holders:
            v = env.get(n)
            if v is not None and (new in v[0] or new in v[1]):
                env[n] = (_aged(v[0], new, old), _aged(v[1], new, old))
        return frozenset({new})

    def put(self, env, name, value):
        env[name] = value
        for objs in value:
            for o in objs:
                if o[1] == _NEW:
                    self.holders.setdefault(o[0], set()).add(name)

    @staticmethod
    def merge(a, b):
        return a if a is b or a == b else (a[0] | b[0], a[1] | b[1])


def _aged(objs, new, old):
    return (objs - {new}) | {old} if new in objs else objs


def _appended(body, flags, keep, dead):
    """id(write) -> {name: lists that may hold the object the name holds there}, for the names
    in ``keep[id(write)]``."""
    return _Forward(body, _Appended(), flags, keep, dead).run({})


class _Appended:
    """``xs.append(a)`` puts a's object in xs; rebinding ``a`` takes it out again (the name now
    holds another object)."""

    @staticmethod
    def step(s, held):
        if isinstance(s, ir.Append) and isinstance(s.value, ir.Name):
            held[s.value.id] = held.get(s.value.id, frozenset()) | {s.target}
        elif isinstance(s, ir.Assign) and not s.inplace:
            held.pop(s.target, None)

    merge = staticmethod(operator.or_)


def _exit_flags(fn):
    """The names that only ever hold ``True`` or ``False`` (literals assigned in the function,
    never a parameter) and are tested as ``if not flag:`` or ``LoopExit(flag)``: the flags that
    ``exits.py`` lowers ``break``, ``continue`` and ``return`` to."""
    constant, other, tested = set(), set(fn.params), set()
    for s in ir.walk(fn.body):
        if (
            isinstance(s, ir.Assign)
            and not s.inplace
            and s.op.kind == "copy"
            and isinstance(s.op.args[0], ir.Const)
            and type(s.op.args[0].value) is bool
        ):
            constant.add(s.target)
        elif isinstance(s, (ir.Assign, ir.For, ir.SetItem, ir.Append)):
            other.add(s.target)
        elif isinstance(s, ir.LoopExit):
            tested.add(s.test)
        elif isinstance(s, ir.If) and s.test.startswith("not "):
            tested.add(s.test[4:])
    return frozenset((constant - other) & tested)


def _loop_flags(body, flags):
    """id(loop) -> the exit flags that are the loop's own: set to ``False`` just before it (a
    ``break`` flag) or first thing in its body (an iteration's stop flag), and tested only
    inside it. Once the loop is left their values no longer matter until they are set again."""
    sites, own = {}, {}
    if not flags:
        return {id(s): frozenset() for s in ir.walk(body) if isinstance(s, (ir.For, ir.While))}

    def init(s):
        return isinstance(s, ir.Assign) and s.target in flags and s.op.args[0].value is False

    def walk(stmts, loops):
        inits = set()  # flags set to False by the statements just before this one
        for s in stmts:
            flag = (
                s.test
                if isinstance(s, ir.LoopExit)
                else (s.test[4:] if isinstance(s, ir.If) and s.test.startswith("not ") else None)
            )
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
    return {
        k: frozenset(f for f in fs if all(k in loops for loops in sites.get(f, ())))
        for k, fs in own.items()
    }


class _Forward:
    """A forward dataflow pass: ``run(env)`` gives id(statement) -> {name: value} before the
    statement (merged over every way there) for the names ``keep[id(statement)]``. The domain's
    ``step(s, env)`` is a simple statement's effect on a state, in place; ``merge`` joins two
    values of a name (a name missing from a state has none yet). Branches merge, loops iterate to
    a fixed point.

    Exits (``exits.py``) are followed exactly: the state is kept apart by which ``flags`` are
    set on the way there (``parts``: flags set -> state), so a path that set a loop's exit flag
    leaves the loop at its ``LoopExit`` and skips the statements under ``if not flag:``, and
    never comes round to the next iteration (a buffer returned early is not seen as written
    again after the return). A loop's own flags are forgotten when it is left (``_loop_flags``),
    so the number of states kept apart stays that of the ways out of the loops around a statement.

    Linear in the program: a state is updated in place along straight-line code and copied only
    where ways part (a branch, a loop's head, a way out of a loop); where ways meet only the names
    whose values differ are merged. A name is dropped from the state where it dies (``dead``, from
    ``_liveness``): no live name's value depends on it, and kept, it would go on growing through
    loops and make them walk again for nothing. Each loop keeps a summary, its head (the state at
    the top of its body, merged over every entry) and the state it leaves with: reached again with
    nothing its head does not hold already (the next round of a loop around it), it gives the same
    exit without walking its body, so an inner loop is walked again only when what reaches it
    grows, not once per round of every loop around it."""

    def __init__(self, body, domain, flags, keep, dead):
        self.body, self.domain, self.flags, self.keep, self.dead = body, domain, flags, keep, dead
        self.own = _loop_flags(body, flags)
        self.before = {}
        self.summaries = {}  # id(loop) -> (head, exit)

    def run(self, env):
        self.block(self.body, {frozenset(): env}, [])
        return self.before

    def block(self, stmts, parts, leaving):
        """``parts`` after ``stmts``; ``parts`` is theirs to update (so is every state passed on)."""
        for s in stmts:
            if id(s) in self.keep:
                self.record(s, parts)
            parts = self.transfer(s, parts, leaving)
            if self.dead.get(id(s)):
                self.prune(parts, self.dead[id(s)])
        return parts

    def prune(self, parts, names):
        """Drop the names no statement reads any more: their values cannot change a live name's,
        and kept they would only grow, through loops, for nothing."""
        work.entries += len(names) * len(parts)
        for env in parts.values():
            for n in names:
                env.pop(n, None)

    def record(self, s, parts):
        rec = self.before.setdefault(id(s), {})
        names = self.keep[id(s)]
        work.entries += len(names) * len(parts)
        for env in parts.values():
            for n in names:
                v = env.get(n)
                if v is not None:
                    w = rec.get(n)
                    rec[n] = v if w is None else self.domain.merge(w, v)

    def transfer(self, s, parts, leaving):
        work.statements += 1
        if isinstance(s, ir.If):
            return self.branch(s, parts, leaving)
        if isinstance(s, (ir.For, ir.While)):
            return self.loop(s, parts)
        if isinstance(s, ir.LoopExit):
            return self.exit(s, parts, leaving)
        for env in parts.values():
            self.domain.step(s, env)
        if isinstance(s, ir.Assign) and s.target in self.flags:
            return self.set_flag(s.target, s.op.args[0].value, parts)
        return parts

    def branch(self, s, parts, leaving):
        flag = s.test[4:] if s.test.startswith("not ") else None
        if flag in self.flags:
            body, orelse = _where(parts, flag, False), _where(parts, flag, True)
        else:
            body, orelse = _fork(parts), parts
        out = self.block(s.body, body, leaving)
        self.join(out, self.block(s.orelse, orelse, leaving))
        return out

    def loop(self, s, parts):
        head, out = self.summaries.get(id(s), ({}, None))
        if not self.join(head, parts) and out is not None:
            return _fork(out)  # nothing new reaches the loop: its summary holds
        while True:
            left = []
            if not self.join(head, self.block(s.body, _fork(head), left)):
                break
        out = _fork(head)
        for p in left:
            self.join(out, p)
        out = self.forget(out, self.own[id(s)])
        self.summaries[id(s)] = (head, out)
        return _fork(out)

    def exit(self, s, parts, leaving):
        if s.test not in self.flags:
            leaving.append(_fork(parts))  # may leave the loop here, or go on
            return parts
        leaving.append(_where(parts, s.test, True))
        return _where(parts, s.test, False)

    def set_flag(self, flag, value, parts):
        out = {}
        for k, env in parts.items():
            self.join(out, {k | {flag} if value else k - {flag}: env})
        return out

    def forget(self, parts, flags):
        """``parts`` with ``flags`` no longer told apart (as if not set)."""
        if not flags:
            return parts
        out = {}
        for k, env in parts.items():
            self.join(out, {k - flags: env})
        return out

    def join(self, parts, other):
        """Merge ``other`` (theirs to take) into ``parts``; whether ``parts`` changed."""
        changed = False
        for k, env in other.items():
            if k not in parts:
                parts[k] = env
                changed = True
            elif self.join_states(parts[k], env):
                changed = True
        return changed

    def join_states(self, env, other):
        if env is other:
            return False
        differ = {n for n, _ in env.items() ^ other.items()}  # compared in C, merged one by one
        work.entries += len(differ)
        changed = False
        for n in differ:
            v = other.get(n)
            if v is None:
                continue
            w = env.get(n)
            m = v if w is None else self.domain.merge(w, v)
            if m != w:
                env[n] = m
                changed = True
        return changed


def _fork(parts):
    return {k: dict(env) for k, env in parts.items()}


def _where(parts, flag, is_set):
    """The states of ``parts`` in which ``flag`` is (or is not) set."""
    return {k: e for k, e in parts.items() if (flag in k) == is_set}


def _liveness(body, at):
    """(id(statement) -> the names that may be read after it (before being redefined), for the
    statements whose ids are in ``at``; id(statement) -> the names that are no longer read after
    it among those it reads or defines, or for a branch or loop, that were read after its start).

    A backward pass updating one set in place along straight-line code; each loop keeps its head
    (the names live at its top) as a summary, as ``_Forward`` does, and reached again with nothing
    new live after it, gives its head without walking its body."""
    after, dead, heads = {}, {}, {}

    def block(stmts, live):
        for s in reversed(stmts):
            if id(s) in at:
                after[id(s)] = after[id(s)] | live if id(s) in after else set(live)
            work.statements += 1
            if isinstance(s, (ir.If, ir.For, ir.While)):
                out = set(live)
                live = branch(s, live) if isinstance(s, ir.If) else loop(s, live)
                dead[id(s)] = live - out
            else:
                reads = ir.reads(s)
                if isinstance(s, ir.Assign):
                    dead[id(s)] = (reads | {s.target}) - live
                    live.discard(s.target)
                else:
                    dead[id(s)] = reads - live
                live |= reads
        return live

    def branch(s, live):
        other = block(s.body, set(live))
        live = block(s.orelse, live)
        live |= other
        live |= ir.reads(s)
        return live

    def loop(s, live):
        head = heads.get(id(s))
        if head is not None and live <= head:
            return set(head)
        head = live | head if head is not None else set(live)
        while True:
            body_in = block(s.body, set(head))
            if isinstance(s, ir.For):
                body_in.discard(s.target)
            body_in |= ir.reads(s)
            if body_in <= head:
                break
            head |= body_in
        heads[id(s)] = head
        return set(head)

    block(body, set())
    return after, dead


def _slices(index):
    return any(isinstance(p, ir.Slice) for p in index.parts)


def _refuse(src, stmt, msg, hint):
    raise located(
        UnsupportedSyntaxError,
        src,
        stmt.pos,
        f"unsupported in-place write: {msg} (in {src.fn.__qualname__})",
        hint,
    )


def _scatter_of(w):
    """``np.add.at`` (and the other ``ufunc.at``) when the in-place write ``w`` is one."""
    for ufunc, key in UFUNC_AT.items():
        if w.op.key is key:
            return f"np.{ufunc.__name__}.at"
    return None


def _augmented_symbol(w):
    """The operator of ``a op= b`` (its statement's text is ``a op b``)."""
    parts = w.op.text.split(" ")
    return parts[1] if len(parts) == 3 else "+"
