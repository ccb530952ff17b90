"""Analyses over the IR that decide what the backward needs.

- ``bind``: which template parameter each operand of a call fills.
- ``activity``: a variable is *active* when it depends on a ``wrt`` input (varied) and reaches
  the output through differentiable operations (useful). Only active variables get adjoints.
- ``backward_reads``: the variables whose values the backward reads (operands and results that
  the adjoint templates use, indices, branch conditions are taped instead).
- ``saves``: the definitions that overwrite a value the backward reads. Only those values are
  saved (a named variable outside loops, the tape inside them) and restored in the backward.

The analyses are per variable name and flow-insensitive where that is conservative: they may
keep a value that is not needed, never drop one that is.
"""

from __future__ import annotations

import inspect
from functools import cached_property
from dataclasses import dataclass, replace

import numpy as np

from . import dtypes, ir
from . import rules as R
from .ir import Tup
from .templates import Template

_NO_SIG = object()


def _signature(key):
    sig = R.SIGNATURES.get(key)
    if sig is None:
        try:
            sig = inspect.signature(key)
        except (TypeError, ValueError):  # a ufunc before numpy 2.3 has no signature to inspect
            sig = (
                _ufunc_signature(key)
                if isinstance(key, np.ufunc) and key.signature is None
                else _NO_SIG
            )
        R.SIGNATURES[key] = sig
    return sig


def _ufunc_signature(ufunc):
    """The signature numpy 2.3+ gives an elementwise ufunc: operands by position, then options."""
    P = inspect.Parameter
    operands = [
        P(f"x{i + 1}" if ufunc.nin > 1 else "x", P.POSITIONAL_ONLY) for i in range(ufunc.nin)
    ]
    options = [P("out", P.POSITIONAL_OR_KEYWORD, default=None)] + [
        P(name, P.KEYWORD_ONLY, default=default)
        for name, default in (
            ("where", True),
            ("casting", "same_kind"),
            ("order", "K"),
            ("dtype", None),
            ("subok", True),
            ("signature", None),
        )
    ]
    return inspect.Signature(operands + options)


@dataclass(frozen=True, init=False)
class Binding:
    template: object
    values: dict  # template parameter -> atom (Const for defaults)
    diff: tuple  # parameters the template accumulates into, in its order

    def __init__(self, template, values, diff):
        # (a frozen dataclass's own __init__ sets each field through object.__setattr__)
        self.__dict__.update(template=template, values=values, diff=diff)


_TEMPLATE_SIGNATURES = {}


def _template_signature(template):
    sig = _TEMPLATE_SIGNATURES.get(id(template))
    if sig is None or sig[0] is not template:
        params = template.signature()
        sig = (
            template,
            inspect.Signature(
                [
                    inspect.Parameter(
                        p,
                        inspect.Parameter.POSITIONAL_OR_KEYWORD,
                        default=template.defaults.get(p, inspect.Parameter.empty),
                    )
                    for p in params
                ]
            ),
        )
        _TEMPLATE_SIGNATURES[id(template)] = sig
    return sig[1]


def bind(op):
    """Match a call's operands to its template's parameters, or raise ``TypeError``.

    How operands match parameters depends only on the call's form (the function, how many
    operands by position, the keywords' names), so the match found for a form is kept and reused:
    ``inspect``'s binding was a tenth of a compile."""
    template = op.key if isinstance(op.key, Template) else R.lookup(op.key)
    try:
        form = (op.key, len(op.args), tuple(k for k, _ in op.kwargs))
        plan = _PLANS.get(form)
    except TypeError:  # an unhashable key: matched afresh
        return _bind(op, template)
    if plan is None or plan[0] is not template:
        plan = _PLANS[form] = (template, _plan(op, template))
    if plan[1] is None:  # matching depends on the values (a default written out): matched afresh
        return _bind(op, template)
    kwargs = dict(op.kwargs)
    values = {}
    for p, slot in plan[1]:
        if slot is None:
            d = template.defaults[p]
            values[p] = ir.Const(d, repr(d))
        else:
            values[p] = op.args[slot] if type(slot) is int else kwargs[slot]
    return Binding(template, values, _diff(template))


_PLANS = {}  # (function, operands by position, keywords) -> (template, ((parameter, slot), ...) or None)


class _Slot:
    """Stands for an operand while a call's form is matched: its position or its keyword."""

    __slots__ = ("where",)

    def __init__(self, where):
        self.where = where


def _plan(op, template):
    """((parameter, operand position or keyword or None for its default), ...) for the call's
    form, or None when matching needs the operands' values (or fails: ``_bind`` says how)."""
    slots = replace(
        op,
        args=tuple(_Slot(i) for i in range(len(op.args))),
        kwargs=tuple((k, _Slot(k)) for k, _ in op.kwargs),
    )
    try:
        b = _bind(slots, template)
    except TypeError:
        return None
    return tuple((p, v.where if isinstance(v, _Slot) else None) for p, v in b.values.items())


def _diff(template):
    # in the order the template writes them (not a set's, which the hash seed orders): the
    # temporaries named while going through them are then the same in every process (kept on
    # the template, compared and hashed by identity, as ``instantiate`` keeps its choices)
    found = template.__dict__.get("_diff")
    if found is None:
        found = template.__dict__["_diff"] = tuple(
            dict.fromkeys(s.target for s in template.stmts if s.accumulate)
        )
    return found


def _bind(op, template):
    params = template.signature()
    sig = _template_signature(template)
    kwargs = dict(op.kwargs)
    real = _signature(op.key)
    if real is not _NO_SIG and not any(
        p.kind == p.VAR_POSITIONAL for p in real.parameters.values()
    ):
        # bind as numpy does first, so positions mean what they mean to numpy
        kwargs = _by_name(real.bind(*op.args, **kwargs), params)
        bound = sig.bind(**kwargs)
    else:
        bound = sig.bind(*op.args, **kwargs)
    values = {}
    for p in params:
        if p in bound.arguments:
            values[p] = bound.arguments[p]
        else:
            d = template.defaults[p]
            values[p] = ir.Const(d, repr(d))
    return Binding(template, values, _diff(template))


def _by_name(bound_real, params):
    """Arguments bound to the real function's parameters -> the template's parameters.

    Templates name parameters as numpy does. Where a name differs (ufuncs call their operands
    x1, x2; templates call them x, y) an argument passed by position matches the template's
    parameter at that position, unless the real function has a parameter of that name too. An
    argument the rule does not take is accepted only when it has its default value."""
    real_params = bound_real.signature.parameters
    order = list(real_params)
    out = {}
    for name, value in bound_real.arguments.items():
        i = order.index(name)
        kind = real_params[name].kind
        if kind == inspect.Parameter.VAR_KEYWORD:  # np.pad(..., **kwargs)
            for k, v in value.items():
                if k not in params:
                    raise TypeError(f"argument {k!r} is not supported by the adjoint rule")
                out[k] = v
        elif kind == inspect.Parameter.POSITIONAL_ONLY and i < len(params):
            out[params[i]] = value  # math.atan2(y, x, /): only positions mean anything
        elif name in params:
            out[name] = value
        elif i < len(bound_real.args) and i < len(params) and params[i] not in real_params:
            out[params[i]] = value
        elif isinstance(value, ir.Const) and value.value is real_params[name].default:
            continue  # e.g. out=None written out
        else:
            raise TypeError(f"argument {name!r} is not supported by the adjoint rule")
    return out


def diff_operands(op, binding):
    """Names that feed a differentiable parameter of ``op``."""
    if op.kind == "copy":
        return set(_names(op.args[0]))  # a name, or the names in a tuple/list literal
    if op.kind != "call":
        return set()
    out = set()
    for p in binding.diff:
        out.update(_names(binding.values[p]))
    return out


def _names(atom):
    if type(atom) is ir.Name:
        return [atom.id]
    if isinstance(atom, ir.Name):
        return [atom.id]
    if isinstance(atom, Tup):
        return [a.id for a in atom if isinstance(a, ir.Name)]
    return []


def others_scalar(binding, param):
    """Are all operands other than ``param`` Python numbers (so broadcasting kept its shape)?
    Operands without an adjoint broadcast too (``np.where(mask, x, 0.0)``: the mask): any of them
    that is not a constant counts."""
    diff, others = binding.diff, False
    for p, v in binding.values.items():
        if p == param:
            continue
        const = type(v) is ir.Const or isinstance(v, ir.Const)
        if p in diff or not const:
            if not (const and type(v.value) in (int, float)):
                return False
            others = True
    return others


class _Sites(set):
    """A set of names that also remembers which statements read each one."""

    def __init__(self):
        super().__init__()
        self.sites = {}
        self.at = None

    def add(self, name, result=False):
        """``result``: the statement reads the value it defines (not the one it overwrites)."""
        super().add(name)
        self.sites.setdefault(name, []).append((self.at, result))

    def update(self, names):
        for n in names:
            self.add(n)


def _definitions(stmts, around, defs, loops):
    """Into ``defs``: name -> the statements that define it; into ``loops``: id(statement) -> the
    ids of the loops around it (``around`` for ``stmts``)."""
    for s in stmts:
        loops[id(s)] = around
        if isinstance(s, (ir.Assign, ir.SetItem, ir.Append)):
            defs.setdefault(s.target, []).append(s)
        elif isinstance(s, ir.For):
            defs.setdefault(s.target, []).append(s)
        if isinstance(s, ir.If):
            _definitions(s.body, around, defs, loops)
            _definitions(s.orelse, around, defs, loops)
        elif isinstance(s, (ir.For, ir.While)):
            _definitions(s.body, around | {id(s)}, defs, loops)


class Analysis:
    """Runs the analyses once for a function and a set of ``wrt`` parameter names."""

    def __init__(self, fn, wrt, bindings, temps=frozenset(), shapes=None):
        self.fn = fn
        self.wrt = set(wrt)
        self.bindings = bindings  # id(op) -> Binding
        self.shapes = shapes  # a shapes.Shapes when compiling for known argument shapes
        self.stmts = list(ir.walk(fn.body))
        self._active_stmts = {}  # id of an assignment -> (it, is it active?)
        self._plans = {}  # (id of an assignment, parameter) -> (it, its binding, unbroadcast_of's answer)
        self.varied = self._varied()
        self.useful = self._useful()
        self.active = self.varied & self.useful
        self.lazy = self._lazy(temps)
        self.inexact = dtypes.Inexact(fn, wrt, bindings)

    def guarded(self, s):
        """Does the backward of definition ``s`` zero its adjoint when the value it makes has an
        integer or boolean dtype (``dtypes.py``)? Only an active one whose dtype is not known."""
        return self.is_active_stmt(s) and self.inexact.guarded(s)

    def unbroadcast_of(self, stmt, binding, param):
        """How the rule's ``unbroadcast(E, operand)`` for ``param`` of assignment ``stmt`` is
        done: None, at run time; ``()``, not at all; ``(axes, keepdims)``, as a sum over axes
        known now. Not at all when the other operands are Python numbers (broadcasting kept the
        shape), when the operand is a temporary made by a broadcasting rule, which sums the
        adjoint over the extra axes itself (see ``_lazy``), or, for a broadcasting rule, when
        shape inference proves the operand has the shape of the result's adjoint; a known sum
        when it proves the shapes differ by leading axes or by axes of length 1."""
        key = (id(stmt), param)  # asked about each operand by the reads and by the reverse pass
        known = self._plans.get(key)
        if known is None or known[0] is not stmt or known[1] is not binding:
            known = self._plans[key] = (stmt, binding, self._unbroadcast_of(stmt, binding, param))
        return known[2]

    def _unbroadcast_of(self, stmt, binding, param):
        v = binding.values.get(param)
        if others_scalar(binding, param) or (isinstance(v, ir.Name) and v.id in self.lazy):
            return ()
        if self.shapes is None or not binding.template.broadcasting or not isinstance(v, ir.Name):
            return None
        shape, full = self.shapes.of(v.id), self.adjoint_shape(stmt)
        if shape is None or full is None:
            return None
        if shape == full:
            return ()
        lead = len(full) - len(shape)
        if lead > 0 and shape == full[lead:]:
            return tuple(range(lead)), False
        if lead == 0 and all(a == b or a == 1 for a, b in zip(shape, full)):
            return tuple(i for i, (a, b) in enumerate(zip(shape, full)) if a != b), True
        return None

    def adjoint_shape(self, stmt, depth=0):
        """The shape of the adjoint of the value assignment ``stmt`` makes, or None. Rules give
        each operand an adjoint of its own shape, so that is the value's shape, except for a lazy
        temporary (``_lazy``) whose reader drops ``unbroadcast(E, t)``: its adjoint has E's shape,
        which for a broadcasting rule is the shape of the reader's own adjoint."""
        if stmt.target not in self.lazy:
            return self.shapes.made(stmt)
        (reader,) = self._readers[stmt.target]
        if isinstance(reader, ir.Return):
            return self.shapes.made(stmt)  # the seed, or a cotangent of the value's shape
        if not isinstance(reader, ir.Assign) or depth > len(self.stmts):
            return None
        if reader.op.kind == "copy":
            return (
                self.adjoint_shape(reader, depth + 1)
                if reader.op.args == (ir.Name(stmt.target),)
                else None
            )
        b = self.binding(reader.op)
        if b is None:
            return None
        template = self.template(b)
        stripped = any(
            st.accumulate
            and st.outer_unbroadcast
            and stmt.target in _names(b.values.get(st.target))
            for st in template.stmts
        )
        if not stripped:
            return self.shapes.made(stmt)
        return self.adjoint_shape(reader, depth + 1) if template.broadcasting else None

    def template(self, binding):
        """The rule's template, or its variant for the operands' ranks when shapes are known
        (``np.dot`` of two matrices: ``d[z].dot(b.T)``, no rank dispatch at run time)."""
        t = binding.template
        if self.shapes is None or not t.ranks:
            return t
        ranks = tuple(
            self.shapes.rank(v.id) if isinstance(v, ir.Name) else None
            for p, v in binding.values.items()
            if p in binding.diff
        )
        return dict(t.ranks).get(ranks, t)

    def _lazy(self, temps):
        """Temporaries whose adjoint may stay broadcast to a larger shape: defined once, by an
        elementwise broadcasting rule (``a * b``, ``a + b``, ...) that unbroadcasts the adjoint to
        each differentiated operand, and read by one statement only, in the loops around that
        definition. Summing a broadcast adjoint later is the same as summing it now (the chain
        rule is linear), and it saves a call per operation and the temporary's shape. One
        reader, because an exact contribution from a second reader added to a broadcast one
        would be counted once per broadcast copy; the same loops, because an adjoint made
        before a loop to add into in place must have the exact shape."""
        defs, loops = {}, {}
        _definitions(self.fn.body, frozenset(), defs, loops)
        readers = self._readers
        out = set()
        for t in temps & self.active:
            d = defs.get(t, ())
            if (
                len(d) != 1
                or not isinstance(d[0], ir.Assign)
                or d[0].inplace
                or d[0].op.kind != "call"
            ):
                continue
            b = self.binding(d[0].op)
            if b is None or not b.template.broadcasting:
                continue
            if any(others_scalar(b, p) for p in b.diff if set(_names(b.values[p])) & self.active):
                continue  # that operand's unbroadcast is dropped already: the adjoint must be exact
            read = readers.get(t, ())
            if len(read) == 1 and loops[id(read[0])] == loops[id(d[0])]:
                out.add(t)
        return out

    @cached_property
    def _readers(self):
        """name -> every statement that reads it, not only assignments."""
        readers = {}
        for s in self.stmts:
            for n in ir.reads(s):
                readers.setdefault(n, []).append(s)
        return readers

    def binding(self, op):
        return self.bindings.get(id(op))

    @cached_property
    def _edges(self):
        """(target, differentiable source names) for every definition."""
        edges = []
        for s in self.stmts:
            if isinstance(s, ir.Assign):
                edges.append((s.target, diff_operands(s.op, self.binding(s.op))))
            elif isinstance(s, (ir.SetItem, ir.Append)):
                edges.append((s.target, set(_names(s.value)) | {s.target}))
        return edges

    def _varied(self):
        varied = set(self.wrt)
        changed = True
        while changed:
            changed = False
            for target, sources in self._edges:
                if target not in varied and sources & varied:
                    varied.add(target)
                    changed = True
        return varied

    def _useful(self):
        useful = set()
        for s in self.stmts:
            if isinstance(s, ir.Return):
                useful.update(_names(s.value))
        changed = True
        while changed:  # usefulness flows backward: visiting the edges in reverse converges fast
            changed = False
            for target, sources in reversed(self._edges):
                if target in useful and not sources <= useful:
                    useful |= sources
                    changed = True
        return useful

    def is_active_stmt(self, s):
        if isinstance(s, ir.Assign):
            # asked by the reads, the saves and the reverse pass
            known = self._active_stmts.get(id(s))
            if known is None or known[0] is not s:
                active = s.target in self.active and bool(
                    diff_operands(s.op, self.binding(s.op)) & self.active
                )
                known = self._active_stmts[id(s)] = (s, active)
            return known[1]
        if isinstance(s, (ir.SetItem, ir.Append)):
            return s.target in self.active
        return False

    def backward_reads(self):
        """Names whose values some adjoint statement reads (see ``shape_reads`` for the rest)."""
        return self._reads[0]

    def shape_reads(self):
        """Names the backward reads only for their shape and dtype."""
        values, shapes, _ = self._reads
        return shapes - values

    @property
    def read_sites(self):
        """name -> [(a statement whose adjoint reads it, does it read the value it defines?)]."""
        return self._reads[2]

    @cached_property
    def _reads(self):
        """(names the backward reads the values of, names it reads the shapes of, read_sites)."""
        reads, shapes = _Sites(), _Sites()
        for s in self.stmts:
            if not self.is_active_stmt(s):
                continue
            reads.at, shapes.at = s, s
            if self.inexact.guarded(s):
                shapes.add(s.target, result=True)  # inexact_part(g, y): y's dtype
            if isinstance(s, ir.SetItem):
                reads.update(s.index.names())
                shapes.update(_names(s.value))  # unbroadcast(a_bar[i], v)
                continue
            if isinstance(s, ir.Append):
                continue
            if s.op.kind != "call":
                continue
            b = self.binding(s.op)
            active = self.active
            active_params = {p for p in b.diff if not active.isdisjoint(_names(b.values[p]))}
            for st in self.template(b).stmts:
                if st.accumulate and st.target not in active_params:
                    continue
                stripped = (
                    st.accumulate
                    and st.outer_unbroadcast
                    and not st.inner_reads_target
                    and self.unbroadcast_of(s, b, st.target) is not None
                )
                for p in st.reads_values:
                    if stripped and p == st.target:
                        continue  # unbroadcast(g, x) is done without x (unbroadcast_of): x is not read
                    into = shapes if p in st.shape_only else reads
                    if p == b.template.params[0]:
                        into.add(s.target, result=True)
                    else:
                        into.update(ir.atom_names(b.values[p]))
        read_sites = {}
        for sites in (reads, shapes):
            for n, stmts in sites.sites.items():
                read_sites.setdefault(n, []).extend(stmts)
        return set(reads), set(shapes), read_sites
