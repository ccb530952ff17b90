"""``with`` blocks: ``sourcegrad.no_grad()``, context managers that carry no gradient, and
``contextlib.suppress``.

Expects: the walk of ``anf`` and its state. Guarantees: inside ``with no_grad():`` every
operation is non-differentiable (``statements._without_gradient``); a manager that carries no
gradient (``np.errstate``, ``warnings.catch_warnings``, ``contextlib.nullcontext``,
``np.printoptions``) is made, entered (``enter_context``, its value bound to the ``as`` name)
and exited (``exit_context``) around its block's forward, as Python runs it, and exited before
a ``return``, ``break`` or ``continue`` leaves the block (``_exit_contexts``, called by those
statements); when an exception leaves the generated code, ``runtime.contexts.unwind_contexts``
exits it. The backward runs outside it. ``with contextlib.suppress(E):`` is ``try: ... except E:
pass`` (``attempts``); several items are nested blocks. Any other ``with`` is refused.
"""

from __future__ import annotations

import contextlib
import warnings

import libcst as cst
import numpy as np

from sourcegrad.runtime import no_grad
from sourcegrad.runtime.contexts import enter_context, exit_context

from .. import fence, ir

# context managers that carry no gradient: entered and exited around their block's forward
_NO_GRADIENT_CONTEXTS = {
    np.errstate,
    warnings.catch_warnings,
    contextlib.nullcontext,
    np.printoptions,
}


class Contexts:
    """The ``with`` methods of the ``Normalizer``."""

    def _stmt_With(self, s):
        """``with``: ``sourcegrad.no_grad()``; a context manager that carries no gradient
        (``np.errstate``, ``warnings.catch_warnings``, ...: entered and exited around the block's
        forward, as Python does); ``contextlib.suppress(E)``, a ``try`` whose handler passes.
        Several items are nested blocks, as in Python."""
        if s.asynchronous is not None:
            fence.refuse(self.src, s, kind="AsyncFunctionDef")
        if len(s.items) > 1:
            rest = list(s.items[1:])
            rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            inner = s.with_changes(items=rest)
            self.src.alias(inner, s)
            first = s.items[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            outer = s.with_changes(items=[first], body=cst.IndentedBlock(body=[inner]))
            self.src.alias(outer, s)
            self._stmt_With(outer)
            return
        item = s.items[0]
        call = item.item
        callee = self._static_callee(call.func) if isinstance(call, cst.Call) else None
        if callee in _NO_GRADIENT_CONTEXTS:
            self._managed(s, item, call)
            return
        if callee is contextlib.suppress:
            self._suppressing(s, call)
            return
        if (
            item.asname is not None
            or not isinstance(call, cst.Call)
            or call.args
            or callee is not no_grad
        ):
            fence.refuse(self.src, s, kind="With")
        saved, self.no_grad = self.no_grad, True
        try:
            for stmt in s.body.body:
                self._stmt(stmt)
        finally:
            self.no_grad = saved

    def _managed(self, s, item, call):
        """``with np.errstate(...) [as v]:``: the manager made and entered, the block, the
        manager exited (when an exception leaves the generated code, ``unwind_contexts`` exits
        it)."""
        pos = self._pos(s)
        manager = self.naming.temp("context")
        self._emit(ir.Assign(manager, self._op(call), pos))
        enter = f"{self.captures.bind('enter_context', enter_context)}({manager})"
        if item.asname is not None:
            target = item.asname.name
            if not isinstance(target, cst.Name):
                fence.refuse(self.src, target, msg="the target of with ... as must be a name")
            value = ir.Op(None, (ir.Name(manager),), (), enter, "nondiff")
            self._emit(ir.Assign(self._local(target.value), value, pos))
        else:
            self._emit(ir.Effect(ir.Text(enter, (manager,)), pos))
        self._open_contexts.append(manager)
        try:
            self._stmts(s.body.body)
        finally:
            self._open_contexts.pop()
        self._exit_contexts([manager], pos)

    def _exit_contexts(self, managers, pos):
        """Exit ``managers``, innermost first: their block ends (or a return, break or continue
        leaves it: ``exits.py`` skips what follows in the block)."""
        for manager in reversed(managers):
            leave = f"{self.captures.bind('exit_context', exit_context)}({manager})"
            self._emit(ir.Effect(ir.Text(leave, (manager,)), pos))

    def _suppressing(self, s, call):
        """``with contextlib.suppress(E1, E2):`` is ``try: ... except (E1, E2): pass``."""
        if not call.args or any(a.keyword is not None or a.star for a in call.args):
            fence.refuse(self.src, call, msg="contextlib.suppress takes exception types")
        kinds = [cst.Element(a.value) for a in call.args]
        handler = cst.ExceptHandler(
            body=cst.IndentedBlock(body=[cst.SimpleStatementLine([cst.Pass()])]),
            type=cst.Tuple(kinds) if len(kinds) > 1 else call.args[0].value,
        )
        lowered = cst.Try(body=s.body, handlers=[handler])
        self.src.alias(lowered, s)
        self.src.alias(handler, s)
        self._stmt_Try(lowered)
