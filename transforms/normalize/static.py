"""What is known when compiling: conditions decided now, and integer arithmetic on constants.

Expects: name resolution (``resolve``) and the normalizer's state. Guarantees:

- ``_static_test(node)`` is the value of a condition when everything it reads is known now (the
  literals, an inlined function's parameters bound to constants whose guard checks their value,
  the parameters a specialized compile fixed (``None`` and ``bool`` arguments), module-level and
  closure values that are ``None`` or bools), else None. A captured value it reads is recorded with an
  equality check (``captures.py``): when it changes, the code is compiled again.
- ``_decided_test(node)`` is ``_static_test``'s value, or else the objects' (``objects._fold``:
  ``is None``, ``isinstance`` and string comparisons of what the call's arguments hold, each
  decision checked by the argument guard). An ``if`` or a conditional expression whose
  condition it decides is lowered as its taken branch alone (the other can never run on this
  compile's calls); code after a taken branch that ends in ``return``, ``break`` or
  ``continue`` is not lowered (it cannot run either).
- ``_folded(fn, args)`` is the constant value of an operator on integer, string, bool or None
  constants (``n - 1`` where ``n`` is a literal argument), so a recursive helper's stopping test
  is known at each level (``inline``).
"""

from __future__ import annotations

import operator

import libcst as cst

from sourcegrad.errors import SourcegradError

from .. import ir
from .syntax import BINOPS, CMPOPS, UNOPS, literal_value

_PLAIN = (bool, int, float, str, type(None))
_FOLDED = frozenset(
    {
        operator.add,
        operator.sub,
        operator.mul,
        operator.floordiv,
        operator.mod,
        operator.neg,
        operator.pos,
        operator.not_,
        operator.lt,
        operator.le,
        operator.gt,
        operator.ge,
        operator.eq,
        operator.ne,
        operator.is_,
        operator.is_not,
    }
)
_MAX_FOLDED = 1 << 64  # larger integers stay computed where the code runs


class _Unknown(Exception):
    """The condition reads something not known now."""


def _decided(atom):
    """May a compile decide from the constant ``atom`` (an inlined parameter's argument)? A
    literal, or a captured value whose guard checks its value (``captures.check_of``: ints,
    bools, strings, None); a captured float's guard checks its type only, so it is read where
    the code runs."""
    value = atom.value
    if type(value) in (bool, int, str, type(None)):
        return True
    if type(value) is float:
        try:
            return float(literal_value(atom.text.lstrip("(-").rstrip(")"))) == abs(value)
        except (ValueError, SyntaxError):
            return False
    return False


def _plain(value):
    return type(value) in _PLAIN or (type(value) is tuple and all(type(v) in _PLAIN for v in value))


class Static:
    """The compile-time evaluation methods of the ``Normalizer``."""

    def _decided_test(self, node):
        """The truth of an ``if`` test decided now, else None: from constants and captured values
        (``_static_test``), else from what the call's arguments hold (``_fold``, ``objects.py``:
        ``is None``, ``isinstance``, string comparisons, each checked by the argument guard)."""
        known = self._static_test(node)
        return known if known is not None else self._fold(node)

    def _static_test(self, node):
        """The truth of condition ``node`` if it is known now, else None."""
        reads = []
        try:
            value = bool(self._value_now(node, reads))
        except _Unknown:
            return None
        except Exception:  # noqa: BLE001 — it raises where it runs (1 // 0): decided there
            return None
        for read in reads:
            self.captures.record(read[0], read[1], read[2], read[3], "eq")
        return value

    def _value_now(self, node, reads):
        """The value of ``node`` known now (``reads``: the captured values it read), or raise
        ``_Unknown``."""
        kind = type(node)
        if kind is cst.Name:
            return self._known_name(node, reads)
        if kind in (cst.Integer, cst.Float, cst.SimpleString):
            return literal_value(node.value)
        if kind is cst.Attribute:
            if self._is_local_expr(node):
                raise _Unknown
            return self._known_capture(node, reads)
        if kind is cst.UnaryOperation:
            fn, _ = UNOPS[type(node.operator)]
            if fn is operator.invert:
                raise _Unknown
            return fn(self._value_now(node.expression, reads))
        if kind is cst.BooleanOperation:
            left = self._value_now(node.left, reads)
            if isinstance(node.operator, cst.And):
                return self._value_now(node.right, reads) if left else left
            return left if left else self._value_now(node.right, reads)
        if kind is cst.Comparison:
            left = self._value_now(node.left, reads)
            for c in node.comparisons:
                right = self._value_now(c.comparator, reads)
                op = type(c.operator)
                if op in CMPOPS:
                    holds = CMPOPS[op][0](left, right)
                elif op is cst.In:
                    holds = left in right
                elif op is cst.NotIn:
                    holds = left not in right
                else:
                    raise _Unknown
                if not holds:
                    return False
                left = right
            return True
        if kind is cst.BinaryOperation:
            entry = BINOPS.get(type(node.operator))
            if entry is None or entry[0] not in _FOLDED:
                raise _Unknown
            value = entry[0](self._value_now(node.left, reads), self._value_now(node.right, reads))
            if not _plain(value):
                raise _Unknown
            return value
        if kind is cst.Tuple:
            return tuple(self._value_now(el.value, reads) for el in node.elements)
        raise _Unknown

    def _known_name(self, node, reads):
        name = node.value
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        atom = self.subst.get(name)
        if atom is not None:
            if type(atom) is ir.Const and _decided(atom):
                return atom.value
            raise _Unknown
        if name in self.locals:
            raise _Unknown
        return self._known_capture(node, reads)

    def _known_capture(self, node, reads):
        """A module-level or closure value (or an attribute chain of one) that is ``None`` or a
        bool: a flag (a number may change on every call, a step counter: it is read where the
        code runs)."""
        try:
            value, read = self._resolve(node)
        except SourcegradError:  # not defined (yet): read where the code runs, as written
            raise _Unknown from None
        if value is not None and type(value) is not bool:
            raise _Unknown
        if read is not None:
            reads.append(read)
        return value

    def _folded(self, fn, args):
        """``fn(*args)`` as a ``Const`` when ``fn`` is an operator and every argument a constant
        int, bool, string or None (``n - 1`` of a literal ``n``), else None."""
        if fn not in _FOLDED:
            return None
        values = []
        for a in args:
            if type(a) is not ir.Const or type(a.value) not in (int, bool, str, type(None)):
                return None
            values.append(a.value)
        try:
            value = fn(*values)
        except Exception:  # noqa: BLE001 — 1 // 0 raises where it runs, as written
            return None
        if type(value) not in (int, bool, str, type(None)) or (
            type(value) is int and abs(value) >= _MAX_FOLDED
        ):
            return None
        return ir.Const(value, repr(value))


__all__ = ["Static"]
