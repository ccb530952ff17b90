"""The compiler: source -> parse (libcst) -> fence/normalize -> exits -> analyze -> reverse ->
optimize -> emit.

``compile_gradient(fn, wrt, mode)`` is the one entry point; ``_front`` runs the passes both modes
share, in order. Each pass lives in its own module and states what it expects and guarantees.
"""

from __future__ import annotations

import gc
import sys

from sourcegrad.errors import (
    InternalCompilerError,
    MissingAdjointError,
    SourcegradError,
    UnsupportedSyntaxError,
)

from . import (
    aliasing,
    checkpoints,
    exits,
    fence,
    fusion,
    gate,
    ir,
    optimize,
    sequences,
    shapes,
    views,
)
from . import rules as R
from .analyze import Analysis, bind
from .deferral import compile_deferring
from .emit import load, render
from .normalize import Normalizer
from .normalize.aux import AuxNormalizer
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
    examples=None,
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
    differentiated and ``aux`` is returned as computed, with no gradient (``normalize/aux.py``).
    ``meter``: the forward counts what each of its saves keeps (``sourcegrad.memory``).
    ``checkpoint``: True or a number of snapshots: every loop outside other loops keeps snapshots
    of its state instead of a tape, as loops marked ``sourcegrad.checkpointed(range(...))`` do
    without it, and the backward runs its iterations again (``checkpoints.py``,
    ``reverse_checkpointed.py``).
    ``lazy``: the code for lazy arrays (dask): before each data-dependent test it persists the
    values the rest of the computation reads (``runtime/lazy.py``). ``Compiled.tests`` says whether
    the function has such tests at all (without, the lazy code would be the same).
    ``jit``: the variant numba compiles (``sourcegrad.backends``): no ``del``, and the stand-ins
    of ``runtime.jit.STAND_INS`` bound for ``reversed``, ``finalize`` and ``check_scalar``.
    ``examples``: the positional arguments of a call this code is for (the first ones, or None):
    what the compile may decide from what they hold (the class of an object whose method it
    inlines, a function passed in), each decision checked by the result's ``arg_guard``.
    A refusal about code in a branch compiles that branch as the refusal, raised when it runs
    (``deferral.py``)."""
    options = (wrt, mode, check_finite, unroll, signature, has_aux, meter, checkpoint, lazy, jit)
    return compile_deferring(lambda branches: _compile_gradient(fn, branches, examples, *options))


def _compile_gradient(
    fn,
    branches,
    examples,
    wrt,
    mode,
    check_finite,
    unroll,
    signature,
    has_aux,
    meter,
    checkpoint,
    lazy,
    jit,
):
    with _stages(fn) as stage:
        src, normalizer, irfn, analysis = _front(
            stage,
            fn,
            wrt,
            unroll,
            signature,
            AuxNormalizer if has_aux else Normalizer,
            branches,
            mode,
            examples,
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
        # (the numba variant's helpers have numba forms of the calls the reverse pass writes)
        rev = optimize.run(rev, check_finite, None if jit else bind)
        if jit:
            stage.name = "fusion"
            rev = fusion.run(rev, analysis.shapes, normalizer.naming, bind)
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
            scalar_result=_scalar_result(irfn, analysis),
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
        compiled.blind = normalizer.objects.blind
        compiled.tests = any(
            isinstance(s, (ir.If, ir.While, ir.LoopExit)) for s in ir.walk(irfn.body)
        )
        return compiled


def compile_jvp(fn, wrt, unroll=8, tangent_first=False, jit=False, examples=None):
    """Compile ``fn``'s forward mode for the parameters named in ``wrt``: a function of ``fn``'s
    parameters (all by position) followed by one tangent per ``wrt`` parameter, that returns
    ``(value, tangent of the value)`` (``forward.py``), or ``(tangent, value)`` with
    ``tangent_first`` (what ``hvp`` differentiates, with ``has_aux``). Returns an ``emit.Compiled``.
    ``jit``: the variant numba compiles, with the stand-ins of ``runtime.jit.STAND_INS`` bound."""
    return compile_deferring(
        lambda branches: _compile_jvp(fn, branches, wrt, unroll, tangent_first, jit, examples)
    )


def _compile_jvp(fn, branches, wrt, unroll, tangent_first, jit, examples):
    from .forward import forward

    with _stages(fn) as stage:
        src, normalizer, irfn, analysis = _front(
            stage, fn, wrt, unroll, None, Normalizer, branches, examples=examples
        )
        stage.name = "forward"
        fwd = forward(src, irfn, analysis, normalizer.naming, wrt, normalizer.captures.bind)
        fwd.tangent_first = tangent_first
        stage.name = "emit"
        lines = render(
            irfn.name, fwd, "jvp", normalizer.naming, normalizer.captures.bind, irfn.body[-1].pos
        )
        stand_ins = None
        if jit:
            from sourcegrad.runtime.jit import STAND_INS as stand_ins
        return load(
            fn, irfn.qualname, "jvp numba" if jit else "jvp", lines, normalizer.extra_ns, stand_ins
        )


def _front(stage, fn, wrt, unroll, signature, normalizer_class, branches, mode=None, examples=None):
    """The passes both modes share, in order: source, normalize, exits, views, sequences, bind,
    shapes (with a ``signature``), analyze, gate, aliasing. Returns (source, normalizer, IR,
    analysis).
    ``branches``: the branches compiled as refusals (``deferral.py``); ``mode``: the compile's
    (``value_and_grad`` refuses a function returning a tuple literal); ``examples``: the call's
    arguments the compile may decide from (``compile_gradient``)."""
    stage.name = "source"
    src = get_source(fn)
    stage.name = "normalize"
    options = {
        "unroll": unroll,
        "branches": branches,
        "signature": signature,
        "mode": mode,
        "examples": examples,
    }
    normalizer, body = _normalized(normalizer_class, src, options)
    stage.name = "exits"
    body = exits.lower_function(body, normalizer.naming)
    stage.name = "views"
    irfn = normalizer.function(views.rewrite(body, normalizer.params, normalizer.naming))
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


def _normalized(normalizer_class, src, options):
    """(the normalizer, the function's body lowered by it). Lowered twice where the first
    lowering found writes into objects' attributes: the second knows them all from the start, so
    every read of a written attribute reads the value the function wrote (``normalize/objects.py``)."""
    normalizer = normalizer_class(src, options=options)
    body = normalizer.lower()
    for _ in range(3):  # (a lowering that knows more may dispatch to code that writes more)
        again = normalizer.objects.again()
        if again is None:
            break
        normalizer = normalizer_class(src, options={**options, "written": again})
        body = normalizer.lower()
    return normalizer, body


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


def _scalar_result(irfn, analysis):
    """Is the function's result known to have shape ``()`` (a specialized compile)?"""
    result = irfn.body[-1].value
    return (
        analysis.shapes is not None
        and isinstance(result, ir.Name)
        and analysis.shapes.of(result.id) == ()
    )


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
        # the rule ignores it (or must know it now): only a literal can be checked
        if isinstance(v, ir.Name) and (param not in read or param in binding.template.literal):
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
                f"the rule handles {param} in {allowed!r}: pass one of those, or register your own "
                "rule with @sourcegrad.adjoint",
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
