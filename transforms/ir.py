"""The intermediate representation the compiler reverses: one operation per statement.

After normalization (``normalize/``) every operand is an ``Atom``: a ``Name`` or a ``Const``.
Index expressions are ``Index`` values whose parts are atoms, slices of atoms, ``None`` or
``...``. Conditions and loop bounds, which are never differentiated, are kept as source text.
Nodes are frozen dataclasses; passes build new ones rather than mutating.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Any, Optional, Union


# The IR's most frequent nodes set their fields at once: a frozen dataclass's own __init__ sets
# each through object.__setattr__, and a compile makes thousands of nodes.


@dataclass(frozen=True, init=False)
class Pos:
    """A place in the user's file (1-based line, 1-based column)."""

    filename: str
    line: int
    col: int = 0

    def __init__(self, filename, line, col=0):
        self.__dict__.update(filename=filename, line=line, col=col)


@dataclass(frozen=True, init=False)
class Name:
    id: str

    def __init__(self, id):
        self.__dict__["id"] = id

    def render(self):
        return self.id


@dataclass(frozen=True, init=False)
class Const:
    value: Any
    text: str

    def __init__(self, value, text):
        self.__dict__.update(value=value, text=text)

    def render(self):
        t = self.text
        # Negative and complex literals get parentheses so no template can split them.
        return f"({t})" if t.startswith("-") or t.endswith("j") else t


Atom = Union[Name, Const]


@dataclass(frozen=True)
class Slice:
    lower: Optional[Atom]
    upper: Optional[Atom]
    step: Optional[Atom]


@dataclass(frozen=True)
class Index:
    """A subscript: a tuple of parts (atoms, slices, None, Ellipsis)."""

    parts: tuple
    is_tuple: bool  # written as a tuple (``x[i, j]``) rather than a single item

    def names(self):
        out = []
        for p in self.parts:
            if isinstance(p, Name):
                out.append(p.id)
            elif isinstance(p, tuple):  # a list literal: x[[i, j]]
                out.extend(a.id for a in p if isinstance(a, Name))
            elif isinstance(p, Slice):
                out.extend(a.id for a in (p.lower, p.upper, p.step) if isinstance(a, Name))
        return out

    def render(self):
        """As written inside brackets: ``i, 1:3, None`` (``code.index_subscript``, the one rendering)."""
        from .code import index_subscript

        return index_subscript(self).render()

    def render_value(self):
        """As a value passed to a function: ``(i, slice(1, 3, None), None)``."""
        from .code import index_value

        return index_value(self).render()


class Tup(tuple):
    """A tuple or list literal of atoms passed to a function (``np.stack([a, b])``)."""

    is_list = False

    def render(self):
        inner = ", ".join(a.render() for a in self)
        if self.is_list:
            return f"[{inner}]"
        return f"({inner},)" if len(self) == 1 else f"({inner})"


def entries(atom):
    """The atoms of a tuple or list known now: a literal's (``Tup``), or a constant tuple's or
    list's values (each a ``Const``: its literal where it has one); None for any other atom."""
    if isinstance(atom, Tup):
        return list(atom)
    if not isinstance(atom, Const) or type(atom.value) not in (tuple, list):
        return None
    out = []
    for k, v in enumerate(atom.value):
        literal = type(v) in (int, bool, str) or v is None or (type(v) is float and v - v == 0)
        out.append(Const(v, repr(v) if literal else f"{atom.render()}[{k}]"))
    return out


def module_of(obj):
    """The name of the module ``obj`` is defined in, or "" (a C method's ``__module__`` may be
    None, and a class's may be a descriptor rather than a string)."""
    module = getattr(obj, "__module__", None)
    return module if isinstance(module, str) else ""


ATTRIBUTE_READ = "attribute read"  # the key of x.shape, x.ndim, x.size, x.dtype


@dataclass(frozen=True, init=False)
class Op:
    """A call of a primitive with atoms: what a rule is looked up by.

    ``key`` is the object whose rule applies (``np.tanh``, ``operator.mul``, a user function, a
    ``Function`` subclass); ``text`` is the forward code, as the user would read it."""

    key: Any
    args: tuple
    kwargs: tuple  # ((name, Atom), ...)
    text: str
    kind: str = "call"  # call (a rule applies) | copy (a value passed on as it is) | nondiff

    def __init__(self, key, args, kwargs, text, kind="call"):
        self.__dict__.update(key=key, args=args, kwargs=kwargs, text=text, kind=kind)

    def arg_names(self):
        """The local names the operands read, in order (worked out once: several passes ask)."""
        found = self.__dict__.get("_arg_names")
        if found is None:
            out = []
            for a in self.args:
                out.extend(atom_names(a))
            for _, a in self.kwargs:
                out.extend(atom_names(a))
            found = self.__dict__["_arg_names"] = tuple(out)
        return found


def atom_names(a):
    """The local variable names an operand reads."""
    if isinstance(a, Name):
        return [a.id]
    if isinstance(a, Index):
        return a.names()
    if isinstance(a, tuple):  # a tuple/list literal of atoms
        return [n for x in a for n in atom_names(x)]
    return []


@dataclass(frozen=True, init=False)
class Assign:
    target: str
    op: Op
    pos: Pos
    inplace: bool = False  # from ``x += v``: numpy would update x's array in place
    node: Any = field(default=None, compare=False, repr=False)  # for exact error columns

    def __init__(self, target, op, pos, inplace=False, node=None):
        self.__dict__.update(target=target, op=op, pos=pos, inplace=inplace, node=node)


@dataclass(frozen=True)
class SetItem:
    """``target[index] = value``: an in-place write into an array this function owns.

    ``augmented``: the operator of ``target[index] op= v`` (else empty), which for a list's entry
    also updates the entry's own array in place (``aliasing.py`` checks who else sees it)."""

    target: str
    index: Index
    value: Atom
    pos: Pos
    augmented: str = field(default="", compare=False)


@dataclass(frozen=True)
class Append:
    """``target.append(value)`` on a list this function built."""

    target: str
    value: Atom
    pos: Pos


@dataclass(frozen=True)
class Effect:
    """A call kept only for its side effect (``print``): runs in the forward, not the backward."""

    text: str
    pos: Pos


@dataclass(frozen=True)
class If:
    test: str  # source text, evaluated once in the forward
    body: tuple
    orelse: tuple
    pos: Pos


@dataclass(frozen=True)
class For:
    """``for target in range(...)``; other loops are lowered to this form. ``checkpoint``: the
    loop was written ``for t in sourcegrad.checkpointed(range(...)):`` (True, or its number of
    snapshots); None otherwise."""

    target: str
    range_text: str
    body: tuple
    pos: Pos
    checkpoint: object = None


@dataclass(frozen=True)
class While:
    test: str
    body: tuple
    pos: Pos


@dataclass(frozen=True)
class Return:
    value: Atom
    pos: Pos


@dataclass(frozen=True)
class Break:
    pos: Pos


@dataclass(frozen=True)
class Continue:
    pos: Pos


@dataclass(frozen=True)
class LoopExit:
    """Forward only: ``if <test>: break`` (what ``break`` and ``return`` become in a loop)."""

    test: str
    pos: Pos


@dataclass
class Function:
    """A normalized function: parameters, body, and what the passes learn about it."""

    name: str
    params: list
    body: tuple
    filename: str
    qualname: str
    info: dict = field(default_factory=dict)


IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Text(str):
    """Source text kept as written (a condition, a loop's range, an effect), with the local names
    it reads, given by whoever made it (from the libcst tree, or the atoms it was built from)."""

    def __new__(cls, text, names=()):
        t = super().__new__(cls, text)
        t.names = frozenset(names)
        return t


class ObjectWrite(Text):
    """The text of an ``Effect`` that writes into an object's attribute (``obj.a = v``,
    ``normalize/objects.py``): it runs once per forward, as the user's line does."""


def shadows_of(src):
    """The locals holding what the written attributes of the objects of the function ``src`` is
    compiled from hold (``normalize/objects.py``): set when it is normalized."""
    return getattr(src, "shadows", frozenset())


def text(template, *atoms, **names):
    """``Text`` made from atoms: ``text("range(len({}))", seq)`` reads ``seq``'s names."""
    out = Text(
        template.format(*(a.render() if hasattr(a, "render") else str(a) for a in atoms), **names),
        [n for a in atoms for n in atom_names(a)],
    )
    return out


def idents(t):
    """The names a piece of kept text reads: those it carries (``Text``), else every identifier
    in it (a safe over-estimate, for text made without names)."""
    names = getattr(t, "names", None)
    return set(names) if names is not None else set(IDENT.findall(t))


def reads(s):
    """The names statement ``s`` itself reads (for a block: its test or range, not its body)."""
    if type(s) is Assign:
        names = set(s.op.arg_names())
        if s.inplace:
            names.add(s.target)
        return names
    if isinstance(s, SetItem):
        return {s.target, *s.index.names(), *atom_names(s.value)}
    if isinstance(s, Append):
        return {s.target, *atom_names(s.value)}
    if isinstance(s, Return):
        return set(atom_names(s.value))
    if isinstance(s, Effect):
        return idents(s.text)
    if isinstance(s, (LoopExit, If, While)):
        return idents(s.test)
    if isinstance(s, For):
        return idents(s.range_text)
    return set()


def walk(stmts):
    """Every statement, depth first, in program order (a new list: a dozen passes walk the
    function, and a list costs a third of a generator's nested ``yield from``)."""
    out = []
    _walk_into(stmts, out)
    return out


def _walk_into(stmts, out):
    for s in stmts:
        out.append(s)
        kind = type(s)
        if kind is If:
            _walk_into(s.body, out)
            _walk_into(s.orelse, out)
        elif kind is For or kind is While:
            _walk_into(s.body, out)


def dump(stmts, indent=""):
    """The statements as Python-like text, one per line (a block's body indented under it): the
    IR as a reader or a test sees it. ``# nondiff`` marks an operation never differentiated,
    ``# inplace`` one written ``x += v``."""
    lines = []
    for s in stmts:
        lines.extend(_dump_one(s, indent))
    return "\n".join(lines or [indent + "pass"])


def _dump_one(s, indent):
    if isinstance(s, Assign):
        tags = (["nondiff"] if s.op.kind == "nondiff" else []) + (["inplace"] if s.inplace else [])
        return [f"{indent}{s.target} = {s.op.text}" + (f"  # {', '.join(tags)}" if tags else "")]
    if isinstance(s, If):
        head = [f"{indent}if {s.test}:", dump(s.body, indent + "    ")]
        return head + ([f"{indent}else:", dump(s.orelse, indent + "    ")] if s.orelse else [])
    if isinstance(s, (For, While)):
        head = f"for {s.target} in {s.range_text}:" if isinstance(s, For) else f"while {s.test}:"
        mark = f"  # checkpointed: {s.checkpoint}" if getattr(s, "checkpoint", None) else ""
        return [indent + head + mark, dump(s.body, indent + "    ")]
    simple = {
        SetItem: lambda: f"{s.target}[{s.index.render()}] = {s.value.render()}",
        Append: lambda: f"{s.target}.append({s.value.render()})",
        Effect: lambda: str(s.text),
        Return: lambda: f"return {s.value.render()}",
        Break: lambda: "break",
        Continue: lambda: "continue",
        LoopExit: lambda: f"if {s.test}: break  # loop exit",
    }
    return [indent + simple[type(s)]()]
