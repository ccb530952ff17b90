"""A generator of the user's consumed by a ``for`` loop, inlined as the loop it is.

Expects: the walk of ``anf``, loops (``loops``) and inlining (``inline``). Guarantees: ``for xb
in batches(X, 32): body`` where ``batches`` is the user's generator function (module-level, or a
def written in the function) lowers ``batches``'s body in place, its arguments bound as a call's
are, and each ``yield v`` in it as ``xb = v`` followed by ``body``: what Python runs, in the order
it runs it. The generator's locals are its own (renamed), the loop's body reads and writes the
caller's. Refused where written: ``break`` or ``continue`` of such a loop (they would stop or
skip the generator's own loop, not the consumer's), ``for``/``else``, ``return`` in the
generator, ``yield from`` and ``yield`` anywhere but as a statement of the generator.
"""

from __future__ import annotations

import ast
import inspect

import libcst as cst

from .. import fence, ir
from .calls import _is_users


class Generators:
    """The methods of the ``Normalizer`` for generators consumed by ``for`` loops."""

    def _generator_of(self, it):
        """(the generator function, or the name of a local generator def) that ``it``, a loop's
        iterable, calls; None for anything else."""
        if type(it) is not cst.Call or not isinstance(it.func, (cst.Name, cst.Attribute)):
            return None
        func = it.func
        if type(func) is cst.Name and func.value in self.local_defs:
            afn = self.local_defs[func.value][1]
            return func.value if _yields(afn) else None
        if self._is_local_expr(func):
            return None
        callee = self._static_callee(func)
        if inspect.isgeneratorfunction(callee) and _is_users(callee):
            return callee
        return None

    def _generator_loop(self, s, generator):
        """``for target in generator(...)``: the generator's body, each ``yield`` the loop body."""
        if s.orelse is not None:
            fence.refuse(
                self.src,
                s.orelse,
                msg="for/else is not supported",
                hint="use a flag variable and an if after the loop",
            )
        exit_node = _own_exit(s.body)
        if exit_node is not None:
            fence.refuse(
                self.src,
                exit_node,
                msg="break and continue of a loop over a generator are not supported: the "
                "generator is inlined, and they would leave or skip its own loop",
                hint="collect the values first (xs = list(gen(...))) and loop over the list, "
                "or test a flag in the loop's body",
            )
        args, kwargs = self._call_args(s.iter)

        def lower(child):
            child._yield_sink = lambda value, at: self._yielded(s, child, value, at)
            body = child._block(child.src.tree.body)
            self.block.extend(body)
            return ir.Const(None, "None")

        if isinstance(generator, str):
            self._call_local_def(s.iter, generator, args, kwargs, lower=lower)
        else:
            self._inline(s.iter, generator, args, kwargs, lower=lower)
        self._pos(s)  # (the statements after the loop are at their own lines)

    def _yielded(self, s, child, value, pos):
        """``yield value`` in the generator ``child`` consumed by loop ``s``: the loop's target
        bound to ``value``, then its body, lowered by this (the consumer's) normalizer into the
        generator's current block."""
        saved = self.block
        self.block = child.block
        try:
            with self._in_loop():
                self._bind_value(s.target, self._copy_op(value), pos)
                for stmt in s.body.body:
                    self._stmt(stmt)
        finally:
            self.block = saved

    def _small_yield(self, s, v):
        """``yield v`` as a statement: the consumer's loop body, when a loop consumes this
        generator; refused otherwise."""
        sink = self._yield_sink
        if sink is None or isinstance(v.value, cst.From):
            fence.refuse(self.src, v)
        value = self._atom(v.value) if v.value is not None else ir.Const(None, "None")
        sink(value, self._pos(s))


def _yields(afn):
    """Does the ``ast`` function ``afn`` itself (not a def nested in it) yield?"""
    stack = list(afn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _own_exit(body):
    """The first ``break`` or ``continue`` of the loop whose body is ``body`` (not of a loop or
    def nested in it), or None."""
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Break, cst.Continue)):
            return node
        if node is not body and isinstance(node, (cst.For, cst.While, cst.FunctionDef, cst.Lambda)):
            continue
        stack.extend(reversed(node.children))
    return None


__all__ = ["Generators"]
