"""The compiler: source -> parse (libcst) -> fence/normalize -> analyze -> reverse -> emit.

``compile_gradient(fn, wrt, mode)`` is the one entry point. Each pass lives in its own module and
states what it expects and guarantees.
"""

from __future__ import annotations

from sourcegrad.errors import InternalCompilerError, MissingAdjointError, SourcegradError, UnsupportedSyntaxError

from . import aliasing, fence, gate, ir, sequences, shapes
from . import rules as R
from .analyze import Analysis, bind
from .emit import load, render
from .normalize import Normalizer
from .reverse import Reverser, propagate_copies, release_dead
from .source import get_source

__all__ = ["compile_gradient", "parameters_of"]


def parameters_of(fn):
    """The parameter names of ``fn`` as the compiler sees them (lambdas included)."""
    code = fn.__code__
    return list(code.co_varnames[: code.co_argcount])


def compile_gradient(fn, wrt, mode, check_finite=False, unroll=8, signature=None):
    """Compile ``fn``'s reverse mode for the parameters named in ``wrt``.

    ``mode`` is ``"value_and_grad"`` (one function: value and gradient) or ``"vjp"`` (returns the
    value and a pullback). ``check_finite`` adds a check after every adjoint update that raises
    ``FloatingPointError`` naming the variable and the user's line where a NaN or inf appears.
    ``unroll``: loops over ``range`` with literal or module-constant bounds and at most this
    many trips are unrolled (0 never unrolls). ``signature``: what is known of the positional
    arguments of the calls this code will serve (an array's shape, ``float`` or ``int`` for a
    Python number, None for anything else); with it, shape inference specializes the backward
    (``shapes.py``), and the caller must use the result only for calls that match it. Returns
    an ``emit.Compiled``."""
    stage = "source"
    try:
        src = get_source(fn)
        stage = "normalize"
        normalizer = Normalizer(src, options={"unroll": unroll})
        irfn = normalizer.run()
        stage = "sequences"
        sequences.rewrite(src, irfn, normalizer.naming)
        stage = "bind"
        bindings = _bind_all(src, irfn)
        stage = "shapes"
        known = None
        if signature is not None:
            described = dict.fromkeys(irfn.params, shapes.TOP)
            described.update((p, shapes.describe(k)) for p, k in zip(irfn.params, signature))
            known = shapes.Shapes(irfn, bindings, described)
        stage = "analyze"
        analysis = Analysis(irfn, wrt, bindings, normalizer.naming.temps, known)
        stage = "gate"
        gate.check(src, irfn, bindings, analysis.varied)
        stage = "aliasing"
        aliasing.check(irfn, src, normalizer.naming, analysis.varied)
        stage = "reverse"
        rev = Reverser(irfn, analysis, normalizer.naming, wrt, check_finite)
        rev.plan()
        fwd = rev.forward()
        result = irfn.body[-1].value
        rev.seed_name = (
            normalizer.naming.adjoint(result.id)
            if isinstance(result, ir.Name) and result.id in analysis.active else None
        )
        rev.mutates = any(isinstance(s, ir.SetItem) for s in ir.walk(irfn.body))
        bwd, outputs = rev.backward(rev.seed_name, result)
        if not check_finite:  # its checks name each adjoint
            bwd = propagate_copies(bwd, outputs)
        bwd = release_dead(bwd, fwd, outputs, irfn.params)
        stage = "emit"
        lines = render(irfn.name, irfn.params, rev, fwd, bwd, outputs, mode, result, src.filename, irfn.body[-1].pos)
        names = {n: R.NAMESPACE[n] for n in set(rev.free) | {"check_scalar", "copy_value"}}
        names.update(rev.free_objects)
        names.update(normalizer.extra_ns)
        emitted_locals = {normalizer.rename.get(n, n) for n in normalizer.locals}
        return load(fn, irfn.qualname, mode, lines, names, emitted_locals)
    except SourcegradError:
        raise
    except Exception as e:  # our own bug: say so, with the pass and the function
        raise InternalCompilerError(f"{type(e).__name__}: {e}", stage, getattr(fn, "__qualname__", repr(fn))) from e


def _check_only(src, s, binding):
    """Refuse a literal argument value the rule does not handle (np.pad(mode="mean"))."""
    read = set().union(*(st.reads_values for st in binding.template.stmts))
    for param, allowed in binding.template.only:
        v = binding.values.get(param)
        if isinstance(v, ir.Name) and param not in read:  # the rule ignores it: only a literal can be checked
            callee = s.op.text.split("(")[0]
            raise fence.located(
                MissingAdjointError, src, s.node if s.node is not None else s.pos,
                f"no adjoint rule for {callee} with {param} given by a variable (in {src.fn.__qualname__})",
                f"the rule handles {param} in {allowed!r} only; pass it as a literal, or register your own "
                "rule with @sourcegrad.adjoint",
            )
        if isinstance(v, ir.Const) and v.value not in allowed:
            callee = s.op.text.split("(")[0]
            raise fence.located(
                MissingAdjointError, src, s.node if s.node is not None else s.pos,
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
                template = s.op.key if not hasattr(s.op.key, "__name__") and hasattr(s.op.key, "params") else R.lookup(s.op.key)
                takes = ", ".join(template.signature()) if template is not None else "?"
                raise fence.located(
                    UnsupportedSyntaxError, src, s.node if s.node is not None else s.pos,
                    f"cannot differentiate {callee}(...) called this way: {e} (in {irfn.qualname})",
                    f"sourcegrad's adjoint rule for {callee} takes ({takes}); call it in that form, "
                    "or register your own rule with @sourcegrad.adjoint",
                ) from None
    return out
