"""Forward and backward dataflow over the normalized IR, following the early exits exactly.

Expects: normalized IR after ``exits.py`` (``break``, ``continue`` and ``return`` lowered to flags
tested by ``if not flag:`` and ``LoopExit``). Guarantees: ``Forward(...).run(env)`` gives, before
each statement asked for, a domain's state merged over every way there (branches merged, loops
iterated to a fixed point, a path that set an exit flag leaving where the flag says);
``liveness`` gives the names read after each statement asked for, and the names that die at each
statement. Both are linear in the program; ``work`` counts their steps (``tests/test_aliasing.py``
holds it linear). The domain (what a state holds, how a statement changes it) is the caller's:
``aliasing.py`` runs its points-to and appended-to analyses here.
"""

from __future__ import annotations

from . import ir


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


def exit_flags(fn):
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


def loop_flags(body, flags):
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


class Forward:
    """A forward dataflow pass: ``run(env)`` gives id(statement) -> {name: value} before the
    statement (merged over every way there) for the names ``keep[id(statement)]``. The domain's
    ``step(s, env)`` is a simple statement's effect on a state, in place; ``merge`` joins two
    values of a name (a name missing from a state has none yet). Branches merge, loops iterate to
    a fixed point.

    Exits (``exits.py``) are followed exactly: the state is kept apart by which ``flags`` are
    set on the way there (``parts``: flags set -> state), so a path that set a loop's exit flag
    leaves the loop at its ``LoopExit`` and skips the statements under ``if not flag:``, and
    never comes round to the next iteration (a buffer returned early is not seen as written
    again after the return). A loop's own flags are forgotten when it is left (``loop_flags``),
    so the number of states kept apart stays that of the ways out of the loops around a statement.

    Linear in the program: a state is updated in place along straight-line code and copied only
    where ways part (a branch, a loop's head, a way out of a loop); where ways meet only the names
    whose values differ are merged. A name is dropped from the state where it dies (``dead``, from
    ``liveness``): no live name's value depends on it, and kept, it would go on growing through
    loops and make them walk again for nothing. Each loop keeps a summary, its head (the state at
    the top of its body, merged over every entry) and the state it leaves with: reached again with
    nothing its head does not hold already (the next round of a loop around it), it gives the same
    exit without walking its body, so an inner loop is walked again only when what reaches it
    grows, not once per round of every loop around it."""

    def __init__(self, body, domain, flags, keep, dead):
        self.body, self.domain, self.flags, self.keep, self.dead = body, domain, flags, keep, dead
        self.own = loop_flags(body, flags)
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


def liveness(body, at):
    """(id(statement) -> the names that may be read after it (before being redefined), for the
    statements whose ids are in ``at``; id(statement) -> the names that are no longer read after
    it among those it reads or defines, or for a branch or loop, that were read after its start).

    A backward pass updating one set in place along straight-line code; each loop keeps its head
    (the names live at its top) as a summary, as ``Forward`` does, and reached again with nothing
    new live after it, gives its head without walking its body."""
    pass_ = _Liveness(at)
    pass_.block(body, set())
    return pass_.after, pass_.dead


class _Liveness:
    """The state of ``liveness`` (methods, not closures calling each other: those would be a
    reference cycle keeping the function's statements alive until the garbage collector runs)."""

    def __init__(self, at):
        self.at = at
        self.after, self.dead, self.heads = {}, {}, {}

    def block(self, stmts, live):
        at, after, dead = self.at, self.after, self.dead
        for s in reversed(stmts):
            if id(s) in at:
                after[id(s)] = after[id(s)] | live if id(s) in after else set(live)
            work.statements += 1
            if isinstance(s, (ir.If, ir.For, ir.While)):
                out = set(live)
                live = self.branch(s, live) if isinstance(s, ir.If) else self.loop(s, live)
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

    def branch(self, s, live):
        other = self.block(s.body, set(live))
        live = self.block(s.orelse, live)
        live |= other
        live |= ir.reads(s)
        return live

    def loop(self, s, live):
        head = self.heads.get(id(s))
        if head is not None and live <= head:
            return set(head)
        head = live | head if head is not None else set(live)
        while True:
            body_in = self.block(s.body, set(head))
            if isinstance(s, ir.For):
                body_in.discard(s.target)
            body_in |= ir.reads(s)
            if body_in <= head:
                break
            head |= body_in
        self.heads[id(s)] = head
        return set(head)
