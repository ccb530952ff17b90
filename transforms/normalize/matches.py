"""``match`` statements, lowered to an ``if``/``elif`` chain.

Expects: the walk of ``anf`` and its state. Guarantees: the subject is evaluated once, into a
temporary; each ``case`` is one condition kept as text (it is never differentiated), which tests
what Python's pattern tests, in Python's order: a literal or dotted name by ``==``, ``None``/
``True``/``False`` by ``is``, a sequence pattern by being a sequence that is no string, its
length, then its entries left to right; ``|`` alternatives in order; the guard last, reading each
captured name as the entry it captures. The names a case captures are bound at the start of its
body (as Python leaves them bound when the case is taken), by indexing the subject, so an
active subject's entries keep their gradients. Class and mapping patterns, ``*rest`` captures and
captures inside ``|`` are refused where written.
"""

from __future__ import annotations

from collections import abc

import libcst as cst

from .. import fence, ir
from .syntax import Renamer, code_of, first_node, names_read


class Matches:
    """The ``match`` method of the ``Normalizer``."""

    def _stmt_Match(self, s):
        pos = self._pos(s)
        subject = self._atom(s.subject)
        if not (isinstance(subject, ir.Name) and subject.id in self.naming.temps):
            held = self.naming.temp("subject")  # evaluated once, whatever the cases bind
            self._emit(ir.Assign(held, self._copy_op(subject), pos))
            subject = ir.Name(held)
        self._emit_cases(list(s.cases), subject, pos)

    def _emit_cases(self, cases, subject, pos):
        """The chain of ``cases`` (an ``If`` whose ``else`` holds the cases after the first)."""
        if not cases:
            return
        case = cases[0]
        if isinstance(case.pattern, cst.MatchOr) and _captures_any(case.pattern):
            if case.guard is not None:  # Python tries the guard once, after the first match
                fence.refuse(
                    self.src,
                    case.pattern,
                    msg="a pattern with alternatives (|) that capture names and a guard is not "
                    "supported",
                    hint="write one case per alternative",
                )
            # case (n, 1) | (1, n): one case per alternative, each binding its own way
            alternatives = [case.with_changes(pattern=alt.pattern) for alt in case.pattern.patterns]
            self._emit_cases(alternatives + cases[1:], subject, pos)
            return
        tests, names, captures = [], {subject.id}, []
        self._pattern(case.pattern, subject.id, (), tests, names, captures)
        if case.guard is not None:
            tests.append(f"({self._guard(case.guard, subject.id, captures, names)})")
        with self._collecting() as body:
            for name, path in captures:
                self._bind_capture(name, subject, path, pos)
            for stmt in case.body.body:
                self._stmt(stmt)
        if not tests:  # irrefutable (Python allows it last only): the chain ends here
            self.block.extend(body)
            return
        with self._collecting() as orelse:
            self._emit_cases(cases[1:], subject, pos)
        test = ir.Text(" and ".join(tests), names)
        self._emit(ir.If(test, tuple(body), tuple(orelse), pos))

    def _pattern(self, p, subj, path, tests, names, captures):
        """Add to ``tests`` the conditions under which ``p`` matches the entry at ``path`` of the
        subject (``subj``'s text), and to ``captures`` the (name, path) it binds."""
        at = subj + "".join(f"[{k}]" for k in path)
        if isinstance(p, cst.MatchAs):
            if p.pattern is not None:
                self._pattern(p.pattern, subj, path, tests, names, captures)
            if p.name is not None:
                captures.append((p.name.value, path))
        elif isinstance(p, cst.MatchValue):
            names.update(self._kept(p.value).names)
            tests.append(f"{at} == {self._text(p.value)}")
        elif isinstance(p, cst.MatchSingleton):
            tests.append(f"{at} is {p.value.value}")
        elif isinstance(p, cst.MatchOr):
            alternatives = []
            for alt in p.patterns:
                sub, bound = [], []
                self._pattern(alt.pattern, subj, path, sub, names, bound)
                if bound:
                    fence.refuse(
                        self.src,
                        alt.pattern,
                        msg="a pattern alternative (|) that captures a name is not supported",
                        hint="write one case per alternative",
                    )
                alternatives.append(" and ".join(sub) or "True")
            tests.append("(" + " or ".join(f"({a})" for a in alternatives) + ")")
        elif isinstance(p, (cst.MatchList, cst.MatchTuple)):
            self._sequence_pattern(p, subj, path, at, tests, names, captures)
        else:
            fence.refuse(
                self.src,
                p,
                msg="class and mapping patterns are not supported in a match statement",
                hint="test the value with if/elif (isinstance(v, C), key in d) instead",
            )

    def _sequence_pattern(self, p, subj, path, at, tests, names, captures):
        """``case [a, 1, *_]:`` / ``case (n, m):``: a sequence, no string, of the right length."""
        items = list(p.patterns)
        stars = [k for k, el in enumerate(items) if isinstance(el, cst.MatchStar)]
        for k in stars:
            if items[k].name is not None:
                fence.refuse(
                    self.src,
                    items[k],
                    msg="a starred capture (*rest) in a sequence pattern is not supported",
                    hint="match *_ and slice the subject in the case's body",
                )
        isinstance_, length = self.captures.bind("isinstance"), self.captures.bind("len")
        sequence = self.captures.bind("Sequence", abc.Sequence)
        strings = ", ".join(self.captures.bind(t) for t in ("str", "bytes", "bytearray"))
        tests.append(f"{isinstance_}({at}, {sequence}) and not {isinstance_}({at}, ({strings}))")
        fixed = len(items) - len(stars)
        tests.append(f"{length}({at}) {'>=' if stars else '=='} {fixed}")
        for k, el in enumerate(items):
            if isinstance(el, cst.MatchStar):
                continue
            index = k if not stars or k < stars[0] else k - len(items)
            self._pattern(el.value, subj, path + (index,), tests, names, captures)

    def _guard(self, guard, subj, captures, names):
        """The guard's text, each captured name read as the subject's entry it captures."""
        self._check_text(guard)
        entries = {name: subj + "".join(f"[{k}]" for k in path) for name, path in captures}
        rename = dict(self.rename)
        rename.update({p: a.render() for p, a in self.subst.items()})
        rename.update(entries)
        for n in names_read(guard) - set(entries):
            a = self.subst.get(n)
            names.update(ir.atom_names(a) if a is not None else (self.rename.get(n, n),))
        if self.dicts:
            self._text(guard)  # refuses a local dict used as a whole
        return code_of(guard.visit(Renamer(rename)))

    def _bind_capture(self, name, subject, path, pos):
        """``name = subject[i][j]...``: a captured name, bound where its case's body starts."""
        value, target = subject, self._local(name)
        if not path:
            self._emit(ir.Assign(target, self._copy_op(value), pos))
            return
        for n, k in enumerate(path):
            op = self._getitem_op(value, ir.Index((ir.Const(k, str(k)),), False))
            tmp = target if n == len(path) - 1 else self.naming.temp()
            self._emit(ir.Assign(tmp, op, pos))
            value = ir.Name(tmp)


def _captures_any(pattern):
    """Does ``pattern`` bind a name anywhere?"""
    return (
        first_node(
            pattern, lambda n: isinstance(n, (cst.MatchAs, cst.MatchStar)) and n.name is not None
        )
        is not None
    )
