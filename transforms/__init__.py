"""The compiler: source -> parse (libcst) -> fence/normalize -> analyze -> reverse -> emit.

``compile_gradient(fn, wrt, mode)`` is the one entry point. Each pass lives in its own module and
states what it expects and guarantees.
"""

from __future__ import annotations

import libcst as cst

from sourcegrad.errors import (InternalCompilerError, MissingAdjointError, SourcegradError, UnsupportedSyntaxError,
                               UsageError)

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


def compile_gradient(fn, wrt, mode, check_finite=False, unroll=8, signature=None, has_aux=False):
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
    differentiated and ``aux`` is returned as computed, with no gradient (``_AuxNormalizer``)."""
    stage = "source"
    try:
        src = get_source(fn)
        stage = "normalize"
        normalizer = (_AuxNormalizer if has_aux else Normalizer)(src, options={"unroll": unroll})
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
        aux = getattr(normalizer, "aux_var", None)
        lines = render(irfn.name, irfn.params, rev, fwd, bwd, outputs, mode, result, src.filename, irfn.body[-1].pos,
                       aux=aux)
        names = {n: R.NAMESPACE[n] for n in set(rev.free) | {"check_scalar", "copy_value"}}
        if has_aux:
            names["check_aux_pair"] = check_aux_pair
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


class _AuxNormalizer(Normalizer):
    """For ``grad(f, has_aux=True)``: each ``return loss, aux`` of ``f`` itself (not of the
    functions it calls) becomes ``aux = <aux>`` followed by ``return loss``, so the one value
    reversed is the loss, and ``aux`` (one variable, bound on every path) reaches no output: the
    analysis gives it no adjoint. A return of a variable holding the pair is checked to be a pair
    when it runs, then read by index."""

    aux_var = None

    def _small_Return(self, s):
        if s.value is None or self.parent is not None:
            return super()._small_Return(s)
        pos = self._pos(s)
        if self.aux_var is None:
            self.aux_var = self.naming.unique("aux")
        value = s.value
        if isinstance(value, cst.Tuple):
            elements = value.elements
            if len(elements) != 2 or any(isinstance(e, cst.StarredElement) for e in elements):
                raise fence.located(
                    UnsupportedSyntaxError, self.src, s,
                    f"{self.fn.__qualname__} is differentiated with has_aux=True, so it must return a pair "
                    f"(loss, aux), but this return gives {len(elements)} values",
                    "return (loss, aux): put the other values in aux, e.g. return loss, (a, b)")
            loss = self._atom(elements[0].value)
            self._assign_expr(self.aux_var, elements[1].value, pos)
            self._emit(ir.Return(loss, pos))
            return
        r = self._atom(value)
        if not isinstance(r, ir.Name):
            raise fence.located(
                UnsupportedSyntaxError, self.src, s,
                f"{self.fn.__qualname__} is differentiated with has_aux=True, so it must return a pair "
                "(loss, aux), not a single value", "return loss, aux")
        self._emit(ir.Effect(f"check_aux_pair({r.id}, {self.fn.__qualname__!r})", pos))
        loss = self.naming.unique("loss")
        self._emit(ir.Assign(loss, self._getitem_op(r, ir.Index((ir.Const(0, "0"),), False)), pos))
        self._emit(ir.Assign(self.aux_var, self._getitem_op(r, ir.Index((ir.Const(1, "1"),), False)), pos))
        self._emit(ir.Return(ir.Name(loss), pos))


def check_aux_pair(value, name):
    """``has_aux=True``: the function's value must be a pair ``(loss, aux)``."""
    if not isinstance(value, tuple) or len(value) != 2:
        what = f"a tuple of {len(value)} values" if isinstance(value, tuple) else f"a {type(value).__name__}"
        raise UsageError(f"{name} is differentiated with has_aux=True, so it must return a pair (loss, aux), "
                         f"but it returned {what}")
