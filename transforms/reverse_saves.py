"""Reverse mode, first step: which values the forward sweep saves for the backward, and where.

Expects: an ``ir.Function``, its ``Analysis``, the ``wrt`` names and the checkpointed loops
(``checkpoints.plan``). Guarantees: a ``Plan``, decided before either sweep is built and read by
both, never changed after. A definition saves the value it overwrites only when the backward
reads that value somewhere that runs before the definition (``_old_value_read``); outside loops
into a named variable (``x_saved``), inside them onto the tape. What the backward reads only for
its shape is saved as ``shape_of(value)``, and not at all where that shape is the same on every
iteration (``Plan.unsaved``). A checkpointed loop's snapshot keeps every name its body changes
that an iteration may read before writing it.
"""

from __future__ import annotations

from . import ir
from .aliasing import sharing_classes


class Plan:
    """The saves of one function: what the two sweeps share before either is built."""

    def __init__(self, fn, analysis, wrt):
        self.fn = fn
        self.an = analysis
        self.wrt = list(wrt)
        self.reads = analysis.backward_reads() | set(self.wrt)
        self.read_sites = analysis.read_sites  # (with the reads of checkpointed loops run again)
        self._sharing = None  # class -> the names in it the backward reads (``sharing``)
        self.shapes = analysis.shape_reads() - self.reads  # only shape and dtype are read
        # of those, the ones one expression defines, of a shape known now: never saved (``_unsaved``)
        self.unsaved = set()
        self.order = {}  # id(stmt) -> (program order, ids of the loops around it)
        self.saves = {}  # id(stmt) -> "tape" | "pop" | saved variable name
        self.shape_saves = set()  # ids of definitions that save shape_of(old value)
        self.needs_init = set()  # names bound to None first (a save may read them unbound)
        self.restored = set()  # primal names the backward restores from a save
        self.tape_saves = False  # does some value go on the tape (flags and counts come later)?
        # id(test statement) -> [(names surely bound there, names maybe bound)] (a while's: at its
        # body's end too)
        self.bound = {}
        self.saved_names = set()  # the variables that keep overwritten values for the backward
        self.state = {}  # id(checkpointed loop) -> the names a snapshot keeps
        self.by_length = {}  # id(checkpointed loop) -> {list it only appends to: its length's name}
        self._backward = {}

    def sharing(self, name):
        """The names the backward reads that may share memory with ``name`` (itself too)."""
        if self._sharing is None:
            find = sharing_classes(self.fn)
            self._find, self._sharing = find, {}
            for n in sorted(self.reads):
                self._sharing.setdefault(find(n), []).append(n)
        return self._sharing.get(self._find(name), ())

    def has_backward(self, s):
        """Does statement ``s`` (or one inside it) have a backward?"""
        key = id(s)
        if key not in self._backward:
            if isinstance(s, (ir.Assign, ir.SetItem, ir.Append)):
                # a constant overwriting a differentiated variable still ends its adjoint
                r = self.an.is_active_stmt(s) or key in self.saves or s.target in self.an.active
            elif isinstance(s, ir.If):
                r = any(self.has_backward(t) for t in s.body + s.orelse)
            elif isinstance(s, (ir.For, ir.While)):
                r = any(self.has_backward(t) for t in s.body) or key in self.saves
            else:
                r = False
            self._backward[key] = r
        return self._backward[key]


def plan(fn, analysis, naming, wrt, checkpoints):
    """The ``Plan`` of ``fn``: ``checkpoints`` maps id(loop) to True or a number of snapshots."""
    p = Plan(fn, analysis, wrt)
    _rerun_reads(p, checkpoints)
    return _Planner(p, naming, checkpoints).run()


def _rerun_reads(p, checkpoints):
    """The backward runs a checkpointed loop's iterations again from its snapshots: it reads,
    at the loop, every name an iteration reads before writing it. A name its snapshot does not
    keep (a value from before the loop: a weight an enclosing loop sets anew each trip, that
    loop's index, a buffer written after the loop) must hold there, when the backward reaches
    the loop, the value the forward's iterations read: a definition after it, or in a loop
    around it, saves the value it overwrites (``_old_value_read``)."""
    loops = [s for s in ir.walk(p.fn.body) if id(s) in checkpoints]
    if not loops:
        return
    sites = {n: list(v) for n, v in p.read_sites.items()}
    for s in loops:
        names = _exposed(s.body) | ir.reads(s)
        if isinstance(s, ir.For):
            names.discard(s.target)
        for n in names:
            sites.setdefault(n, []).append((s, False))
        p.reads |= names
    p.read_sites = sites


class _Planner:
    def __init__(self, plan, naming, checkpoints):
        self.plan = plan
        self.naming = naming
        self.checkpoints = checkpoints

    def run(self):
        p = self.plan
        self._number(p.fn.body, frozenset())
        self._read_through_views()
        p.unsaved = self._unsaved()
        self._block(p.fn.body, set(p.fn.params), set(p.fn.params), False)
        return p

    def _number(self, stmts, loops):
        """Program order of every statement, and the loops around it."""
        order = self.plan.order
        for s in stmts:
            order[id(s)] = (len(order), loops)
            if isinstance(s, ir.If):
                self._number(s.body, loops)
                self._number(s.orelse, loops)
            elif isinstance(s, (ir.For, ir.While)):
                self._number(s.body, loops | {id(s)})

    def _unsaved(self):
        """The names the backward reads only for their shape, known from the argument shapes,
        that one expression of the user's defines (one assignment, in a loop, or its copies in a
        loop unrolled). Their saves go: the backward reads the value the forward left instead,
        which is bound wherever the backward reads it (its reader ran in the forward) and has
        the same shape (shape inference is flow-insensitive: every value of a name has the shape
        it knows) and array module. Its dtype is that of the last value made: the same unless a
        value carried from one iteration to the next changes dtype, and then only an adjoint
        made from a Python number (``unreduce(1.0, t)``) takes it; ``finalize`` gives the
        gradient its argument's dtype. Two different expressions could make two dtypes."""
        p = self.plan
        shapes = p.an.shapes
        if shapes is None or not p.shapes:
            return set()
        defs = {}
        for s in ir.walk(p.fn.body):
            if isinstance(s, (ir.Assign, ir.For)):
                defs.setdefault(s.target, []).append(s)
        out = set()
        for name in p.shapes - set(p.fn.params):
            d = defs.get(name, ())
            if (
                d
                and all(isinstance(t, ir.Assign) and not t.inplace for t in d)
                and (len(d) == 1 or d[0].node is not None and all(t.node is d[0].node for t in d))
                and shapes.of(name) is not None
            ):
                out.add(name)
        return out

    def _old_value_read(self, name, d):
        """Does the backward read ``name`` somewhere that runs before definition ``d`` (earlier
        in the program, or anywhere in a loop around both)? Only then must ``d`` save the value
        it overwrites."""
        p = self.plan
        if name in p.wrt:
            return True  # finalize() reads the argument after the whole backward
        i, loops = p.order[id(d)]
        for r, of_result in p.read_sites.get(name, ()):
            j, rloops = p.order[id(r)]
            if j < i or (j == i and not of_result) or loops & rloops:
                return True
        return False

    def _read_through_views(self):
        """A write ``a[i] = v`` whose overwritten part the backward reads through another name
        that may share ``a``'s memory (a view made before it, ``t = a.T``, ``r = a[0]``) is a
        read of ``a`` by the backward there: ``a`` is restored where the backward passes the
        write, and so is the name ``a`` itself where it is bound anew (a buffer allocated in
        each trip of a loop)."""
        p = self.plan
        for s in ir.walk(p.fn.body):
            if isinstance(s, ir.SetItem) and any(
                n != s.target and self._old_value_read(n, s) for n in p.sharing(s.target)
            ):
                p.reads.add(s.target)
                p.read_sites[s.target] = [*p.read_sites.get(s.target, ()), (s, False)]

    def _block(self, stmts, possibly, definitely, in_loop):
        p = self.plan
        for s in stmts:
            if isinstance(s, ir.Assign):
                self._def(s, s.target, possibly, definitely, in_loop)
                possibly.add(s.target)
                definitely.add(s.target)
            elif isinstance(s, ir.SetItem):
                if s.target in p.reads and self._old_value_read(s.target, s):
                    p.saves[id(s)] = "tape" if in_loop else self.naming.saved(s.target)
                    p.tape_saves |= in_loop
                    self._saved_here(s, possibly, definitely)
            elif isinstance(s, ir.Append):
                if s.target in p.reads:
                    p.saves[id(s)] = "pop"  # undone by popping: nothing to keep
            elif isinstance(s, (ir.LoopExit, ir.If)):
                p.bound[id(s)] = [(frozenset(definitely), frozenset(possibly))]
                if isinstance(s, ir.If):
                    self._if(s, possibly, definitely, in_loop)
            elif isinstance(s, (ir.For, ir.While)):
                self._loop(s, possibly, definitely, in_loop)

    def _if(self, s, possibly, definitely, in_loop):
        p1, d1 = set(possibly), set(definitely)
        p2, d2 = set(possibly), set(definitely)
        self._block(s.body, p1, d1, in_loop)
        self._block(s.orelse, p2, d2, in_loop)
        possibly |= p1 | p2
        definitely |= d1 & d2

    def _loop(self, s, possibly, definitely, in_loop):
        if id(s) in self.checkpoints:
            self._state(s, possibly, definitely)
        inner = set(possibly) | defined_in(s.body)
        if isinstance(s, ir.For):
            self._def(s, s.target, possibly, definitely, in_loop)
            inner.add(s.target)
        before = (frozenset(definitely), frozenset(possibly))
        at_end = set(definitely)
        self._block(s.body, inner, at_end, True)
        self.plan.bound[id(s)] = [before, (frozenset(at_end), frozenset(inner))]
        possibly |= inner

    def _state(self, s, possibly, definitely):
        """What a snapshot of checkpointed loop ``s`` keeps: every name its body changes that an
        iteration may read before writing it (its value comes from the iterations before), or
        that is defined before the loop (the backward of the code before it may read its old
        value). A name not yet defined when a snapshot is taken starts as None."""
        changed = defined_in(s.body) | {
            t.target for t in ir.walk(s.body) if isinstance(t, (ir.SetItem, ir.Append))
        }
        carried = _exposed(s.body) | (ir.reads(s) if isinstance(s, ir.While) else set())
        state = (changed - {getattr(s, "target", None)}) & (possibly | carried)
        self.plan.state[id(s)] = sorted(state)
        self.plan.needs_init |= state - definitely
        # a list the loop only appends to: its length is enough (see reverse_checkpointed)
        rebound = defined_in(s.body) | {
            t.target for t in ir.walk(s.body) if isinstance(t, ir.SetItem)
        }
        appended = {t.target for t in ir.walk(s.body) if isinstance(t, ir.Append)}
        self.plan.by_length[id(s)] = {
            n: self.naming.temp("n") for n in sorted((appended - rebound) & state)
        }

    def _def(self, s, name, possibly, definitely, in_loop):
        p = self.plan
        if name not in possibly or name in p.unsaved or not self._old_value_read(name, s):
            return
        if name in p.shapes:
            p.shape_saves.add(id(s))
        if name in p.reads or name in p.shapes:
            p.saves[id(s)] = "tape" if in_loop else self.naming.saved(name)
            p.tape_saves |= in_loop
            if name not in definitely:
                p.needs_init.add(name)
            p.restored.add(name)
            self._saved_here(s, possibly, definitely)

    def _saved_here(self, s, possibly, definitely):
        """A save into a variable is bound from here on (for the lazy persists)."""
        where = self.plan.saves[id(s)]
        if where != "tape" and id(s) not in self.plan.shape_saves:
            self.plan.saved_names.add(where)
            possibly.add(where)
            definitely.add(where)


def defined_in(stmts):
    """The names ``stmts`` assign to (loop targets included)."""
    out = set()
    for s in ir.walk(stmts):
        if isinstance(s, ir.Assign):
            out.add(s.target)
        elif isinstance(s, ir.For):
            out.add(s.target)
    return out


def _exposed(stmts):
    """The names an iteration of ``stmts`` may read before it writes them."""
    out = set()
    _exposed_block(stmts, set(), out)
    return out


def _exposed_block(stmts, written, out):
    for s in stmts:
        out |= ir.reads(s) - written
        if isinstance(s, ir.If):
            body, orelse = set(written), set(written)
            _exposed_block(s.body, body, out)
            _exposed_block(s.orelse, orelse, out)
            written |= body & orelse
        elif isinstance(s, (ir.For, ir.While)):  # may run no iteration: writes nothing for sure
            _exposed_block(s.body, written | ({s.target} if isinstance(s, ir.For) else set()), out)
        elif isinstance(s, ir.Assign):
            written.add(s.target)
