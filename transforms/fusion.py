"""Fuse elementwise work for the numba variant: consecutive elementwise statements on one
known shape become one loop over the entries.

numba fuses the array expression of one statement into one loop, never statements joined by a
named temporary (``_t0 = w * y; _t1 = _t0 + x; y = np.tanh(_t1)``): each allocates and fills an
array. This pass writes such a run as one loop nest over the shape, each statement one scalar
per entry, storing only the arrays something outside the run reads.

Expects: the optimized forward and backward of a ``reverse.Reversed`` compiled with ``jit`` for
known argument shapes (``shapes.Shapes``), releases left out. Guarantees: the same values. A
statement joins a run only where it provably is elementwise on the run's shape: a forward
assignment of an arithmetic operator or a listed ufunc of names of exactly that shape and
numeric literals; a backward assignment whose code is names of exactly that shape, numeric
literals, ``+ - *`` and parentheses. Every entry of every statement's result then depends on the
same entry of its operands only, so running the statements entry by entry computes what running
them one after the other does. Division and powers of names never join (scalar arithmetic in
compiled code raises where numpy returns inf). A statement that is not elementwise moves before
the run where that changes nothing: it reads nothing the run wrote and writes nothing the run
used (a write of a name the run read goes to a fresh name the rest of the run reads).

A run inside a block (a loop's body, run again) writes an output into a buffer allocated once,
at the start of its sweep (``fused_reuse``), where nothing can hold the output's last value when
the run writes the next: every statement that reads the variable anywhere makes a new value of
it (an arithmetic operator, a ufunc, a primitive declared ``fresh``, an elementwise backward
expression, a row of a preallocated tape, the seed's shape) or adds it into an array in place.
Then the variable is the one name of its array, and the run reads each entry of it before it
writes the same entry, as the statements one after the other would.
"""

from __future__ import annotations

import math
import operator
from dataclasses import replace

import numpy as np

from . import code, ir
from .aliasing import fresh
from .code import Ref, of
from .reverse_tape import jit_helper

# forward operations: binary operators (their text) and ufuncs numba has for scalars
_OPERATORS = {
    operator.add: " + ",
    operator.sub: " - ",
    operator.mul: " * ",
    operator.truediv: " / ",  # by a nonzero literal only
    operator.pow: " ** ",  # to a nonnegative literal only
}
_UFUNCS = {  # ufunc -> how many operands
    np.tanh: 1,
    np.sin: 1,
    np.cos: 1,
    np.exp: 1,
    np.log: 1,
    np.sqrt: 1,
    np.abs: 1,
    np.absolute: 1,
    np.square: 1,
    np.negative: 1,
    np.maximum: 2,
    np.minimum: 2,
}
_LITERAL = frozenset("0123456789. +-*()")  # the text a backward expression may hold besides names
_AUGMENTS = (" += ", " -= ", " *= ")


def run(rev, shapes, naming, bind):
    """``rev`` with its elementwise runs fused (a new record), or ``rev`` without shapes."""
    if shapes is None:
        return rev
    forward = [st for st in rev.forward if not (st.info and st.info.get("release"))]
    backward = [st for st in rev.backward if not (st.info and st.info.get("release"))]
    known = _Known(shapes, forward + backward, bind)
    readers = {}
    for st in forward + backward:
        for n in st.reads:
            readers.setdefault(n, set()).add(id(st))
    outside = set().union(*(e.names() for _, e in rev.outputs)) if rev.outputs else set()
    if isinstance(rev.result, ir.Name):
        outside.add(rev.result.id)
    fuser = _Fuser(known, readers, outside, naming, bind)
    fuser.shared = _shared(forward + backward, bind)
    fuser.params = set(rev.params)
    forward = fuser.body(forward)
    forward[:0], fuser.buffers = fuser.buffers, []
    backward = fuser.body(backward)
    backward[:0] = fuser.buffers
    return replace(rev, forward=forward, backward=backward)


def _shared(stmts, bind):
    """The names whose arrays some statement may keep a reference to, or pass one on: all but
    those that every statement reading them makes a new value of (or copies, or adds in place)."""
    helpers = {bind("seed_like"), bind("zeros_like")}
    helpers |= {bind(n, jit_helper(n)) for n in ("tape_array", "tape_put")}
    out = set()
    for st in stmts:
        if not _makes_new(st, helpers):
            out |= st.reads
    return out


def _makes_new(st, helpers):
    """Does ``st`` keep no reference to what it reads (its result is new memory, if any)?"""
    s = st.info.get("assign") if st.info else None
    if s is not None:
        return not s.inplace and fresh(s.op)
    if st.opens or st.info:
        return False
    if st.augmented:
        return True  # ``x_bar += e``: e's entries added into x_bar's array
    expr = st.expr if st.target is not None else st.code
    parts = expr.parts
    if parts and parts[0] in helpers and type(parts[0]) is Ref:  # seed_like(y), tape_put(t, k, y)
        return (
            len(parts) > 2
            and parts[1] == "("
            and all(type(p) is Ref or set(p) <= set("(), ") for p in parts[2:])
        )
    return (
        st.target is not None
        and elementwise(expr)
        and any(type(p) is not Ref and set(p) & set("+-*") for p in parts)
    )


class _Known:
    """Each name's shape: the user's names from shape inference, the backward's own from their
    assignments (all of them: a name with one assignment of unknown shape has none)."""

    def __init__(self, shapes, stmts, bind):
        self.shapes = shapes
        # the variant starts a saved name at None (``_t0 = None``): numba types it as maybe None
        self.maybe_none = {
            st.target for st in stmts if st.expr is not None and st.expr.literal() == "None"
        }
        self.like = {bind("seed_like"), bind("zeros_like")}
        defs = {}
        for st in stmts:
            for n in st.writes:
                defs.setdefault(n, []).append(st)
        # from nothing known, each name's shape the join of its assignments', until none changes
        self.own = {n: _UNSET for n in defs if shapes.of(n) is None}
        for _ in range(len(self.own) + 2):
            before = dict(self.own)
            for n in self.own:
                self.own[n] = _join([self._made(st, n) for st in defs[n]])
            if before == self.own:
                break
        else:
            self.own = {}
        self.own = {n: s for n, s in self.own.items() if s is not _UNSET}

    def of(self, name):
        """The shape of ``name``'s arrays, where an entry of it may be read (not maybe None)."""
        return None if name in self.maybe_none else self.written(name)

    def written(self, name):
        """The shape of every array ``name`` holds (it may hold None as well)."""
        s = self.shapes.of(name)
        return s if s is not None else self.own.get(name)

    def _made(self, st, n):
        if st.target != n or st.expr is None:
            return None
        if st.augmented:
            return self.of(n)
        parts = st.expr.parts
        if len(parts) == 4 and parts[0] in self.like and parts[1:] == ("(", parts[2], ")"):
            return self.of(parts[2]) if type(parts[2]) is Ref else None
        if not elementwise(st.expr) or not st.expr.names():
            return None
        return _join([self.of(r) for r in st.expr.names()])


_UNSET = "unset"  # no assignment of the name seen to give a shape yet


def _join(found):
    """The one shape of ``found``, ignoring those not known yet, or None (unknown or differing)."""
    shapes = [f for f in found if f is not _UNSET]
    if not shapes:
        return _UNSET
    if any(f is None or f != shapes[0] for f in shapes):
        return None
    return shapes[0]


def elementwise(expr):
    """Whether a backward expression is names, numeric literals, ``+ - *`` and parentheses."""
    return all(type(p) is Ref or (set(p) <= _LITERAL and "**" not in p) for p in expr.parts)


def _number(a):
    v = getattr(a, "value", None)
    return type(v) in (int, float) and math.isfinite(v)


class _Fuser:
    def __init__(self, known, readers, outside, naming, bind):
        self.known, self.readers, self.outside = known, readers, outside
        self.naming, self.bind = naming, bind
        self.shared = set()  # names an output's array may be kept by (``_shared``)
        self.params = set()
        self.buffers = []  # the allocations of outputs' buffers, for the start of the sweep

    def body(self, stmts):
        out, i = [], 0
        while i < len(stmts):
            used = self._run(stmts, i, out)
            if used == 0:
                out.append(stmts[i])
                used = 1
            i += used
        return out

    # ---- finding a run ---------------------------------------------------------------------
    def _shape_of(self, st, defined=frozenset()):
        """The shape ``st`` is elementwise on, or None. ``defined``: names the run assigned
        before ``st``, which it reads as numbers, not entries of arrays."""
        if st.opens:
            return None
        names = self._operands(st)
        if names is None:
            return None
        shape = self.known.written(next(iter(st.writes))) if len(st.writes) == 1 else None
        if not shape:
            return None
        known = self.known
        if any((known.written if n in defined else known.of)(n) != shape for n in names):
            return None
        return shape

    def _operands(self, st):
        """The names an elementwise statement reads, or None where it is not one."""
        s = st.info.get("assign") if st.info else None
        if s is not None:
            op = s.op
            if s.inplace or op.kind != "call" or op.kwargs or not _forward_op(op):
                return None
            names = [a.id for a in op.args if isinstance(a, ir.Name)]
            if not names or not all(isinstance(a, ir.Name) or _number(a) for a in op.args):
                return None
            return names
        if st.target is None or st.expr is None or st.info or st.copy_of() is not None:
            return None  # (a copy is an alias in numpy: a fused one would be a fresh array)
        if st.augmented and st.code.parts[1] not in _AUGMENTS:
            return None
        if not elementwise(st.expr) or not st.expr.names():
            return None
        return list(st.expr.names() | ({st.target} if st.augmented else set()))

    def _run(self, stmts, start, out):
        """Fuse the run from ``start`` into ``out``: how many statements it took (0: none)."""
        first = stmts[start]
        shape = self._shape_of(first)
        if shape is None:
            return 0
        depth = first.depth
        run, moved, renames = [(first, {})], [], {}
        wrote, read = set(first.writes), set(first.reads)
        pending = []  # statements moved before the run, kept only if a fused one follows
        j = start + 1
        while j < len(stmts):
            st = stmts[j]
            if st.depth != depth or st.opens:
                break
            if self._shape_of(st, wrote) == shape and not (st.writes & set(renames)):
                run.append((st, dict(renames)))
                moved += pending
                pending = []
                wrote |= st.writes
                read |= st.reads
            else:
                hoisted = self._hoist(st, wrote, read, renames)
                if hoisted is None:
                    break
                pending.append(hoisted)
            j += 1
        if len(run) < 2:
            return 0
        taken = j - len(pending) - start
        for h in pending:  # after the run's end: they stay where they are
            renames = {k: v for k, v in renames.items() if v != h.target}
        out.extend(moved)
        inside = {id(s) for s in stmts[start : start + taken]}
        loop = self._loop(run, shape, depth, inside)
        if not moved:  # the comment naming the user's line goes with the run's first line
            loop[0] = replace(loop[0], pos=first.pos)
        out.extend(loop)
        for old, new in renames.items():
            out.append(code.assign(depth, old, new))
        return taken

    def _hoist(self, st, wrote, read, renames):
        """``st`` moved before the run so far, or None where that could change something."""
        if st.reads & wrote or st.writes & wrote or st.names() & set(renames):
            return None
        if not st.writes & read:
            return st
        if st.target is None or st.augmented or st.writes != {st.target} or st.info:
            return None
        fresh = self.naming.temp(st.target.lstrip("_"))
        renames[st.target] = fresh
        return code.assign(st.depth, fresh, st.expr, st.pos)

    # ---- writing the loop ------------------------------------------------------------------
    def _loop(self, run, shape, depth, inside):
        """The statements of the fused loop: outputs allocated, the loop nest, outputs named."""
        index = [self.naming.temp("k") for _ in shape]
        at = code.join([Ref(k) for k in index])
        env = {}  # name -> the Code of its entry at ``index`` (a scalar once the run assigned it)
        first_def, reads_before = {}, set()
        for n_, (st, ren) in enumerate(run):
            reads_before |= {ren.get(n, n) for n in st.reads} - set(first_def)
            for n in st.writes:
                first_def.setdefault(n, n_)
        last = {n: k for k, (st, _) in enumerate(run) for n in st.writes}
        body, stores = [], {}
        for k, (st, ren) in enumerate(run):
            value = self._scalar(st, ren, env, at)
            t = next(iter(st.writes))
            if st.augmented and t not in env:  # an array updated in place, as numpy does
                body.append(code.line(0, of(Ref(t), "[", at, "]", st.code.parts[1], value)))
                continue
            if st.augmented:
                value = of(env[t], st.code.parts[1].strip()[0].join("  "), "(", value, ")")
            s = self.naming.temp("s")
            body.append(code.assign(0, s, value))
            env[t] = code.name(s)
            if last[t] == k and self._live(t, inside, reads_before):
                stores[t] = self.naming.temp(t.lstrip("_") + "_out")
                body.append(code.line(0, of(Ref(stores[t]), "[", at, "] = ", Ref(s))))
        return self._nest(shape, depth, index, at, body, stores, sorted(reads_before))

    def _live(self, name, inside, reads_before):
        if name in self.outside or name in reads_before:
            return True
        return bool(self.readers.get(name, set()) - inside)

    def _nest(self, shape, depth, index, at, body, stores, operands):
        empty = self.bind("fused_empty", jit_helper("fused_empty"))
        dims = of("(", ", ".join(map(str, shape)), "," if len(shape) == 1 else "", ")")
        out = []
        for t, o in stores.items():
            if depth == 0 or t in self.shared:
                out.append(code.assign(depth, o, _call(empty, dims, operands)))
                continue
            # run again: into the buffer, typed as the parameters among the operands guess
            buffer = self.naming.temp(t.lstrip("_") + "_buf")
            guess = [n for n in operands if n in self.params]
            self.buffers.append(code.assign(0, buffer, _call(empty, dims, guess)))
            reuse = self.bind("fused_reuse", jit_helper("fused_reuse"))
            out.append(code.assign(depth, o, _call(reuse, of(Ref(buffer), ", ", dims), operands)))
        for d, (k, n) in enumerate(zip(index, shape)):
            out.append(code.header(depth + d, of("for ", Ref(k), f" in range({n}):"), writes=(k,)))
        inner = depth + len(shape)
        out += [st.at(inner) for st in body]
        out += [code.assign(depth, t, o) for t, o in stores.items()]
        return out

    def _scalar(self, st, ren, env, at):
        """The code of one entry of ``st``'s value."""

        def entry(n):
            n = ren.get(n, n)
            return env[n] if n in env else of(Ref(n), "[", at, "]")

        s = st.info.get("assign") if st.info else None
        if s is None:
            return of(*[entry(p) if type(p) is Ref else p for p in st.expr.parts])
        args = [entry(a.id) if isinstance(a, ir.Name) else code.lit(a.render()) for a in s.op.args]
        if s.op.key is operator.neg:
            return of("(-", args[0], ")")
        text = _operator(s.op.key)
        if text is not None:
            return of("(", args[0], text, args[1], ")")
        callee = s.op.text.split("(")[0]  # the ufunc as the user's code names it
        return of(callee, "(", code.join(args), ")")


def _operator(key):
    """The text of the binary operator ``key`` is, or None (keys are compared by identity: a
    user's callable need not be hashable)."""
    return next((text for k, text in _OPERATORS.items() if k is key), None)


def _forward_op(op):
    if op.key is operator.neg:
        return len(op.args) == 1
    if _operator(op.key) is not None and len(op.args) == 2:
        if op.key is operator.truediv:
            return _number(op.args[1]) and op.args[1].value != 0
        if op.key is operator.pow:
            return _number(op.args[1]) and op.args[1].value >= 0
        return True
    arity = _UFUNCS.get(next((u for u in _UFUNCS if u is op.key), None))
    return arity == len(op.args)


def _call(helper, first, names):
    """``helper(first, *names)``."""
    return of(Ref(helper), "(", first, *[of(", ", Ref(n)) for n in names], ")")
