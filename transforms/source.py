"""Find a function's source and parse it with libcst.

Guarantees: the returned tree is a libcst ``FunctionDef`` (lambdas are rewritten into an
equivalent one-line ``def``), with decorators removed, and a ``Locator`` that maps libcst nodes
back to the user's file, line and column. The text is the source of the code Python runs: it is
compiled where the function was (inside scopes that bind its free variables, in a class of its
class's name) and compared with the function's code object, so a file edited after import is
refused rather than differentiated in place of the code that runs. A ``functools.wraps``
wrapper is read as the function it wraps (``inspect`` shows that source). Statement lines come from a parallel walk of the
stdlib ``ast`` tree (cheap); expression columns come from libcst's ``PositionProvider``,
computed only when an error needs one.
"""

from __future__ import annotations

import __future__
import ast
import dis
import inspect
import linecache
import re
import textwrap
import types

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from sourcegrad.errors import NoSourceError

from .ir import Pos


class Source:
    """The parsed function plus everything needed to point into the user's file."""

    def __init__(self, fn, tree, text, filename, first_line, col_shift):
        self.fn = fn
        self.tree = tree  # cst.FunctionDef
        self.text = text
        self.filename = filename
        self.first_line = first_line  # file line of the text's line 1
        self.col_shift = col_shift  # columns removed by dedenting
        self._module = None
        self._positions = None
        self._stmt_lines = {}
        self._aliases = {}
        self.ast_fn = None  # the stdlib ast of the function, when it parsed

    def stmt_pos(self, node):
        """The position of a statement node, or None (never resolves libcst metadata)."""
        node = self._aliases.get(id(node), node)
        line = self._stmt_lines.get(id(node))
        if line is None:
            return None
        return Pos(self.filename, line[0] + self.first_line - 1, line[1] + self.col_shift + 1)

    def pos_of(self, node):
        """The user's position of a libcst node (statements are cheap, other nodes resolve once)."""
        node = self._aliases.get(id(node), node)
        line = self._stmt_lines.get(id(node))
        if line is not None:
            return Pos(self.filename, line[0] + self.first_line - 1, line[1] + self.col_shift + 1)
        if self._positions is None:
            wrapper = MetadataWrapper(self._module, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        p = self._positions.get(node)
        if p is None:
            return Pos(self.filename, self.first_line, 0)
        return Pos(
            self.filename, p.start.line + self.first_line - 1, p.start.column + self.col_shift + 1
        )

    def alias(self, new, old):
        """Report errors about ``new`` (a node the compiler built) at ``old``'s position."""
        self._aliases[id(new)] = old

    def line_text(self, line):
        return linecache.getline(self.filename, line) or _nth_line(
            self.text, line - self.first_line + 1
        )


def _nth_line(text, n):
    lines = text.splitlines()
    return lines[n - 1] if 0 < n <= len(lines) else ""


def _safe_dedent(text):
    """Dedent by the first line's indentation only: a string literal at column 0 inside the
    function would make ``textwrap.dedent`` do nothing."""
    first = text.split("\n", 1)[0]
    indent = len(first) - len(first.lstrip())
    if not indent:
        return text, 0
    out = []
    for line in text.split("\n"):
        out.append(line[indent:] if line[:indent].isspace() else line)
    return "\n".join(out), indent


def get_source(fn):
    """Return a ``Source`` for a plain Python function or lambda, or raise ``NoSourceError``."""
    while isinstance(getattr(fn, "__wrapped__", None), types.FunctionType):
        fn = fn.__wrapped__  # functools.wraps: inspect reads the wrapped function's source
    code = getattr(fn, "__code__", None)
    if code is None:
        raise NoSourceError(
            f"{fn!r} has no Python source to differentiate (it is a builtin or C function). "
            "Register an adjoint rule for it with @sourcegrad.adjoint instead."
        )
    filename = code.co_filename
    try:
        lines, first_line = _source_lines(fn)
    except (OSError, TypeError) as e:
        raise NoSourceError(
            f"cannot read the source of {getattr(fn, '__qualname__', fn)!r} (defined in {filename}): {e}. "
            "sourcegrad reads a function's source, so it cannot differentiate functions made by "
            "exec/eval or typed at an interactive prompt; put the function in a file."
        ) from None
    text = "".join(lines)
    if fn.__name__ == "<lambda>":
        return _lambda_source(fn, text, filename, first_line)
    text, shift = _safe_dedent(text)
    module = cst.parse_module(text)
    fdef = next((s for s in module.body if isinstance(s, cst.FunctionDef)), None)
    _check_same_function(fn, fdef, filename, first_line)
    _check_same_code(fn, lines, filename, first_line)
    src = Source(fn, fdef, text, filename, first_line, shift)
    src._module = module
    src.tree = fdef  # the original node: positions are resolved on the original module
    _index_statement_lines(src, fdef, text)
    return src


def _source_lines(fn):
    """``inspect.getsourcelines(fn)``, with the end of the function found from its code's positions
    (the last line any of its instructions covers) rather than by running Python's pure-Python
    tokenizer over the body, a tenth of a compile. Where the lines after that last one could hide
    a continued string or bracket, ``inspect``'s own block finder decides."""
    if fn.__name__ == "<lambda>" or inspect.unwrap(fn) is not fn:
        return inspect.getsourcelines(fn)
    lines, start = inspect.findsource(fn)
    block = _block(lines, start, fn.__code__)
    return (inspect.getblock(lines[start:]) if block is None else block), start + 1


def _block(lines, start, code):
    """``lines[start:]`` up to the end of the function whose header is at ``start`` (the first
    line of its decorators), as ``inspect.getblock`` finds it, or None when unsure."""
    last = _last_line(code)
    if last is None or last > len(lines):
        return None
    header = next(
        (k for k in range(start, last) if lines[k].lstrip().startswith(("def ", "async def "))),
        None,
    )
    if header is None or last <= header + 1:
        return None  # no instruction after the header's first line: an empty body, or not this file's code
    indent = _indent(lines[start])
    end = last
    for k in range(last, len(lines)):
        line = lines[k]
        stripped = line.strip()
        if not stripped:
            continue
        deeper = _indent(line) > indent
        if stripped[0] == "#":
            end = k + 1 if deeper else end
            continue
        if not deeper:
            return None if stripped[0] in ")]}" else lines[start:end]
        if any(c in line for c in "'\"([{\\"):
            return None  # a statement with no instructions (a string, an annotation) may continue
        end = k + 1
    return lines[start:end]


def _last_line(code):
    """The last line any instruction of ``code`` or of the functions in it covers, or None when
    positions are not recorded (``python -X no_debug_ranges``, or Python 3.10, whose code objects
    have no ``co_positions``: ``inspect`` finds the end there)."""
    if not hasattr(code, "co_positions"):
        return None
    last = code.co_firstlineno
    for line, end, _, _ in code.co_positions():
        if end is None and line is not None:
            return None
        if end is not None and end > last:
            last = end
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            inner = _last_line(c)
            if inner is None:
                return None
            last = max(last, inner)
    return last


def _indent(line):
    return len(line) - len(line.lstrip())


def _check_same_function(fn, fdef, filename, line):
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


def _check_same_code(fn, lines, filename, first_line):
    """Refuse source text that does not compile to the function's own code (the file was edited
    after import, keeping the signature): sourcegrad would differentiate the new text while Python
    runs the old code. Formatting and comments may differ; instructions, names and constants may
    not. Where the function's scope cannot be rebuilt, the name and parameter check stands."""
    compiled = _compile_in_scope(fn, lines)
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


def _compile_in_scope(fn, lines, lam=False):
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


def _same_code(a, b):
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
        return _same_code(x, y)
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
    if _same_code(new, old):
        return None
    base = line = new.co_firstlineno
    a, b = _instructions(new), _instructions(old)
    for (x, x_line), (y, _) in zip(a, b):
        line = x_line or line
        if x != y:
            return line - base + 1
    return line - base + 1


def _index_statement_lines(src, fdef, text):
    """Map each libcst statement of the function to its (line, col) through the ast tree."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    afn = next(
        (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None
    )
    if afn is None:
        return
    src.ast_fn = afn
    src._stmt_lines[id(fdef)] = (afn.lineno, afn.col_offset)
    _pair_blocks(src._stmt_lines, fdef.body, afn.body)


def _pair_blocks(table, block, astmts):
    it = iter(astmts)
    body = block.body if hasattr(block, "body") else block
    if isinstance(body, cst.BaseSuite):
        body = body.body
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                a = next(it, None)
                if a is None:
                    return
                table[id(small)] = (a.lineno, a.col_offset)
                table.setdefault(id(stmt), (a.lineno, a.col_offset))
        elif isinstance(block, cst.SimpleStatementSuite) or isinstance(
            stmt, cst.BaseSmallStatement
        ):
            a = next(it, None)
            if a is None:
                return
            table[id(stmt)] = (a.lineno, a.col_offset)
        else:
            a = next(it, None)
            if a is None:
                return
            table[id(stmt)] = (a.lineno, a.col_offset)
            _pair_compound(table, stmt, a)


def _pair_compound(table, stmt, a):
    if isinstance(stmt, (cst.For, cst.While, cst.With, cst.FunctionDef)):
        _pair_blocks(table, stmt.body, a.body)
        orelse = getattr(stmt, "orelse", None)
        if orelse is not None and getattr(a, "orelse", None):
            _pair_blocks(table, orelse.body, a.orelse)
    elif isinstance(stmt, cst.If):
        _pair_blocks(table, stmt.body, a.body)
        if isinstance(stmt.orelse, cst.If) and a.orelse:
            table[id(stmt.orelse)] = (a.orelse[0].lineno, a.orelse[0].col_offset)
            _pair_compound(table, stmt.orelse, a.orelse[0])
        elif isinstance(stmt.orelse, cst.Else):
            _pair_blocks(table, stmt.orelse.body, a.orelse)


def _lambda_source(fn, text, filename, first_line):
    """Cut the one lambda whose code matches ``fn`` out of its source lines."""
    dedented, shift = _safe_dedent(text)
    candidates = _lambda_candidates(dedented)
    checked = [(c, _lambda_matches(c[0], fn)) for c in candidates]
    match = [c for c, same in checked if same]
    # no scope to compile in: by its parameters
    if not match and all(same is None for _, same in checked):
        match = [
            c
            for c in candidates
            if _arg_names(c[0]) == fn.__code__.co_varnames[: fn.__code__.co_argcount]
        ]
    elif not match:
        raise NoSourceError(
            f"the source of {fn!r} on {filename}:{first_line} is not the code Python runs: the file was edited "
            f'after the lambda was defined.\n  File "{filename}", line {first_line}\n    {text.strip()}\n'
            "hint: re-import (or importlib.reload) the module, then differentiate again"
        )
    if len({m[0] for m in match}) == 1:
        match = match[:1]  # the same lambda written twice on one line: either will do
    if len(match) != 1:
        raise NoSourceError(
            f"cannot tell which lambda on {filename}:{first_line} is {fn!r}; "
            "give it a name with def so sourcegrad can read its source."
        )
    lam_text, line, col = match[0]
    args = ", ".join(_arg_names(lam_text))
    body, body_offset = _lambda_body(lam_text)
    prefix = f"def _lambda({args}): return "
    module = cst.parse_module(prefix + body + "\n")
    fdef = module.body[0]
    # columns in the synthetic def map back onto the lambda's body in the user's line
    src = Source(
        fn,
        fdef,
        prefix + body + "\n",
        filename,
        first_line + line - 1,
        shift + col + body_offset - len(prefix),
    )
    src._module = module
    src._stmt_lines[id(fdef)] = (1, len(prefix) - body_offset)
    src.ast_fn = ast.parse(prefix + body + "\n").body[0]
    for small in fdef.body.body:
        src._stmt_lines[id(small)] = (1, len(prefix))
    return src


def _lambda_candidates(text):
    """(source of the lambda, line, col) for every lambda in ``text``.

    The text around a lambda need not parse on its own (``x = f(lambda a: a,`` spanning lines,
    ``try: g(lambda ...)``), so each occurrence of ``lambda`` is grown to the longest stretch
    that parses as a lambda expression."""
    out = []
    for m in re.finditer(r"\blambda\b", text):
        start = m.start()
        for end in range(len(text), start, -1):
            seg = text[start:end]
            try:
                node = ast.parse(seg.strip(), mode="eval").body
            except SyntaxError:
                continue
            if isinstance(node, ast.Lambda):
                line = text.count("\n", 0, start) + 1
                col = start - (text.rfind("\n", 0, start) + 1)
                out.append((seg.strip(), line, col))
                break
    return out


def _lambda_body(lam_text):
    """The body's text (on one line) and its column within the lambda's text."""
    node = ast.parse(lam_text, mode="eval").body
    return ast.get_source_segment(lam_text, node.body).replace("\n", " "), node.body.col_offset


def _arg_names(lam_text):
    node = ast.parse(lam_text, mode="eval").body
    return tuple(a.arg for a in node.args.args)


def _lambda_matches(lam_text, fn):
    """Does the lambda's text compile (in the function's scope) to ``fn``'s code? None when the
    scope cannot be rebuilt."""
    compiled = _compile_in_scope(fn, [lam_text], lam=True)
    return None if compiled is None else _same_code(compiled, fn.__code__)
