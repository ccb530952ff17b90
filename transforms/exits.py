"""Lower ``break``, ``continue`` and early ``return`` to flags, so every loop iteration and every
function body has one exit.

Expects: a function body straight from ``normalize`` (``Break``/``Continue``/``Return``
anywhere): the compile's own function (``transforms._front``), or a helper being inlined
(``normalize/inline.py``), whose one return then gives the call's value. Guarantees:
the only ``Return`` is the last statement of the function; an exit sets flags (``_stop`` skips the
rest of an iteration, ``_brk`` leaves the loop, ``_done`` leaves the function) and the statements
after any ``if`` that may exit run under ``if not <flag>:``; loops that may be left early end
their body with a forward-only ``LoopExit``. Branch choices and trip counts then go on the tape
like any other, so the backward retraces exactly the iterations and statements that ran.
"""

from __future__ import annotations

from dataclasses import replace

from . import ir


class _Lowering:
    def __init__(self, naming, ret_var):
        self.naming = naming
        self.ret = ret_var  # a name, or (an inlined helper's tuples) a tuple of names
        self.done = None  # created on the first early return
        self.loops = []  # stack of (stop flag, break flag)
        self.used_break = set()
        self.loops_with_return = set()

    def const(self, name, value, pos):
        return ir.Assign(
            name, ir.Op(None, (ir.Const(value, repr(value)),), (), repr(value), "copy"), pos
        )

    def block(self, stmts):
        """(lowered statements, whether they may exit early)."""
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, ir.Break):
                stop, brk = self.loops[-1]
                self.used_break.add(brk)
                out += [self.const(stop, True, s.pos), self.const(brk, True, s.pos)]
                return out, True
            if isinstance(s, ir.Continue):
                out.append(self.const(self.loops[-1][0], True, s.pos))
                return out, True
            if isinstance(s, ir.Return):
                if isinstance(self.ret, tuple):  # one variable per value of the tuple
                    for r, a in zip(self.ret, ir.entries(s.value)):
                        out.append(ir.Assign(r, ir.Op(None, (a,), (), a.render(), "copy"), s.pos))
                else:
                    out.append(
                        ir.Assign(
                            self.ret, ir.Op(None, (s.value,), (), s.value.render(), "copy"), s.pos
                        )
                    )
                if self.done is None:
                    self.done = self.naming.temp("done")
                out.append(self.const(self.done, True, s.pos))
                for stop, _ in self.loops:
                    out.append(self.const(stop, True, s.pos))
                self.loops_with_return.update(b for _, b in self.loops)
                return out, True
            if isinstance(s, ir.If):
                body, e1 = self.block(s.body)
                orelse, e2 = self.block(s.orelse)
                out.append(replace(s, body=tuple(body), orelse=tuple(orelse)))
                if e1 or e2:
                    rest, _ = self.block(stmts[i + 1 :])
                    if rest:
                        flag = self.loops[-1][0] if self.loops else self.done
                        out.append(
                            ir.If(
                                ir.text("not {}", ir.Name(flag)),
                                tuple(rest),
                                (),
                                rest[0].pos if hasattr(rest[0], "pos") else s.pos,
                            )
                        )
                    return out, True
                continue
            if isinstance(s, (ir.For, ir.While)):
                lowered, returns = self.loop(s)
                out.extend(lowered)
                if returns:
                    rest, _ = self.block(stmts[i + 1 :])
                    if rest:
                        flag = self.loops[-1][0] if self.loops else self.done
                        out.append(ir.If(ir.text("not {}", ir.Name(flag)), tuple(rest), (), s.pos))
                    return out, True
                continue
            out.append(s)
        return out, False

    def loop(self, s):
        """(The lowered loop, preceded by the initialisation of its break flag if it has one;
        whether a return inside it may leave the function.)"""
        stop, brk = self.naming.temp("stop"), self.naming.temp("brk")
        self.loops.append((stop, brk))
        body, exits = self.block(s.body)
        self.loops.pop()
        if not exits:
            return [replace(s, body=tuple(body))], False
        body = [self.const(stop, False, s.pos)] + body
        before = []
        if brk in self.used_break:
            before.append(self.const(brk, False, s.pos))
            body.append(ir.LoopExit(ir.Text(brk, (brk,)), s.pos))
        returns = brk in self.loops_with_return
        if returns:
            body.append(ir.LoopExit(ir.Text(self.done, (self.done,)), s.pos))
        return before + [replace(s, body=tuple(body))], returns


def lower_function(stmts, naming, entries=False):
    """The exits of a function body lowered: its statements, the one ``Return`` last.

    ``entries`` (a helper being inlined, whose value its caller reads): where every return gives
    a tuple (or every one a list) of the same number of values, each value gets a variable of
    its own, and the one ``Return`` gives the tuple of those variables, which the caller binds
    or indexes with no tuple made (``return k, i, j`` in each branch of an im2col helper)."""
    body, ret = lower_exits(stmts, naming, entries)
    if isinstance(ret, tuple):
        value = ir.Tup(ir.Name(r) for r in ret)
        value.is_list = _tuple_returns(stmts)[1]
        body.append(ir.Return(value, body[-1].pos))
    elif ret is not None:
        body.append(ir.Return(ir.Name(ret), body[-1].pos))
    return body


def lower_exits(stmts, naming, entries=False):
    """Lower the exits of a function body. Returns (statements, the variable holding the result,
    None when the body's last statement is its only return; with ``entries``, a tuple of
    variables when every return gives a tuple of that many values)."""
    has_early = _has_early_return(stmts)
    if not has_early and not _has_loop_exits(stmts):
        return list(stmts), None
    shape = _tuple_returns(stmts) if entries and has_early else None
    ret = (
        tuple(naming.temp("ret") for _ in range(shape[0]))
        if shape is not None
        else naming.temp("ret")
    )
    low = _Lowering(naming, ret)
    if not has_early:
        body, _ = low.block(stmts[:-1])
        return body + [stmts[-1]], None
    body, _ = low.block(stmts)
    init = [low.const(low.done, False, stmts[0].pos)] if low.done else []
    return init + body, ret


def _tuple_returns(stmts):
    """(number of values, is a list) when every ``Return`` gives a tuple literal of the same
    number of values (or every one a list literal), else None."""
    shapes = {
        (len(ir.entries(s.value)), _is_list(s.value)) if ir.entries(s.value) is not None else None
        for s in ir.walk(stmts)
        if isinstance(s, ir.Return)
    }
    return shapes.pop() if len(shapes) == 1 and None not in shapes else None


def _is_list(atom):
    return atom.is_list if isinstance(atom, ir.Tup) else type(atom.value) is list


def _has_early_return(stmts):
    returns = [s for s in ir.walk(stmts) if isinstance(s, ir.Return)]
    return len(returns) > 1 or (returns and stmts and returns[0] is not stmts[-1])


def _has_loop_exits(stmts):
    return any(isinstance(s, (ir.Break, ir.Continue)) for s in ir.walk(stmts))
