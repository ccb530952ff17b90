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
from dataclasses import dataclass
from functools import lru_cache

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
    active = tuple([s.target for s in template.stmts if s.accumulate and adjoints.get(s.target)])
    # template -> {the parameters with adjoints: its statements kept}, kept on the template
    # (compared and hashed by identity) as ``Code.names`` keeps its names
    known = template.__dict__.get("_kept")
    if known is None:
        known = template.__dict__["_kept"] = {}
    kept = known.get(active)
    if kept is None:
        kept = known[active] = _kept(template, active)
    local_map = {}

    def fill(parts):
        """``code.of`` of the parts with each field replaced by its code, then folded."""
        out = []
        text = ""  # literal text not yet appended
        names = True  # has every value filled in been a name? (then only the template's own
        # text is literal, and folding it changes nothing where it changed nothing before)
        for p in parts:
            if type(p) is str:
                text += p
                continue
            kind, n = p
            if kind == "V":
                v = values[n]
                if type(v) is not Code:  # a name, or literal text
                    v = Code((v,)) if type(v) is Ref else Code((v,) if v else ())
                if not v.parts:
                    names = False  # the texts around it join
                for item in v.parts:
                    if type(item) is Ref:
                        if text:
                            out.append(text)
                            text = ""
                        out.append(item)
                    elif item:
                        text += item
                        names = False
                continue
            if kind == "A":
                ref = Ref(adjoints[n])
            elif kind == "L":
                ref = Ref(local_map[n])
            else:
                ref = Ref(bind(n, template.global_object(n)))
            if text:
                out.append(text)
                text = ""
            out.append(ref)
        if text:
            out.append(text)
        if names and _folds_nothing(parts):
            return Code(tuple(out))
        return _fold(out)

    out = []
    for s in kept:
        expr = fill(s.parts)
        reads_adjoint = tuple([adjoints[p] for p in s.reads_adjoints])
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


def _fold(parts):
    """``Code`` of merged ``parts`` (literal text and ``Ref`` s), with what a constant operand
    leaves behind in the literal text folded: ``x ** (2 - 1)`` -> ``x``."""
    folded, changed = parts, False
    for k, p in enumerate(parts):
        if type(p) is not Ref and ("(" in p or " ** 1" in p):
            q = _fold_text(p)
            if q != p:
                if not changed:
                    folded, changed = list(parts), True
                folded[k] = q
    return code.of(*folded) if changed else Code(tuple(parts))


@lru_cache(maxsize=1024)
def _folds_nothing(parts):
    """Does folding leave every literal text of a template statement's ``parts`` as it is?"""
    return all(type(p) is not str or _fold_text(p) == p for p in parts)


@lru_cache(maxsize=4096)
def _fold_text(p):
    """``p`` folded, or ``p`` itself when nothing folds (the same few texts recur in every
    instantiation of a template)."""
    q = _POW1.sub("", _ARITH.sub(lambda m: _num(m.group(1), m.group(2), m.group(3)), p))
    return p if q == p else q


def _num(a, op, b):
    x, y = (float(a), float(b)) if "." in a + b else (int(a), int(b))
    v = x - y if op == "-" else x + y if op == "+" else x * y
    return f"({v})" if v < 0 else str(v)
