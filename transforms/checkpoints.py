"""Which loops keep snapshots instead of a tape (checkpointing), and with how many.

Expects: a normalized ``ir.Function`` (exits lowered). Guarantees: ``plan`` maps ``id(loop)`` to
the loop's checkpoint (True: the default number of snapshots, or a number) for every loop that is
checkpointed: each loop marked ``for t in sourcegrad.checkpointed(range(...))`` and, with
``grad(f, checkpoint=...)``, each loop outside other loops that runs to its end. A ``for`` loop
follows the binomial schedule (``runtime/revolve.py``), a ``while`` loop keeps periodic snapshots
(``runtime/meter.py``). A marked loop that can leave early, or a checkpointed loop inside
another, is refused at its line.
"""

from __future__ import annotations

from sourcegrad.errors import UnsupportedSyntaxError

from . import ir
from .fence import located


def plan(src, fn, keyword=None):
    """``{id(loop): checkpoint}`` for the loops of ``fn`` that keep snapshots; ``keyword``: the
    ``checkpoint=`` of ``grad`` (None, True or a number of snapshots)."""
    out = {}
    _visit(src, fn.body, keyword, False, None, out)
    return out


def _visit(src, stmts, keyword, in_loop, outer, out):
    """``outer``: the checkpointed loop around ``stmts``, if any."""
    for s in stmts:
        if isinstance(s, ir.If):
            _visit(src, s.body, keyword, in_loop, outer, out)
            _visit(src, s.orelse, keyword, in_loop, outer, out)
        elif isinstance(s, (ir.For, ir.While)):
            mine = _checkpoint_of(src, s, keyword, not in_loop)
            if mine is not None and outer is not None:
                raise located(UnsupportedSyntaxError, src, s.pos,
                              f"a checkpointed loop inside another checkpointed loop (line {outer.pos.line}) "
                              f"is not supported (in {src.fn.__qualname__})",
                              "mark one of the two loops with sourcegrad.checkpointed(...), and leave out "
                              "grad(..., checkpoint=...), which checkpoints every loop outside other loops")
            if mine is not None:
                out[id(s)] = mine
            _visit(src, s.body, keyword, True, s if mine is not None else outer, out)


def _checkpoint_of(src, s, keyword, outermost):
    marked = getattr(s, "checkpoint", None)
    if marked is not None and _exits_early(s):
        raise located(UnsupportedSyntaxError, src, s.pos,
                      f"a checkpointed loop cannot end early (break or return) (in {src.fn.__qualname__})",
                      "remove sourcegrad.checkpointed(...) from this loop, or end it by its range")
    if marked is not None:
        return marked
    if keyword and outermost and not _exits_early(s):
        return keyword
    return None


def _exits_early(loop):
    return any(isinstance(t, ir.LoopExit) for t in loop.body)
