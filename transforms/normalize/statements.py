"""Statements other than assignments and loops: expression statements, ``return``, ``assert``,
``raise``, ``break``/``continue``, ``if``, ``while`` and ``with no_grad():``.

Expects: the walk of ``anf`` and its state. Guarantees: a call made for its side effect is a
local list's ``append``/``extend`` (``Append`` statements), ``np.<ufunc>.at`` (an in-place
``Assign``), ``print``, ``breakpoint``, ``warnings.warn``, a logger's methods or one of
sourcegrad's own checks (an ``Effect``), and any other is refused; ``break``/``continue`` appear
only inside loops (``exits.py`` lowers them); inside ``with no_grad():`` every operation is
non-differentiable.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import types
import warnings
from dataclasses import replace

import libcst as cst

from sourcegrad.runtime import check_sequence, check_unpack, no_grad

from .. import fence, ir
from .. import rules as R
from ..ir import Tup
from .calls import _is_users, _users_method
from .syntax import code_of

# run in the forward as written: what they are given is never differentiated
_SIDE_EFFECT_ONLY = {builtins.print, builtins.breakpoint, warnings.warn}
_LOG_METHODS = ("debug", "info", "warning", "error", "exception", "critical", "log")
# sourcegrad's own checks of a value (they return nothing, or raise): when the compiler reads code
# it generated (hvp differentiates a generated jvp), they run in the forward as written
_RUNTIME_CHECKS = {check_sequence, check_unpack}


class Statements:
    """The statement methods of the ``Normalizer`` (assignments: ``assign``; loops: ``loops``)."""

    def _small_Expr(self, s):
        v = s.value
        if isinstance(v, (cst.SimpleString, cst.ConcatenatedString)):
            return  # docstring
        if isinstance(v, cst.Call):
            self._call_statement(v, s)
            return
        if isinstance(v, (cst.Yield, cst.Await)):
            fence.refuse(self.src, v)
        fence.refuse(
            self.src,
            s,
            msg="an expression statement whose value is discarded is not supported",
            hint="assign the value to a variable, or remove the statement",
        )

    def _call_statement(self, v, s):
        """A call ``v`` whose value is discarded (the statement ``s``)."""
        func = v.func
        if self._local_method(func, "append"):
            if len(v.args) != 1 or v.args[0].keyword is not None or v.args[0].star:
                fence.refuse(self.src, v, msg="append takes one value")
            value = self._atom(v.args[0].value)
            self._emit(ir.Append(self._local(func.value.value), value, self._pos(s)))
            return
        if self._local_method(func, "extend"):
            if len(v.args) != 1 or v.args[0].keyword is not None or v.args[0].star:
                fence.refuse(self.src, v, msg="extend takes one sequence")
            self._extend(self._local(func.value.value), self._atom(v.args[0].value), self._pos(s))
            return
        if (
            type(func) is cst.Attribute
            and func.attr.value in ("append", "extend")
            and type(func.value) in (cst.Attribute, cst.Subscript)
            and self._is_local_expr(func.value)
        ):
            self._list_append(func, v, s)  # self.cache.append(x): objects.py
            return
        if type(func) is cst.Name and func.value not in self.locals:
            if self._static_callee(func) is builtins.setattr:
                self._setattr(v, s)
                return
        if (type(func) is cst.Attribute and self._is_local_expr(func.value)) or (
            type(func) is cst.Name and func.value in self.locals
        ):
            # a method or a function held in a value, called for what it does (a check, a
            # write into self): inlined, its value (None) dropped
            self._statement_call(v, s)
            return
        callee = self._static_callee(v.func)
        if (
            getattr(callee, "__name__", None) == "at"
            and getattr(callee, "__self__", None) in R.UFUNC_AT
        ):
            self._ufunc_at(v, R.UFUNC_AT[callee.__self__], s)
            return
        if callee in _SIDE_EFFECT_ONLY or callee in _RUNTIME_CHECKS or _is_logging(callee):
            self._emit(ir.Effect(self._kept(v), self._pos(s)))
            return
        if (isinstance(callee, types.FunctionType) and _is_users(callee)) or _users_method(
            callee, v.func
        ) is not None:
            self._statement_call(v, s)  # is_binary(y), MODEL.check(x): inlined
            return
        self._refuse_discarded(v, s, callee)

    def _statement_call(self, v, s):
        """A call of the user's code made for what it does (a validation helper, a method that
        writes into ``self``): inlined, as any call of it is, its value dropped. A call that turns
        out to be a library's is refused as a discarded value."""
        op = self._op(v)
        if isinstance(op, ir.Op):
            self._refuse_discarded(v, s, None)

    def _local_method(self, func, name):
        """Is ``func`` the method ``name`` of a local variable (``xs.append``)?"""
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value == name
            and isinstance(func.value, cst.Name)
            and func.value.value in self.locals
        )

    def _refuse_discarded(self, v, s, callee):
        """Refuse a call made only for its side effect, saying why."""
        if (
            callee is not None
            and getattr(callee, "__self__", None) is not None
            and not isinstance(callee.__self__, types.ModuleType)
            and R.lookup(callee) is None
            and not R.is_nondiff(callee)
        ):
            fence.refuse(
                self.src,
                s,
                msg=f"the call {code_of(v.func)}(...) changes an object outside the function, "
                "which sourcegrad cannot differentiate",
                hint="build a local value and return it instead",
            )
        self._op(v)  # refuses what the call itself does wrong (out=, in-place methods, ...)
        if callee is not None and (R.lookup(callee) is not None or R.is_nondiff(callee)):
            fence.refuse(
                self.src,
                s,
                msg=f"the value of {code_of(v.func)}(...) is discarded",
                hint="assign the value to a variable, or remove the statement",
            )
        fence.refuse(
            self.src,
            s,
            msg=f"the call {code_of(v.func)}(...) is made only for its side effect, "
            "which sourcegrad cannot differentiate",
            hint="assign its result to a variable and use it; objects outside the function cannot be changed",
        )

    def _ufunc_at(self, call, fn, s):
        """``np.add.at(buf, idx, v)`` updates ``buf`` in place: ``buf = add_at(buf, idx, v)``,
        refused as ``buf += v`` is where another name sees ``buf`` (``aliasing.py``)."""
        args, kwargs = self._call_args(call)
        if kwargs or len(args) != 3 or not isinstance(args[0], ir.Name):
            fence.refuse(
                self.src,
                call,
                msg=f"{code_of(call.func)}(buf, indices, values) is supported with three "
                "arguments by position, buf an array the function allocated",
                hint="buf = np.zeros(n); np.add.at(buf, idx, values)",
            )
        buf = call.args[0].value
        if len(self.inlining) == 1 and isinstance(buf, cst.Name) and buf.value in self.params:
            fence.refuse(
                self.src,
                call,
                msg=f"{code_of(call.func)} writes into {buf.value!r}, an argument: it would change "
                "the caller's data",
                hint=f"work on a copy: buf = {buf.value}.copy(), then {code_of(call.func)}(buf, ...)",
            )
        text = f"{self.captures.bind(fn.__name__)}({', '.join(a.render() for a in args)})"
        self._emit(
            ir.Assign(
                args[0].id,
                ir.Op(fn, args, (), text, self._kind(fn)),
                self._pos(s),
                inplace=True,
                node=s,
            )
        )

    def _extend(self, target, seq, pos):
        """``xs.extend(seq)``: one ``append`` per entry (a loop over ``seq`` by index when it is not
        a literal), so the list is changed in place as Python changes it."""
        if isinstance(seq, Tup):
            for a in seq:
                self._emit(ir.Append(target, a, pos))
            return
        if not isinstance(seq, ir.Name):
            fence.refuse(
                self.src,
                self._cur_pos,
                msg="extend takes a list, a tuple or a variable holding one",
            )
        k, entry = self.naming.temp("k"), self.naming.temp()
        with self._collecting() as body:
            self._emit(ir.Assign(entry, self._getitem_op(seq, ir.Index((ir.Name(k),), False)), pos))
            self._emit(ir.Append(target, ir.Name(entry), pos))
        self._emit(ir.For(k, self._range_len(seq), tuple(body), pos))

    def _small_Return(self, s):
        if s.value is None:
            fence.refuse(
                self.src,
                s,
                msg="a differentiated function must return a value",
                hint="return the value to differentiate: return loss",
            )
        atom = self._atom(s.value)
        if isinstance(atom, Tup):
            fence.refuse(
                self.src,
                s,
                msg="returning a tuple is not supported yet",
                hint="return one value (a scalar for grad, any array for vjp)",
            )
        self._emit(ir.Return(atom, self._pos(s)))

    def _small_Assert(self, s):
        """``assert`` runs in the forward as written; its condition is never differentiated."""
        self._kept_statement(s, "assert", s.test, ", ", s.msg)

    def _small_Raise(self, s):
        """``raise`` runs in the forward as written (argument checks: ``if x.ndim != 1: raise
        ValueError(...)``); a call that raises has no backward, so its branch has none either."""
        if s.exc is None:
            fence.refuse(
                self.src,
                s,
                msg="a bare raise re-raises the exception being handled, and there is none here",
                hint="raise an exception object: raise ValueError(...)",
            )
        cause = s.cause.item if s.cause is not None else None
        self._kept_statement(s, "raise", s.exc, " from ", cause)

    def _kept_statement(self, s, keyword, first, joiner, second):
        """``keyword first`` (``joiner second`` when given), an ``Effect`` run as written."""
        a = self._test(first)
        b = self._test(second) if second is not None else None
        text = f"{keyword} {a}" + (f"{joiner}{b}" if b is not None else "")
        names = a.names | (b.names if b is not None else set())
        self._emit(ir.Effect(ir.Text(text, names), self._pos(s)))

    def _small_Break(self, s):
        self._in_loop_only(s, "break")
        self._emit(ir.Break(self._pos(s)))

    def _small_Continue(self, s):
        self._in_loop_only(s, "continue")
        self._emit(ir.Continue(self._pos(s)))

    def _in_loop_only(self, s, what):
        if not self._loop_depth:
            fence.refuse(self.src, s, msg=f"{what} outside a loop")

    @contextlib.contextmanager
    def _in_loop(self):
        """Statements lowered inside the ``with`` are in a loop's body (``break`` is allowed)."""
        self._loop_depth += 1
        try:
            yield
        finally:
            self._loop_depth -= 1

    def _stmt_If(self, s):
        pos = self._pos(s)
        folded = self._fold(s.test)
        if folded is not None:  # decided now (objects.py): the side it takes, in place
            if folded:
                self._statements(s.body)
            elif isinstance(s.orelse, cst.If):
                self._stmt_If(s.orelse)
            elif isinstance(s.orelse, cst.Else):
                self._statements(s.orelse.body)
            if self.block and isinstance(self.block[-1], (ir.Return, ir.Break, ir.Continue)):
                self.unreachable = True
            return
        test = self._test(s.test)

        def orelse():
            if isinstance(s.orelse, cst.If):  # elif
                with self._collecting() as out:
                    self._stmt_If(s.orelse)
                return out
            if isinstance(s.orelse, cst.Else):
                return self._block(s.orelse.body)
            return []

        body, orelse = self._branches(lambda: self._block(s.body), orelse)
        self._emit(ir.If(test, tuple(body), tuple(orelse), pos))

    def _stmt_While(self, s):
        if s.orelse is not None:
            fence.refuse(
                self.src,
                s.orelse,
                msg="while/else is not supported",
                hint="use a flag variable and an if after the loop",
            )
        with self._in_user_loop(s):
            test = self._test(s.test)
            with self._in_loop():
                body = tuple(self._block(s.body))
        self._emit(ir.While(test, body, self._pos(s)))

    def _stmt_With(self, s):
        item = s.items[0] if len(s.items) == 1 else None
        call = item.item if item is not None else None
        if (
            item is None
            or item.asname is not None
            or not isinstance(call, cst.Call)
            or call.args
            or self._static_callee(call.func) is not no_grad
        ):
            fence.refuse(self.src, s, kind="With")
        saved, self.no_grad = self.no_grad, True
        try:
            for stmt in s.body.body:
                self._stmt(stmt)
        finally:
            self.no_grad = saved

    def _without_gradient(self, stmt):
        """Inside ``with no_grad():`` nothing is differentiated: every operation is constant."""
        if isinstance(stmt, ir.Assign) and stmt.op.kind != "nondiff":
            return ir.Assign(
                stmt.target,
                ir.Op(stmt.op.key, stmt.op.args, stmt.op.kwargs, stmt.op.text, "nondiff"),
                stmt.pos,
            )
        if isinstance(stmt, ir.SetItem) and isinstance(stmt.value, ir.Name):
            tmp = self.naming.temp()
            self.block.append(
                ir.Assign(tmp, ir.Op(None, (stmt.value,), (), stmt.value.id, "nondiff"), stmt.pos)
            )
            return replace(stmt, value=ir.Name(tmp))
        return stmt


def _is_logging(callee):
    """``log.info(...)`` of a ``logging.Logger`` (or ``logging.info(...)``): it only writes."""
    name = getattr(callee, "__name__", None)
    if name not in _LOG_METHODS:
        return False
    owner = getattr(callee, "__self__", None)
    return isinstance(owner, (logging.Logger, logging.LoggerAdapter)) or callee is getattr(
        logging, name
    )
