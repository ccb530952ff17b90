"""Is the source text the code Python runs?

Expects: a function and the source lines ``inspect`` found for it (or a lambda's text).
Guarantees: ``check_same_function`` and ``check_same_code`` raise ``NoSourceError`` when the text
is not the function's own (the file was edited after import, or an import hook compiled it from
other text), naming the first line that differs; ``compile_in_scope`` compiles the text inside
scopes rebuilt from the function's ``__qualname__`` (functions binding its free variables,
classes of its classes' names), and ``same_code`` compares two code objects by what they run:
instructions, names and constants, never lines, columns or comments.
"""

from __future__ import annotations

import __future__
import dis
import linecache
import types

from sourcegrad.errors import NoSourceError


def check_same_function(fn, fdef, filename, line):
    """The source found at the function's line must be that function: a file edited since it
    was imported would otherwise hand us another function's body."""
    code = fn.__code__
    params = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    found = (
        None
        if fdef is None
        else [
            p.name.value
            for p in (*fdef.params.posonly_params, *fdef.params.params, *fdef.params.kwonly_params)
        ]
    )
    if fdef is None or fdef.name.value != fn.__name__ or found != params:
        raise NoSourceError(
            f"the source at {filename}:{line} is not the function {fn.__qualname__} any more: the file "
            "changed after the function was defined. Re-import (or reload) the module, then differentiate again."
        )


def check_same_code(fn, lines, filename, first_line):
    """Refuse source text that does not compile to the function's own code (the file was edited
    after import, keeping the signature): sourcegrad would differentiate the new text while Python
    runs the old code. Formatting and comments may differ; instructions, names and constants may
    not. Where the function's scope cannot be rebuilt, the name and parameter check stands."""
    compiled = compile_in_scope(fn, lines)
    if compiled is None:
        return
    line = _first_difference(compiled, fn.__code__)
    if line is None:
        return
    where = first_line + line - 1
    text = linecache.getline(filename, where).strip()
    err = NoSourceError(
        f"the source of {fn.__qualname__} in {filename} is not the code Python runs: the file was "
        f"edited after the function was defined, or an import hook compiled it from other text "
        f"(the first difference is at line {where}).\n"
        f'  File "{filename}", line {where}\n    {text}\n'
        "hint: re-import (or importlib.reload) the module, then differentiate again"
    )
    err.filename, err.lineno = filename, where
    raise err


_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag


def compile_in_scope(fn, lines, lam=False):
    """Compile ``lines`` (the function's source, or a lambda's text) inside scopes rebuilt from its
    ``__qualname__``: functions that bind its free variables and classes of its classes' names
    (name mangling, ``__class__``), at the original indentation, so its code object compares
    with ``fn.__code__``. Returns that code object, or None where the scope cannot be rebuilt."""
    code = fn.__code__
    if any(n.startswith("@py_") for n in code.co_varnames):
        return None  # a test module: pytest compiled it from its rewritten asserts
    parts = fn.__qualname__.split(".")[:-1]
    scopes = []
    while parts:
        name = parts.pop(0)
        kind = "def" if parts and parts[0] == "<locals>" else "class"
        if kind == "def":
            parts.pop(0)
        if not name.isidentifier():
            return None
        scopes.append((kind, name))
    frees = [n for n in code.co_freevars if n != "__class__"]
    defs = [k for k, (kind, _) in enumerate(scopes) if kind == "def"]
    if frees and not defs:
        return None
    first = lines[0]
    indent = "" if lam else first[: len(first) - len(first.lstrip())]
    if scopes and len(indent) < len(scopes) and not lam:
        return None
    if not scopes and indent:
        scopes = [("if", "")]
    # A call on a name the module imported compiles to other instructions than one on a name it
    # assigned (LOAD_ATTR, not LOAD_METHOD): say which names are imported modules, as the file did.
    out = [
        f"import sys as {n}"
        for n in sorted(_global_names(code))
        if isinstance(fn.__globals__.get(n), types.ModuleType)
    ]
    for k, (kind, name) in enumerate(scopes):
        out.append(
            " " * k + {"def": f"def {name}():", "class": f"class {name}:", "if": "if 1:"}[kind]
        )
        body = " " * (k + 1) if (k + 1 < len(scopes) or lam) else indent
        if frees and defs and k == defs[-1]:
            out.append(body + " = ".join(frees) + " = None")
    if lam:
        out.append(
            " " * len(scopes) + "(" + "".join(lines).strip() + "\n" + " " * len(scopes) + ")"
        )
    else:
        out.extend(line.rstrip("\r\n") for line in lines)
    try:
        module = compile(
            "\n".join(out) + "\n",
            "<sourcegrad check>",
            "exec",
            flags=code.co_flags & _FUTURE_FLAGS,
            dont_inherit=True,
        )
    except (SyntaxError, ValueError):
        return None
    found = _find_code(module, code.co_name)
    if found is None or found.co_freevars != code.co_freevars:
        return None
    return found


def _global_names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names


def _find_code(module, name):
    """The first code object called ``name`` in a breadth-first walk of ``module``'s constants."""
    level = [module]
    while level:
        for c in level:
            if c is not module and c.co_name == name:
                return c
        level = [k for c in level for k in c.co_consts if isinstance(k, types.CodeType)]
    return None


def same_code(a, b):
    """Do two code objects run the same instructions on the same names and constants? (Lines
    and columns may differ: formatting and comments do not change what runs.)"""
    if (a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars, a.co_argcount) != (
        b.co_names,
        b.co_varnames,
        b.co_freevars,
        b.co_cellvars,
        b.co_argcount,
    ):
        return False
    if a.co_code != b.co_code and _ops(a) != _ops(b):
        return False
    ca, cb = _consts(a), _consts(b)
    return len(ca) == len(cb) and all(_same_const(x, y) for x, y in zip(ca, cb))


def _own_line(code, value):
    """A class body (Python 3.13+) stores its own first line as ``__firstlineno__``: that constant
    says where the text stands, not what it does."""
    return (
        "<first line>"
        if (
            type(value) is int
            and value == code.co_firstlineno
            and "__firstlineno__" in code.co_names
        )
        else value
    )


def _consts(code):
    return [_own_line(code, c) for c in code.co_consts]


def _same_const(x, y):
    if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
        return same_code(x, y)
    if type(x) is not type(y):
        return False
    try:
        return bool(x == y) or (x != x and y != y)  # nan == nan here
    except Exception:
        return x is y


# Where the module imported a name decides whether a call on it compiles to LOAD_METHOD or to
# PUSH_NULL + LOAD_ATTR (CPython 3.11): the same call, so instructions are compared as one.
_SAME_OP = {"LOAD_METHOD": "LOAD_ATTR"}
_SKIP_OPS = {"PUSH_NULL", "CACHE", "NOP", "EXTENDED_ARG"}


def _instructions(code):
    """``code``'s instructions as (opname, argument, line): jump targets as instruction numbers,
    constants that are code objects as their own instruction lists."""
    kept = [i for i in dis.get_instructions(code) if i.opname not in _SKIP_OPS]
    index = {}
    for k, i in enumerate(kept):
        index.setdefault(i.offset, k)
    out = []
    for i in kept:
        arg = i.argval
        if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs:
            arg = index.get(
                arg, min((k for off, k in index.items() if off > arg), default=len(kept))
            )
        elif isinstance(arg, types.CodeType):
            arg = tuple(_ops(arg))
        elif isinstance(arg, float) and arg != arg:
            arg = "nan"
        else:
            arg = _own_line(code, arg) if i.opname == "LOAD_CONST" else arg
        positions = getattr(i, "positions", None)  # (Python 3.10: only the first of a line says)
        line = positions.lineno if positions is not None else i.starts_line
        out.append(((_SAME_OP.get(i.opname, i.opname), arg), line))
    return out


def _ops(code):
    return [op for op, _ in _instructions(code)]


def _first_difference(new, old):
    """None when ``new`` (compiled from the text) runs as ``old`` does; otherwise the line of the
    text (relative to its first line) where they first differ."""
    if same_code(new, old):
        return None
    base = line = new.co_firstlineno
    a, b = _instructions(new), _instructions(old)
    for (x, x_line), (y, _) in zip(a, b):
        line = x_line or line
        if x != y:
            return line - base + 1
    return line - base + 1
