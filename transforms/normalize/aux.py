"""``grad(f, has_aux=True)``: ``f`` returns a pair ``(loss, aux)``, and only the loss is reversed.

Expects: what the ``Normalizer`` expects. Guarantees: what it guarantees, and every ``return``
of ``f`` itself gives the loss, after binding the variable ``aux_var`` to the aux (on every
path; the analysis gives it no adjoint, as it reaches no output); a return of a variable holding
the pair is checked to be a pair when it runs (``check_aux_pair``).
"""

from __future__ import annotations

import libcst as cst

from sourcegrad.errors import UnsupportedSyntaxError, UsageError

from .. import fence, ir
from . import Normalizer


class AuxNormalizer(Normalizer):
    """For ``grad(f, has_aux=True)``: each ``return loss, aux`` of ``f`` itself (not of the
    functions it calls) becomes ``aux = <aux>`` followed by ``return loss``, so the one value
    reversed is the loss, and ``aux`` (one variable, bound on every path) reaches no output: the
    analysis gives it no adjoint. A return of a variable holding the pair is checked to be a pair
    when it runs, then read by index. ``return helper(...)`` of a function of the user's (or a
    local def) inlines the helper with the same treatment of its own returns, so the pair may
    come from a helper (a helper's tuple anywhere else is refused, as without has_aux)."""

    aux_var = None
    aux_of = None  # the function differentiated with has_aux (named in messages)
    _aux_call = None  # the call node of the ``return helper(...)`` being lowered
    _aux_inlined = False  # was that call inlined with its returns giving the pair?

    def _small_Return(self, s):
        if s.value is None or (self.parent is not None and self.aux_of is None):
            return super()._small_Return(s)
        pos = self._pos(s)
        if self.aux_var is None:
            self.aux_var = self.naming.unique("aux")
            self.aux_of = self.fn.__qualname__
        value = s.value
        if isinstance(value, cst.Tuple):
            elements = value.elements
            if len(elements) != 2 or any(isinstance(e, cst.StarredElement) for e in elements):
                raise fence.located(
                    UnsupportedSyntaxError,
                    self.src,
                    s,
                    f"{self._aux_whose()} must return a pair (loss, aux), but this return gives {len(elements)} values",
                    "return (loss, aux): put the other values in aux, e.g. return loss, (a, b)",
                )
            loss = self._atom(elements[0].value)
            self._assign_expr(self.aux_var, elements[1].value, pos)
            self._emit(ir.Return(loss, pos))
            return
        self._aux_call, self._aux_inlined = (value if isinstance(value, cst.Call) else None), False
        r = self._atom(value)
        inlined, self._aux_call, self._aux_inlined = self._aux_inlined, None, False
        if inlined:  # return helper(...): the helper's own returns bound aux and gave the loss
            self._emit(ir.Return(r, pos))
            return
        if not isinstance(r, ir.Name):
            raise fence.located(
                UnsupportedSyntaxError,
                self.src,
                s,
                f"{self._aux_whose()} must return a pair (loss, aux), not a single value",
                "return loss, aux",
            )
        check = self.captures.bind("check_aux_pair", check_aux_pair)
        via = f", {self.fn.__qualname__!r}" if self.parent is not None else ""
        self._emit(ir.Effect(ir.Text(f"{check}({r.id}, {self.aux_of!r}{via})", (r.id,)), pos))
        loss = self.naming.unique("loss")
        self._emit(ir.Assign(loss, self._getitem_op(r, ir.Index((ir.Const(0, "0"),), False)), pos))
        self._emit(
            ir.Assign(self.aux_var, self._getitem_op(r, ir.Index((ir.Const(1, "1"),), False)), pos)
        )
        self._emit(ir.Return(ir.Name(loss), pos))

    def _aux_whose(self):
        if self.parent is None:
            return f"{self.fn.__qualname__} is differentiated with has_aux=True, so it"
        return (
            f"{self.fn.__qualname__} gives the value of {self.aux_of}, which is differentiated with "
            "has_aux=True, so it"
        )

    def _inline_call(self, node, child, signature, callee, args, kwargs, lower=None):
        if node is not None and node is self._aux_call:
            # the helper's returns give (loss, aux): it is lowered as this class, sharing aux
            child.__class__ = AuxNormalizer
            child.aux_var, child.aux_of = self.aux_var, self.aux_of
            self._aux_inlined = True
        return super()._inline_call(node, child, signature, callee, args, kwargs, lower)


def check_aux_pair(value, name, via=None):
    """``has_aux=True``: the function's value must be a pair ``(loss, aux)`` (``via``: the helper
    whose return gives it)."""
    if not isinstance(value, tuple) or len(value) != 2:
        what = (
            f"a tuple of {len(value)} values"
            if isinstance(value, tuple)
            else f"a {type(value).__name__}"
        )
        who = f"{name} is" if via is None else f"{via} gives the value of {name}, which is"
        raise UsageError(
            f"{who} differentiated with has_aux=True, so it must return a pair (loss, aux), "
            f"but it returned {what}"
        )
