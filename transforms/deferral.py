"""Refusals on paths a call may not take: a branch whose code cannot be compiled is compiled as
that refusal, raised when the branch runs.

Expects: the normalizer tells ``Branches`` which ``if`` branch (or arm of a conditional
expression) it is lowering (``enter``/``leave``) and which statements it emits inside one
(``emitted``); every refusal made at a place in the user's code says where (``fence.located``).
Guarantees: ``compile_deferring`` runs a compile; when a refusal (a construct sourcegrad does not
compile, a missing rule, a helper with no source) is about code inside a branch, the compile runs
again with that branch lowered as ``raise <the refusal>`` (``refusal_text``), and so on for each
such branch. The program is then exactly the user's on every path that does not enter a
deferred branch, and raises the refusal, located at the user's line, on every path that does:
code on a path the call never takes (plotting under ``if ax is not None:``, ``if verbose:``
diagnostics) no longer blocks the function, and no path that runs is dropped. A refusal outside
every branch, one the recursion check marks ``final`` (a recursion of unknown depth), and the
same refusal again are raised as before. Branches whose condition is known when compiling
(``normalize/static.py``) are decided there instead: only the taken one is compiled.
"""

from __future__ import annotations

from sourcegrad.errors import (
    LocatedError,
    MissingAdjointError,
    NoSourceError,
    UnsupportedSyntaxError,
)

from . import ir

DEFERRABLE = (UnsupportedSyntaxError, MissingAdjointError, NoSourceError)
MAX_DEFERRED = 64

_NOTE = (
    "sourcegrad compiled the function with this branch as this refusal, since a call may not "
    "take it; this call took it"
)


class Branches:
    """The branches a compile is lowering, and the refusals it lowers instead of some."""

    def __init__(self, deferred=None):
        self.deferred = {} if deferred is None else deferred  # branch key -> refusal
        self.stack = []  # the keys of the branches being lowered, outermost first
        self.inside = {}  # id of a node, or a position, emitted in branches -> their keys

    @staticmethod
    def key(node, which):
        """The key of a branch: the ``if`` (or conditional expression) node and which arm."""
        return (id(node), which)

    def enter(self, key):
        self.stack.append(key)

    def leave(self):
        self.stack.pop()

    def emitted(self, stmt):
        """``stmt`` was emitted inside the branches being lowered (called only inside one)."""
        where = tuple(self.stack)
        node = getattr(stmt, "node", None)
        if node is not None:
            self.inside.setdefault(id(node), where)
        pos = getattr(stmt, "pos", None)
        if pos is not None:
            self.inside.setdefault((pos.filename, pos.line, pos.col), where)

    def branch_of(self, error):
        """The innermost branch ``error`` is about, or None (it is about code in no branch)."""
        tagged = getattr(error, "branch", None)
        if tagged is not None:  # raised while the branch was being lowered
            return tagged
        where = getattr(error, "where", None)
        if where is None:
            return None
        if isinstance(where, ir.Pos):
            keys = self.inside.get((where.filename, where.line, where.col))
        else:
            keys = self.inside.get(id(where))
        return keys[-1] if keys else None


def compile_deferring(compile_once):
    """``compile_once(branches)``, run again with each branch a refusal is about deferred."""
    deferred = {}
    while True:
        branches = Branches(deferred)
        try:
            return compile_once(branches)
        except DEFERRABLE as e:
            key = branches.branch_of(e)
            if (
                key is None
                or key in deferred
                or getattr(e, "final", False)
                or len(deferred) >= MAX_DEFERRED
            ):
                raise
            deferred[key] = e


def refusal(error):
    """A function of no arguments that makes a fresh copy of the refusal ``error``, with a note
    that the branch it is about ran (what a deferred branch raises)."""
    if isinstance(error, LocatedError):

        def refused():
            hint = f"{error.hint}\n{_NOTE}" if error.hint else _NOTE
            return type(error)(
                error.message, error.filename, error.lineno, error.offset, error.text, hint
            )

    else:

        def refused():
            return type(error)(f"{error}\n{_NOTE}")

    refused.__name__ = refused.__qualname__ = "refused"
    return refused


__all__ = ["Branches", "compile_deferring", "refusal", "DEFERRABLE"]
