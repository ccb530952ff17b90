"""Which loops keep snapshots instead of a tape (checkpointing), and with how many.

Expects: a normalized ``ir.Function`` (exits lowered). Guarantees: ``plan`` maps ``id(loop)`` to
the loop's checkpoint (True: the default number of snapshots, or a number) for every loop that is
checkpointed: each loop marked ``for t in sourcegrad.checkpointed(range(...))`` and, with
``grad(f, checkpoint=...)``, each loop outside other loops that runs to its end. A ``for`` loop
follows the binomial schedule (``runtime/revolve.py``), a ``while`` loop keeps periodic snapshots
(``runtime/meter.py``). A marked loop that can leave early, a checkpointed loop inside another,
and a checkpointed loop that calls what may not give the same result when the backward runs it
again (random numbers, clocks, iterators: anything but the numerical libraries' functions) are
refused at their line.
"""

from __future__ import annotations

import builtins
import types

from sourcegrad.errors import UnsupportedSyntaxError

from . import ir
from .fence import located


def plan(src, fn, analysis, keyword=None):
    """``{id(loop): checkpoint}`` for the loops of ``fn`` that keep snapshots; ``keyword``: the
    ``checkpoint=`` of ``grad`` (None, True or a number of snapshots). A loop with nothing to
    differentiate keeps nothing either way, and is left alone."""
    out = {}
    _visit(src, analysis, fn.body, keyword, False, None, out)
    return out


def _visit(src, analysis, stmts, keyword, in_loop, outer, out):
    """``outer``: the checkpointed loop around ``stmts``, if any."""
    for s in stmts:
        if isinstance(s, ir.If):
            _visit(src, analysis, s.body, keyword, in_loop, outer, out)
            _visit(src, analysis, s.orelse, keyword, in_loop, outer, out)
        elif isinstance(s, (ir.For, ir.While)):
            mine = _checkpoint_of(src, s, keyword, not in_loop)
            if not any(analysis.is_active_stmt(t) for t in ir.walk(s.body)):
                mine = None
            if mine is not None and outer is not None:
                raise located(
                    UnsupportedSyntaxError,
                    src,
                    s.pos,
                    f"a checkpointed loop inside another checkpointed loop (line {outer.pos.line}) "
                    f"is not supported (in {src.fn.__qualname__})",
                    "mark one of the two loops with sourcegrad.checkpointed(...), and leave out "
                    "grad(..., checkpoint=...), which checkpoints every loop outside other loops",
                )
            if mine is not None:
                _check_repeatable(src, s)
                _check_no_object_writes(src, s)
                out[id(s)] = mine
            _visit(src, analysis, s.body, keyword, True, s if mine is not None else outer, out)


def _checkpoint_of(src, s, keyword, outermost):
    marked = getattr(s, "checkpoint", None)
    if marked is not None and _exits_early(s):
        raise located(
            UnsupportedSyntaxError,
            src,
            s.pos,
            f"a checkpointed loop cannot end early (break or return) (in {src.fn.__qualname__})",
            "remove sourcegrad.checkpointed(...) from this loop, or end it by its range",
        )
    if marked is not None:
        return marked
    if keyword and outermost and not _exits_early(s):
        return keyword
    return None


def _exits_early(loop):
    return any(isinstance(t, ir.LoopExit) for t in loop.body)


# Where the functions a checkpointed loop may call without a rule come from: run again on the
# same values, they give the same result. numpy.random, the standard library's random, time and
# the like, methods of the user's objects, and these builtins may not.
_REPEATABLE_MODULES = (
    "numpy",
    "math",
    "operator",
    "_operator",
    "builtins",
    "sourcegrad",
    "scipy.special",
    "scipy.linalg",
    "scipy.signal",
    "scipy.ndimage",
)
_NOT_REPEATABLE = ("numpy.random",)
_NOT_REPEATABLE_BUILTINS = {
    builtins.next,
    builtins.iter,
    builtins.input,
    builtins.open,
    builtins.id,
}


def _check_repeatable(src, loop):
    """The backward runs a checkpointed loop's iterations again: refuse a call whose result may
    differ the second time."""
    for s in ir.walk(loop.body):
        if isinstance(s, ir.Assign) and s.op.kind == "nondiff" and not repeatable(s.op.key):
            raise located(
                UnsupportedSyntaxError,
                src,
                s.pos,
                f"{s.op.text.split('(')[0]} in a checkpointed loop: the backward runs the loop's "
                f"iterations again, and this call may not give the same result twice "
                f"(in {src.fn.__qualname__})",
                "draw random numbers (or read clocks, files, iterators) before the loop, into an "
                "array the loop indexes, or do not checkpoint this loop",
            )


def _check_no_object_writes(src, loop):
    """The backward runs a checkpointed loop's iterations again: refuse a write into an object's
    attribute there (``normalize/objects.py``), which would be made again, the object left as
    the iterations run again leave it."""
    for s in ir.walk(loop.body):
        if (isinstance(s, ir.Effect) and isinstance(s.text, ir.ObjectWrite)) or (
            isinstance(s, ir.Append) and s.target in ir.shadows_of(src)
        ):
            raise located(
                UnsupportedSyntaxError,
                src,
                s.pos,
                f"a write into an object's attribute in a checkpointed loop: the backward runs the "
                f"loop's iterations again, and would write again (in {src.fn.__qualname__})",
                "keep the values in local variables in the loop and write the attribute after it, "
                "or do not checkpoint this loop",
            )


def _module_of(key):
    """The module ``key`` comes from. A method written in C has no ``__module__`` of its own
    (``random.random`` is a method of a hidden ``random.Random``): its object's class says."""
    module = ir.module_of(key)
    if module:
        return module
    owner = getattr(key, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType):
        return ir.module_of(type(owner))
    return ir.module_of(type(key))


def repeatable(key):
    """Does a call of ``key`` with the same arguments give the same result again?"""
    if key is None or (isinstance(key, type) and key.__module__ == "builtins"):
        return True  # a copy; int(...), float(...), tuple(...)
    try:
        if key in _NOT_REPEATABLE_BUILTINS:
            return False
    except TypeError:  # unhashable
        return False
    module = _module_of(key)
    if module.startswith(_NOT_REPEATABLE):
        return False
    return any(module == m or module.startswith(m + ".") for m in _REPEATABLE_MODULES)
