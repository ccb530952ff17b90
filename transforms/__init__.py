"""The compiler: source -> parse (libcst) -> fence/normalize -> analyze -> reverse -> optimize -> emit.

``compile_gradient(fn, wrt, mode)`` is the one entry point. Each pass lives in its own module and
states what it expects and guarantees.
"""

from __future__ import annotations

import gc
import sys

import libcst as cst

from sourcegrad.errors import (
    InternalCompilerError,
    MissingAdjointError,
    SourcegradError,
    UnsupportedSyntaxError,
    UsageError,
)

from . import aliasing, checkpoints, fence, gate, ir, optimize, sequences, shapes
from . import rules as R
from .analyze import Analysis, bind
from .emit import load, render
from .normalize import Normalizer
from .reverse import reverse
from .source import get_source

__all__ = ["compile_gradient", "compile_jvp"]


def compile_gradient(
    fn,
    wrt,
    mode,
    check_finite=False,
    unroll=8,
    signature=None,
    has_aux=False,
    meter=False,
    checkpoint=None,
    lazy=False,
    jit=False,
):
    """Compile ``fn``'s reverse mode for the parameters named in ``wrt``.

    ``mode`` is ``"value_and_grad"`` (one function: value and gradient) or ``"vjp"`` (returns the
    value and a pullback). ``check_finite`` adds a check after every adjoint update that raises
    ``FloatingPointError`` naming the variable and the user's line where a NaN or inf appears.
    ``unroll``: loops over ``range`` with literal or module-constant bounds and at most this
    many trips are unrolled (0 never unrolls). ``signature``: what is known of the positional
    arguments of the calls this code will serve (an array's shape, ``float`` or ``int`` for a
    Python number, None for anything else); with it, shape inference specializes the backward
    (``shapes.py``), and the caller must use the result only for calls that match it. Returns
    an ``emit.Compiled``. ``has_aux``: ``fn`` returns a pair ``(loss, aux)``; ``loss`` is
    differentiated and ``aux`` is returned as computed, with no gradient (``_AuxNormalizer``).
    ``meter``: the forward counts what each of its saves keeps (``sourcegrad.memory``).
    ``checkpoint``: True or a number of snapshots: every loop outside other loops keeps snapshots
    of its state instead of a tape, as loops marked ``sourcegrad.checkpointed(range(...))`` do
    without it, and the backward runs its iterations again (``checkpoints.py``, ``reverse.py``).
    ``lazy``: the code for lazy arrays (dask): before each data-dependent test it persists the
    values the rest of the computation reads (``runtime/lazy.py``). ``Compiled.tests`` says whether
    the function has such tests at all (without, the lazy code would be the same).
    ``jit``: the variant numba compiles (``sourcegrad.backends``): no ``del``, and the stand-ins
    of ``runtime.jit.STAND_INS`` bound for ``reversed``, ``finalize`` and ``check_scalar``."""
    with _stages(fn) as stage:
        src, normalizer, irfn, analysis = _front(
            stage, fn, wrt, unroll, signature, _AuxNormalizer if has_aux else Normalizer
        )
        bind = normalizer.captures.bind
        stage.name = "checkpoints"
        kept = checkpoints.plan(src, irfn, analysis, checkpoint)
        stage.name = "reverse"
        rev = reverse(
            irfn,
            analysis,
            normalizer.naming,
            wrt,
            bind,
            check_finite,
            meter,
            kept,
            lazy,
            seed_one=mode == "value_and_grad",
            jit=jit,
        )
        stage.name = "optimize"
        rev = optimize.run(rev, check_finite)
        stage.name = "emit"
        lines = render(
            irfn.name,
            rev,
            mode,
            normalizer.naming,
            bind,
            irfn.body[-1].pos,
            aux=getattr(normalizer, "aux_var", None),
            signature=_header(fn, irfn.params),
            releases=not jit,
        )
        stand_ins = None
        if jit:
            from sourcegrad.runtime.jit import STAND_INS as stand_ins
        compiled = load(
            fn,
            irfn.qualname,
            mode + (" numba" if jit else ""),
            lines,
            normalizer.extra_ns,
            stand_ins,
        )
        compiled.sites = rev.sites
        compiled.tests = any(
            isinstance(s, (ir.If, ir.While, ir.LoopExit)) for s in ir.walk(irfn.body)
        )
        return compiled


def compile_jvp(fn, wrt, unroll=8, tangent_first=False):
    """Compile ``fn``'s forward mode for the parameters named in ``wrt``: a function of ``fn``'s
    parameters (all by position) followed by one tangent per ``wrt`` parameter, that returns
    ``(value, tangent of the value)`` (``forward.py``), or ``(tangent, value)`` with
    ``tangent_first`` (what ``hvp`` differentiates, with ``has_aux``). Returns an ``emit.Compiled``."""
    from .forward import forward

    with _stages(fn) as stage:
        src, normalizer, irfn, analysis = _front(stage, fn, wrt, unroll, None, Normalizer)
        stage.name = "forward"
        fwd = forward(src, irfn, analysis, normalizer.naming, wrt, normalizer.captures.bind)
        fwd.tangent_first = tangent_first
        stage.name = "emit"
        lines = render(
            irfn.name, fwd, "jvp", normalizer.naming, normalizer.captures.bind, irfn.body[-1].pos
        )
        return load(fn, irfn.qualname, "jvp", lines, normalizer.extra_ns)


def _front(stage, fn, wrt, unroll, signature, normalizer_class):
    """The passes both modes share, in order: source, normalize, sequences, bind, shapes (with a
    ``signature``), analyze, gate, aliasing. Returns (source, normalizer, IR, analysis)."""
    stage.name = "source"
    src = get_source(fn)
    stage.name = "normalize"
    normalizer = normalizer_class(src, options={"unroll": unroll})
    irfn = normalizer.run()
    stage.name = "sequences"
    sequences.rewrite(src, irfn, normalizer.naming, signature)
    stage.name = "bind"
    bindings = _bind_all(src, irfn)
    stage.name = "shapes"
    known = None
    if signature is not None:
        described = dict.fromkeys(irfn.params, shapes.TOP)
        described.update((p, shapes.describe(k)) for p, k in zip(irfn.params, signature))
        known = shapes.Shapes(irfn, bindings, described)
    stage.name = "analyze"
    analysis = Analysis(irfn, wrt, bindings, normalizer.naming.temps, known)
    stage.name = "gate"
    gate.check(src, irfn, bindings, analysis.varied)
    stage.name = "aliasing"
    aliasing.check(irfn, src, normalizer.naming, analysis.varied)
    return src, normalizer, irfn, analysis


class _stages:
    """The stage a compile is in (``stage.name``): an exception that is not a ``SourcegradError``
    is our own bug and becomes an ``InternalCompilerError`` naming the stage and the function.
    The garbage collector pauses meanwhile: a compile makes many small objects and no cycles
    worth a collection (on a 1,600-line function collections took a third of the time)."""

    def __init__(self, fn):
        self.fn = fn
        self.name = "source"

    def __enter__(self):
        self.collecting = gc.isenabled()
        gc.disable()
        # the passes recurse on nesting: a sum of 400 terms nests 400 deep
        self.limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(self.limit, 20_000))
        return self

    def __exit__(self, kind, e, tb):
        sys.setrecursionlimit(self.limit)
        if self.collecting:
            gc.enable()
        if e is None or isinstance(e, SourcegradError) or not isinstance(e, Exception):
            return False
        raise InternalCompilerError(
            f"{kind.__name__}: {e}", self.name, getattr(self.fn, "__qualname__", repr(self.fn))
        ) from e


def _header(fn, params):
    """The generated function's parameter list as its header writes it: ``fn``'s keyword-only
    parameters after a ``*``, as in ``fn``'s own header (the API passes them by keyword)."""
    code = getattr(fn, "__code__", None)
    if code is None or not code.co_kwonlyargcount:
        return ", ".join(params)
    return ", ".join([*params[: code.co_argcount], "*", *params[code.co_argcount :]])


def _check_only(src, s, binding):
    """Refuse a literal argument value the rule does not handle (np.pad(mode="mean"))."""
    if not binding.template.only:
        return
    read = set().union(*(st.reads_values for st in binding.template.stmts))
    for param, allowed in binding.template.only:
        v = binding.values.get(param)
        # the rule ignores it: only a literal can be checked
        if isinstance(v, ir.Name) and param not in read:
            callee = s.op.text.split("(")[0]
            raise fence.located(
                MissingAdjointError,
                src,
                s.node if s.node is not None else s.pos,
                f"no adjoint rule for {callee} with {param} given by a variable (in {src.fn.__qualname__})",
                f"the rule handles {param} in {allowed!r} only; pass it as a literal, or register your own "
                "rule with @sourcegrad.adjoint",
            )
        if isinstance(v, ir.Const) and v.value not in allowed:
            callee = s.op.text.split("(")[0]
            raise fence.located(
                MissingAdjointError,
                src,
                s.node if s.node is not None else s.pos,
                f"no adjoint rule for {callee} with {param}={v.value!r} (in {src.fn.__qualname__})",
                f"the rule handles {param} in {allowed!r}; register your own with @sourcegrad.adjoint",
            )


def _bind_all(src, irfn):
    out = {}
    for s in ir.walk(irfn.body):
        if isinstance(s, ir.Assign) and s.op.kind == "call":
            try:
                out[id(s.op)] = b = bind(s.op)
                _check_only(src, s, b)
            except TypeError as e:
                callee = s.op.text.split("(")[0]
                template = (
                    s.op.key
                    if not hasattr(s.op.key, "__name__") and hasattr(s.op.key, "params")
                    else R.lookup(s.op.key)
                )
                takes = ", ".join(template.signature()) if template is not None else "?"
                raise fence.located(
                    UnsupportedSyntaxError,
                    src,
                    s.node if s.node is not None else s.pos,
                    f"cannot differentiate {callee}(...) called this way: {e} (in {irfn.qualname})",
                    f"sourcegrad's adjoint rule for {callee} takes ({takes}); call it in that form, "
                    "or register your own rule with @sourcegrad.adjoint",
                ) from None
    return out


class _AuxNormalizer(Normalizer):
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

    def _inline_call(self, node, child, signature, callee, args, kwargs):
        if node is not None and node is self._aux_call:
            # the helper's returns give (loss, aux): it is lowered as this class, sharing aux
            child.__class__ = _AuxNormalizer
            child.aux_var, child.aux_of = self.aux_var, self.aux_of
            self._aux_inlined = True
        return super()._inline_call(node, child, signature, callee, args, kwargs)


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
