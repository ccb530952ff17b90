"""Generated code as data: the statements the reverse pass builds and ``optimize`` rewrites.

A piece of generated code is a ``Code``: a tuple of literal text and ``Ref`` s, the names it
mentions (variables, runtime helpers, template globals). A generated statement is a ``Stmt``: its
code, its depth, the user's position it comes from, and the names it reads and writes, given by
whoever builds it. Passes ask a statement what it reads and writes and rename a name by replacing
a ``Ref``; no pass ever parses rendered text, so no pass can rewrite a name of the user's by
accident. Rendering joins the parts, once, in ``emit``.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from functools import lru_cache

from . import ir


class Ref(str):
    """A name in generated code (a ``str``, so code renders by joining its parts)."""

    __slots__ = ()


@dataclass(frozen=True, init=False)
class Code:
    parts: tuple = ()  # str (literal text) | Ref

    def __init__(self, parts=()):
        self.__dict__["parts"] = parts  # (a frozen dataclass's __init__ costs twice this)

    def render(self):
        return "".join(self.parts)

    __str__ = render

    def names(self):
        # computed once, kept in the instance's dict (functools.cached_property takes a lock per read)
        found = self.__dict__.get("_names")
        if found is None:
            found = self.__dict__["_names"] = frozenset([p for p in self.parts if type(p) is Ref])
        return found

    def rename(self, mapping):
        if self.names().isdisjoint(mapping):
            return self
        return Code(
            tuple([Ref(mapping[p]) if type(p) is Ref and p in mapping else p for p in self.parts])
        )

    def ref(self):
        """The one name this code is, or None (``x_bar``, not ``x_bar * 2``)."""
        return self.parts[0] if len(self.parts) == 1 and type(self.parts[0]) is Ref else None

    def literal(self):
        """The text of a code without names (a number), or None."""
        return self.render() if not self.names() else None

    def is_empty(self):
        return not self.parts


def of(*pieces):
    """Code from pieces: ``Code`` (spliced), ``Ref`` (a name) or ``str`` (literal text)."""
    parts = []
    text = ""  # literal text not yet appended
    for p in pieces:
        kind = type(p)
        if kind is Ref:
            if text:
                parts.append(text)
                text = ""
            parts.append(p)
        elif kind is Code:
            for item in p.parts:
                if type(item) is Ref:
                    if text:
                        parts.append(text)
                        text = ""
                    parts.append(item)
                elif item:
                    text += item
        elif p:
            text += p
    if text:
        parts.append(text)
    return Code(tuple(parts))


def name(n):
    return Code((Ref(n),))


def lit(text):
    return Code((text,)) if text else Code()


def join(items, sep=", "):
    out = []
    for k, item in enumerate(items):
        if k:
            out.append(sep)
        out.append(item)
    return of(*out)


@lru_cache(maxsize=None)
def _parsed(template):
    return tuple(string.Formatter().parse(template))


def fmt(template, **fields):
    """Code from a format string of the compiler's own: ``fmt("{a} = acc({a}, {e})", a=adj, e=expr)``.
    A field given as a ``str`` is a name; literal text is passed as ``lit(...)`` or ``Code``."""
    pieces = []
    for text, key, _, _ in _parsed(template):
        if text:
            pieces.append(text)
        if key is not None:
            v = fields[key]
            pieces.append(v if isinstance(v, Code) else Ref(v))
    return of(*pieces)


def is_number(text):
    """Is ``text`` a real number as ``ir.Const`` renders one: ``2``, ``0.5``, ``1e-3``, ``(-2.0)``?"""
    t = text[2:-1] if text.startswith("(-") and text.endswith(")") else text
    try:
        float(t)
    except ValueError:
        return False
    return bool(t) and t[0].isdigit() and "j" not in t


# ---- the user's IR values as code -------------------------------------------------------------
def atom(a):
    """An operand: a name is a ``Ref``, a constant its literal text."""
    if type(a) is ir.Name:
        return Code((Ref(a.id),))
    if isinstance(a, ir.Name):
        return name(a.id)
    if isinstance(a, ir.Index):
        return index_value(a)
    if isinstance(a, tuple):  # a tuple/list literal of atoms (ir.Tup)
        inner = join([atom(x) for x in a])
        if getattr(a, "is_list", False):
            return of("[", inner, "]")
        return of("(", inner, ",)" if len(a) == 1 else ")")
    return lit(a.render())


def _part_subscript(p):
    if isinstance(p, ir.Slice):
        lo = atom(p.lower) if p.lower else lit("")
        hi = atom(p.upper) if p.upper else lit("")
        return of(lo, ":", hi, *((":", atom(p.step)) if p.step else ()))
    return _part_value(p)


def _part_value(p):
    if p is None:
        return lit("None")
    if p is Ellipsis:
        return lit("...")
    if isinstance(p, ir.Slice):
        return of(
            "slice(", join([atom(a) if a else lit("None") for a in (p.lower, p.upper, p.step)]), ")"
        )
    return atom(p)  # an atom, or a list literal of them (x[[i, j]]: a Tup)


def index_subscript(index):
    """As written inside brackets: ``i, 1:3, None`` (``ir.Index.render``)."""
    trail = "," if index.is_tuple and len(index.parts) == 1 else ""
    return of(join([_part_subscript(p) for p in index.parts]), trail)


def index_value(index):
    """As a value passed to a function: ``(i, slice(1, 3, None), None)`` (``ir.Index.render_value``)."""
    vals = [_part_value(p) for p in index.parts]
    if len(vals) == 1 and not index.is_tuple:
        return vals[0]
    return of("(", join(vals), "," if len(vals) == 1 else "", ")")


# ---- statements -------------------------------------------------------------------------------
@dataclass(frozen=True, init=False)
class Stmt:
    """One generated line. ``target``/``expr``: set for ``target = expr`` and ``target += expr``
    (``augmented``); ``opens``: a block header (``if``, ``else``, ``for``), its body one deeper."""

    depth: int
    code: Code
    pos: object = None  # ir.Pos of the user's statement this line comes from
    reads: frozenset = frozenset()
    writes: frozenset = frozenset()
    target: str = None
    expr: Code = None
    augmented: bool = False
    opens: bool = False
    info: dict = field(default=None, compare=False)  # facts a pass leaves for a later one

    def __init__(
        self,
        depth,
        code,
        pos=None,
        reads=frozenset(),
        writes=frozenset(),
        target=None,
        expr=None,
        augmented=False,
        opens=False,
        info=None,
    ):
        # the fields set at once: a frozen dataclass's own __init__ sets them one by one through
        # object.__setattr__, and a compile makes thousands of statements
        self.__dict__.update(
            depth=depth,
            code=code,
            pos=pos,
            reads=reads,
            writes=writes,
            target=target,
            expr=expr,
            augmented=augmented,
            opens=opens,
            info=info,
        )

    @property
    def mentions(self):
        """Every name the statement reads or writes."""
        return self.names()

    def names(self):
        found = self.__dict__.get("_mentions")
        if found is None:
            found = self.__dict__["_mentions"] = self.reads | self.writes
        return found

    @property
    def text(self):
        return self.code.render()

    def copy_of(self):
        """The name this statement copies (``a = b``), or None."""
        return self.expr.ref() if self.target is not None and not self.augmented else None

    def renamed(self, mapping):
        def sub(names):
            return (
                names
                if names.isdisjoint(mapping)
                else frozenset([mapping.get(n, n) for n in names])
            )

        target, expr = self.target, self.expr
        return Stmt(
            self.depth,
            self.code.rename(mapping),
            self.pos,
            sub(self.reads),
            sub(self.writes),
            mapping.get(target, target) if target else target,
            expr.rename(mapping) if expr is not None else None,
            self.augmented,
            self.opens,
            self.info,
        )

    def at(self, depth):
        return self.but(depth=depth)

    def but(self, **changes):
        """This statement with ``changes`` (``dataclasses.replace``, without its checks: a pass
        renames hundreds of statements)."""
        d = self.__dict__
        fields = {k: d[k] for k in _STMT_FIELDS}
        fields.update(changes)
        return Stmt(**fields)


_STMT_FIELDS = (
    "depth",
    "code",
    "pos",
    "reads",
    "writes",
    "target",
    "expr",
    "augmented",
    "opens",
    "info",
)


def assign(depth, target, expr, pos=None):
    """``target = expr``."""
    expr = expr if type(expr) is Code else name(expr)
    return Stmt(
        depth, prefixed(target, " = ", expr), pos, expr.names(), frozenset((target,)), target, expr
    )


def prefixed(target, text, expr):
    """``of(Ref(target), text, expr)``, made directly (a compile makes thousands)."""
    parts = expr.parts
    if "" in parts:  # (never made by ``of``)
        return of(Ref(target), text, expr)
    if parts and type(parts[0]) is not Ref:
        return Code((Ref(target), text + parts[0], *parts[1:]))
    return Code((Ref(target), text, *parts))


def augment(depth, target, expr, pos=None, op="+="):
    """``target += expr`` (an in-place update of an array the backward owns)."""
    return Stmt(
        depth,
        prefixed(target, f" {op} ", expr),
        pos,
        expr.names() | {target},
        frozenset((target,)),
        target,
        expr,
        augmented=True,
    )


def line(depth, code, pos=None, writes=(), reads=None, opens=False):
    """Any other statement: an effect (``_tape.append(x)``), a write into an entry (``x[i] = v``),
    a header. ``reads`` defaults to every name the code mentions but those it ``writes``."""
    writes = frozenset(writes)
    reads = code.names() - writes if reads is None else frozenset(reads)
    return Stmt(depth, code, pos, reads, writes, opens=opens)


def header(depth, code, pos=None, writes=()):
    """A block header: ``if c:``, ``else:``, ``for t in reversed(r):``."""
    return line(depth, code, pos, writes, opens=True)


def delete(depth, names):
    """``del a, b``: a release of dead values (``info["release"]``), which changes no result."""
    names = sorted(names)
    parts = ["del "]
    for n in names:
        if len(parts) > 1:
            parts.append(", ")
        parts.append(Ref(n))
    return Stmt(
        depth,
        Code(tuple(parts)),
        None,
        frozenset(),
        frozenset(names),
        info={"release": True},
    )


def user(depth, text, pos=None, reads=(), writes=(), opens=False, info=None):
    """A line of the user's forward code: its text is printed as it is and never renamed."""
    return Stmt(depth, lit(text), pos, frozenset(reads), frozenset(writes), opens=opens, info=info)
