"""``try``/``except``/``else``/``finally``: the path Python takes, chosen as a branch.

Expects: the walk of ``anf`` and its state. Guarantees: ``try`` becomes

    _path, _exc = attempt(<the try body, compiled as written>, <function>, locals(), E1, E2, ...)
    if _path == 0:   <the try body>; <else>      (the try body runs again, as compiled code)
    elif _path == 1: <handler 1>                   (``as e`` binds ``_exc``)
    ...
    <finally>

``attempt`` (``runtime/attempts.py``) runs the try body once as Python runs it, binding nothing,
and says which handler catches what it raises (an exception no handler matches propagates, as
from the try statement). The path taken is then an ``if``/``elif`` on the tape like any branch,
so the backward retraces exactly it. That is Python's behaviour, and the gradient of the path
that ran, where:

- the try body gives the same result when it runs again: it makes no call that may not (random
  draws, clocks, files, iterators: ``checkpoints.repeatable``), changes nothing in place
  (``a[i] = v``, ``x += v``, ``xs.append``), prints nothing and does not leave the statement
  (``return``, ``break``, ``continue``);
- a name the try body binds is bound by every handler before the handler reads it (or the
  handler raises): when the try body raises part way, the names it bound before the raise keep
  their new values in Python, and here they are as before the try.

Anything else is refused at its line. The try body runs twice when it raises nothing; a
``finally`` block runs when the statement completes (not when an exception leaves it).
"""

from __future__ import annotations

import ast

import libcst as cst

from sourcegrad.runtime.attempts import attempt

from .. import fence, ir
from ..checkpoints import repeatable
from .syntax import Renamer, find_name, find_node, names_read, target_names


# what a try body's lowered code may run for no value: checks, which only raise, and the
# managers of a with block (the try body's own, run as Python runs them)
_REPEATABLE_EFFECTS = (
    "assert ",
    "raise ",
    "check_sequence(",
    "check_unpack(",
    "enter_context(",
    "exit_context(",
)


class Attempts:
    """The ``try`` method of the ``Normalizer``."""

    def _stmt_Try(self, s):
        pos = self._pos(s)
        self._check_try_body(s)
        bound = _bound_before_the_last(s.body.body)
        for handler in s.handlers:
            self._check_handler_binds(handler, bound)
        outcome = self.naming.temp("attempt")
        path, exc = self.naming.temp("path"), self.naming.temp("exc")
        self._emit(ir.Assign(outcome, self._attempt_op(s), pos))
        for k, name in enumerate((path, exc)):
            entry = ir.Op(None, (ir.Name(outcome),), (), f"{outcome}[{k}]", "nondiff")
            self._emit(ir.Assign(name, entry, pos))
        with self._collecting() as body:
            first = len(self.block)
            self._stmts(s.body.body)
            self._check_repeatable_body(self.block[first:])
            if s.orelse is not None:
                self._stmts(s.orelse.body.body)
        self._emit(
            ir.If(
                ir.Text(f"{path} == 0", (path,)), tuple(body), self._handlers(s, path, exc, 1), pos
            )
        )
        if s.finalbody is not None:
            self._stmts(s.finalbody.body.body)

    def _handlers(self, s, path, exc, k):
        """The ``elif _path == k`` chain of the handlers from the k-th on."""
        if k > len(s.handlers):
            return ()
        handler = s.handlers[k - 1]
        pos = self._pos(handler)
        with self._collecting() as body:
            if handler.name is not None:
                target = handler.name.name
                self._emit(ir.Assign(self._local(target.value), self._copy_op(ir.Name(exc)), pos))
            self._stmts(handler.body.body)
        rest = self._handlers(s, path, exc, k + 1)
        return (ir.If(ir.Text(f"{path} == {k}", (path,)), tuple(body), rest, pos),)

    def _attempt_op(self, s):
        """``attempt(code, fn, locals(), E1, ...)``: which path the try statement takes."""
        code = self._compiled_body(s)
        types, names = [], set()
        for handler in s.handlers:
            if handler.type is None:
                types.append(self.captures.bind("BaseException"))
            else:
                kept = self._test(handler.type)
                types.append(str(kept))
                names.update(kept.names)
        # (what the try body reads is read again by the compiled try body, just after: the
        # operation need not list it to keep it alive)
        text = (
            f"{self.captures.bind('attempt', attempt)}({self._alias('try_body', code)}, "
            f"{self._alias('function', self.fn)}, {self.captures.bind('locals')}()"
            + "".join(f", {t}" for t in types)
            + ")"
        )
        args = tuple(ir.Name(n) for n in sorted(names))
        return ir.Op(attempt, args, (), text, "nondiff")

    def _compiled_body(self, s):
        """The try body as Python runs it, compiled at the user's file and lines (its local names
        spelled as the generated code spells them)."""
        stmts = list(s.body.body)
        stmts[0] = stmts[0].with_changes(leading_lines=())
        module = cst.Module(body=stmts)
        rename = dict(self.rename)
        rename.update({p: a.render() for p, a in self.subst.items()})
        if rename:
            module = module.visit(Renamer(rename))
        tree = ast.parse(module.code)
        ast.increment_lineno(tree, self.src.pos_of(s.body.body[0]).line - 1)
        return compile(tree, self.src.filename, "exec")

    # ---- what is refused ----------------------------------------------------------------------

    def _check_try_body(self, s):
        """Refuse a try body that may not run the same twice, or that leaves the statement; and
        a handler or ``else`` that leaves it when there is a ``finally`` (which would not run)."""
        if s.finalbody is not None:
            for block in [h.body for h in s.handlers] + ([s.orelse.body] if s.orelse else []):
                bad = find_node(block, (cst.Return, cst.Break, cst.Continue))
                if bad is not None:
                    fence.refuse(
                        self.src,
                        bad,
                        msg="leaving a try statement that has a finally block from a handler or "
                        "its else is not supported",
                        hint="set a value in the handler and return after the try statement",
                    )
        body = s.body
        bad = find_node(body, (cst.Return, cst.Break, cst.Continue, cst.Yield, cst.Await))
        if bad is not None:
            self._refuse_in_try(
                bad,
                "leaves the try statement",
                "compute a value in the try body and return (or break) after the statement",
            )
        bad = find_node(body, (cst.AugAssign, cst.Del, cst.Global, cst.Nonlocal))
        if bad is None:
            bad = _subscript_or_attribute_write(body)
        if bad is not None:
            self._refuse_in_try(
                bad,
                "changes a value in place",
                "build a new value in the try body (y = x + v rather than x += v)",
            )
        bad = find_node(body, cst.Expr)
        if bad is not None and not isinstance(
            bad.value, (cst.SimpleString, cst.ConcatenatedString)
        ):
            self._refuse_in_try(
                bad,
                "makes a call for its side effect (print, append, ...)",
                "move it before or after the try statement",
            )
        if self.local_defs:
            used = find_name(body, self.local_defs)
            if used is not None:
                self._refuse_in_try(
                    used,
                    "calls a function defined inside this one",
                    "define the function at module level",
                )
        if self.dicts:
            used = find_name(body, self.dicts)
            if used is not None:
                self._refuse_in_try(used, "uses a local dict", "read the entries before the try")

    def _refuse_in_try(self, node, what, hint):
        fence.refuse(
            self.src,
            node,
            msg=f"this try body {what}: sourcegrad runs a try body once to learn whether it "
            "raises, then again as compiled code, which must do the same",
            hint=hint,
        )

    def _check_repeatable_body(self, stmts):
        """The lowered try body: refuse a call that may give another result the second time, and
        one made for its side effect (a helper's ``print``), which would be made twice."""
        for s in ir.walk(stmts):
            if isinstance(s, ir.Effect) and not str(s.text).startswith(_REPEATABLE_EFFECTS):
                fence.refuse(
                    self.src,
                    s.pos,
                    msg="this try body makes a call for its side effect (print, warnings.warn, "
                    "...), which sourcegrad would make twice: it runs a try body once to learn "
                    "whether it raises, then again as compiled code",
                    hint="move the call before or after the try statement",
                )
            if isinstance(s, ir.Assign) and s.op.kind == "nondiff" and not repeatable(s.op.key):
                fence.refuse(
                    self.src,
                    s.node if s.node is not None else s.pos,
                    msg=f"{s.op.text.split('(')[0]} in a try body may not give the same result "
                    "twice: sourcegrad runs a try body once to learn whether it raises, then "
                    "again as compiled code",
                    hint="draw random numbers (or read clocks, files, iterators) before the try",
                )

    def _check_handler_binds(self, handler, bound):
        """Every name the try body binds is bound by ``handler`` before it reads it (or the
        handler ends by raising): a try body that raised part way leaves, in Python, the names
        it bound before the raise with their new values."""
        stmts = list(handler.body.body)
        if stmts and _raises(stmts[-1]):
            return
        pending = set(bound)
        for stmt in stmts:
            read = _reads_of(stmt)
            # (a compound statement may bind a name on one path only)
            written = _bound_in(stmt) if isinstance(stmt, cst.SimpleStatementLine) else set()
            for name in sorted(pending & read):
                self._refuse_unbound_in_handler(handler, stmt, name)
            pending -= written
            if not pending:
                return
        if pending:
            self._refuse_unbound_in_handler(handler, handler, min(pending))

    def _refuse_unbound_in_handler(self, handler, node, name):
        fence.refuse(
            self.src,
            node,
            msg=f"the try body binds {name!r}, and this handler reads it (or leaves it as the "
            f"try body left it) before binding it: if the try body raised after binding "
            f"{name!r}, Python keeps its new value",
            hint=f"bind {name!r} in every handler before using it, or compute it before the try",
        )


def _bound_before_the_last(stmts):
    """The names a try body may have bound when it raises: those its statements bind, but the
    last one's when it is an assignment (it binds only once its value is made)."""
    names = set()
    for k, stmt in enumerate(stmts):
        last = k == len(stmts) - 1
        if not (last and _is_assignment(stmt)):
            names |= _bound_in(stmt)
    return names


def _is_assignment(stmt):
    """``a = ...`` / ``a, b = ...``: one assignment to names, which binds after its value is made."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    if not isinstance(small, cst.Assign) or find_node(small.value, cst.NamedExpr) is not None:
        return False
    return all(
        isinstance(t.target, (cst.Name, cst.Tuple, cst.List))
        and find_node(t.target, (cst.Subscript, cst.Attribute, cst.StarredElement)) is None
        for t in small.targets
    )


def _bound_in(node):
    """The names a libcst subtree binds (assignment, loop and walrus targets, ``as`` names)."""
    v = _Bound()
    node.visit(v)
    return v.names


class _Bound(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.names = set()

    def visit_AssignTarget(self, n):
        self.names.update(target_names(n.target))

    def visit_AnnAssign(self, n):
        self.names.update(target_names(n.target))

    def visit_AugAssign(self, n):
        self.names.update(target_names(n.target))

    def visit_For(self, n):
        self.names.update(target_names(n.target))

    def visit_NamedExpr(self, n):
        self.names.update(target_names(n.target))

    def visit_AsName(self, n):
        self.names.update(target_names(n.name))

    def visit_MatchAs(self, n):
        if n.name is not None:
            self.names.add(n.name.value)

    def visit_CompFor(self, n):
        return False  # a comprehension's names stay inside it


def _reads_of(stmt):
    """The names statement ``stmt`` reads (a plain assignment's target names are not read)."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return names_read(stmt)
    read = set()
    for small in stmt.body:
        if isinstance(small, (cst.Assign, cst.AnnAssign)):
            targets = (
                [t.target for t in small.targets]
                if isinstance(small, cst.Assign)
                else [small.target]
            )
            if small.value is not None:
                read |= names_read(small.value)
            for t in targets:
                if not isinstance(t, cst.Name):
                    read |= names_read(t) - set(target_names(t))
        else:
            read |= names_read(small)
    return read


def _raises(stmt):
    """Does the statement ``stmt`` raise (``raise ...`` as a statement of its own)?"""
    return isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[-1], cst.Raise)


def _subscript_or_attribute_write(node):
    """The first ``a[i] = v`` or ``p.w = v`` target in ``node``, or None."""
    for target in _assign_targets(node):
        found = find_node(target, (cst.Subscript, cst.Attribute))
        if found is not None:
            return found
    return None


def _assign_targets(node):
    v = _Targets()
    node.visit(v)
    return v.targets


class _Targets(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.targets = []

    def visit_AssignTarget(self, n):
        self.targets.append(n.target)

    def visit_AnnAssign(self, n):
        self.targets.append(n.target)
