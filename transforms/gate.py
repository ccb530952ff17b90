"""The activity gate: an active value never reaches a parameter without an adjoint.

Expects: the normalized IR, its call bindings and the ``varied`` set of the analysis (the names
that depend on a ``wrt`` input through differentiable operations). Guarantees, when it returns:
every operand that depends on ``wrt`` and binds to a parameter with no adjoint (a template
parameter no ``d[p] += ...`` line accumulates into, an argument of a function registered as
carrying no gradient, or any argument of a function with no rule at all) does so for a reason
the rule declares (an axis, a shape, a boolean mask, a piecewise-constant function), or the
value it feeds never reaches the function's result. Otherwise it raises ``MissingAdjointError``
naming the function, the parameter and the user's line.

This is the one place the decision is made. Rules never decide it for themselves: a rule that
leaves out a parameter has either declared why (``rules.NONDIFF_PARAMS``, ``rule(nondiff=)``) or
gets its active operands refused here. A call none of whose operands is active needs no rule and
runs as a constant.
"""

from __future__ import annotations

import inspect
import operator

from sourcegrad.errors import MissingAdjointError
from sourcegrad.runtime import Context

from . import fence, ir
from . import rules as R
from .ir import ATTRIBUTE_READ

# operations the compiler itself emits as constants (``keys = list(d)`` of a dict loop, the
# context of a custom Function, a no_grad copy, ``x.shape``)
_INTERNAL = (None, list, Context, ATTRIBUTE_READ)


def check(src, irfn, bindings, varied):
    """Refuse the first active operand bound to a parameter that has no adjoint."""
    reaching = _reaching(irfn)
    for s in ir.walk(irfn.body):
        if not isinstance(s, ir.Assign) or s.target not in reaching:
            continue
        for param, names in _unadjointed(s.op, bindings.get(id(s.op))):
            active = [n for n in names if n in varied]
            if active:
                _refuse(src, s, param, active[0])


def _unadjointed(op, binding):
    """(parameter, names) for each parameter of ``op`` with no adjoint and no declared reason."""
    if op.kind == "call" and op.key is operator.getitem and isinstance(op.args[0], ir.Const):
        # indexing a module-level object (np.s_[...], np.ogrid[...]): its "index" is its input
        yield "index", ir.atom_names(op.args[1])
    elif op.kind == "call":
        template = binding.template
        for p in template.signature():
            if p not in binding.diff and R.nondiff_reason(template, p) is None:
                yield p, ir.atom_names(binding.values[p])
    elif op.kind == "nondiff":
        yield from _undeclared(op)


def _undeclared(op):
    key = op.key
    if _is_internal(key) or R.lookup(key) is not None:  # a rule's primitive here is under no_grad
        return
    reason = R.NONDIFF[key] if R.is_nondiff(key) else None
    if isinstance(reason, str):
        return  # no argument of it carries a gradient, for the reason given
    declared = reason or {}
    for name, atoms in _by_parameter(op):
        if name not in declared:
            yield name, [n for a in atoms for n in ir.atom_names(a)]


def _by_parameter(op):
    """(parameter name, atoms) for the operands of ``op``, as the callee binds them."""
    try:
        bound = inspect.signature(op.key).bind(*op.args, **dict(op.kwargs))
    except (TypeError, ValueError):  # no signature (a builtin), or one we cannot bind by
        yield from ((f"argument {i + 1}", [a]) for i, a in enumerate(op.args))
        yield from ((k, [a]) for k, a in op.kwargs)
        return
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            yield name, list(value)
        elif kind == inspect.Parameter.VAR_KEYWORD:
            yield from ((k, [v]) for k, v in value.items())
        else:
            yield name, [value]


def _reaching(irfn):
    """Names whose value can reach the result through any operation (differentiable or not)."""
    stmts = list(ir.walk(irfn.body))
    reach = set()
    for s in stmts:
        if isinstance(s, ir.Return):
            reach.update(ir.atom_names(s.value))
    edges = []
    for s in stmts:
        if isinstance(s, ir.Assign):
            edges.append((s.target, set(s.op.arg_names())))
        elif isinstance(s, ir.SetItem):
            edges.append((s.target, set(ir.atom_names(s.value)) | set(s.index.names())))
        elif isinstance(s, ir.Append):
            edges.append((s.target, set(ir.atom_names(s.value))))
    changed = True
    while changed:
        changed = False
        for target, sources in reversed(edges):
            if target in reach and not sources <= reach:
                reach |= sources
                changed = True
    return reach


def _is_internal(key):
    return any(key is k for k in _INTERNAL)


def _refuse(src, s, param, name):
    callee = s.op.text.split("(")[0] if "(" in s.op.text else s.op.text
    fn = getattr(s.op.key, "__qualname__", None) or getattr(s.op.key, "__name__", None) or callee
    if s.op.kind == "call":
        msg = (
            f"no adjoint for parameter {param!r} of {callee}: the value passed there depends on the "
            f"differentiated input, and the rule carries no gradient through it (in {src.fn.__qualname__})"
        )
        hint = (
            "pass a value that does not depend on the differentiated input, wrap it in "
            "sourcegrad.stop_gradient(...) if no gradient should flow, or register a complete rule "
            f"with @sourcegrad.adjoint({fn})"
        )
    elif R.lookup(s.op.key) is None and not R.is_nondiff(s.op.key):
        fence.missing_adjoint(src, _where(src, s), s.op.key, callee)
    else:
        msg = (
            f"no adjoint for {param!r} of {callee}: the value passed there depends on the "
            f"differentiated input (in {src.fn.__qualname__})"
        )
        hint = "wrap it in sourcegrad.stop_gradient(...) if no gradient should flow through it"
    raise fence.located(MissingAdjointError, src, _where(src, s), msg, hint)


def _where(src, s):
    """Where to point for ``s``: its node (for the column) where it is the compiled function's
    own, else its position (a helper inlined from another function: its own file and line)."""
    return s.node if s.node is not None and src.has_node(s.node) else s.pos
