"""Instantiate an adjoint template for one call: fill its fields with the call's operands.

Expects: a parsed ``templates.Template`` and, for one call, its operands (as ``Code``), the adjoint
variable of each differentiated parameter (None where inactive), a source of fresh names, and
``bind`` (the name a template global has in the generated code). Guarantees: ``instantiate``
returns the ``Instance`` of each statement that runs for those adjoints (an inactive
parameter's statements and the temporaries only they read are dropped), its text filled by
reference (``code.Ref``), never by re-parsing, with what a constant operand leaves behind folded
(``x ** (2 - 1)`` is ``x``). Which statements run for a set of active parameters is chosen once
per template.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass

from . import code
from .code import Code, Ref


@dataclass
class Instance:
    """One template statement, instantiated: target adjoint or temporary, and its expression."""

    target: str  # the adjoint variable (accumulate) or fresh temporary (assign)
    accumulate: bool
    expr: Code
    reads_adjoint: tuple  # adjoint variable names it reads
    source_param: str = ""  # the template parameter it accumulates into
    inner: Code = None  # E of ``unbroadcast(E, x)``, when that is the whole expression
    tight: bool = False  # may ``2 * expr`` be written as it is (``inner_tight`` for ``inner``)
    inner_tight: bool = False
    reduces: tuple = None  # the template statement's ``reduces``


def instantiate(template, values, adjoints, fresh, bind):
    """Fill ``template`` for one call.

    ``values``: parameter -> its operand as ``Code``; ``adjoints``: parameter -> adjoint variable
    name, or None when that parameter is inactive (its statements are dropped); ``fresh()``: a
    new temporary name; ``bind(name, obj)``: the name the generated code reads a global of the
    template by (``np``, ``unbroadcast``), chosen so that it means that object there."""
    active = tuple(s.target for s in template.stmts if s.accumulate and adjoints.get(s.target))
    known = _KEPT.setdefault(template, {})
    kept = known.get(active)
    if kept is None:
        kept = known[active] = _kept(template, active)
    local_map = {}

    def field(kind, n):
        if kind == "V":
            return values[n]
        if kind == "A":
            return Ref(adjoints[n])
        if kind == "L":
            return Ref(local_map[n])
        return Ref(bind(n, template.global_object(n)))

    def fill(parts):
        return _fold(code.of(*[field(*p) if type(p) is tuple else p for p in parts]))

    out = []
    for s in kept:
        expr = fill(s.parts)
        reads_adjoint = tuple(adjoints[p] for p in s.reads_adjoints)
        if s.accumulate:
            inner = fill(s.inner) if s.inner is not None else None
            out.append(
                Instance(
                    adjoints[s.target],
                    True,
                    expr,
                    reads_adjoint,
                    s.target,
                    inner,
                    s.tight,
                    s.inner_tight,
                    s.reduces,
                )
            )
        else:
            local_map[s.target] = fresh(s.target)
            out.append(Instance(local_map[s.target], False, expr, reads_adjoint))
    return out


# template -> {the parameters with adjoints: its statements kept}
_KEPT = weakref.WeakKeyDictionary()


def _kept(template, active):
    """The statements of ``template`` that run when the parameters in ``active`` have adjoints:
    theirs, and the temporaries they read."""
    live = [s for s in template.stmts if not s.accumulate or s.target in active]
    needed = set()
    for s in live:
        needed |= s.reads_locals
    kept = []
    for s in reversed(live):  # drop temporaries nobody reads
        if s.accumulate or s.target in needed:
            kept.append(s)
            needed |= s.reads_locals
    kept.reverse()
    return tuple(kept)


_ARITH = re.compile(r"\((-?\d+(?:\.\d+)?) ([-+*]) (\d+(?:\.\d+)?)\)")
_POW1 = re.compile(r" \*\* 1(?![\d.eE])")


def _fold(expr):
    """Fold what a constant operand leaves behind in the literal text: ``x ** (2 - 1)`` -> ``x``."""
    parts, changed = [], False
    for p in expr.parts:
        if type(p) is not Ref and ("(" in p or " ** 1" in p):
            q = _POW1.sub("", _ARITH.sub(lambda m: _num(m.group(1), m.group(2), m.group(3)), p))
            changed = changed or q != p
            p = q
        parts.append(p)
    return code.of(*parts) if changed else expr


def _num(a, op, b):
    x, y = (float(a), float(b)) if "." in a + b else (int(a), int(b))
    v = x - y if op == "-" else x + y if op == "+" else x * y
    return f"({v})" if v < 0 else str(v)
