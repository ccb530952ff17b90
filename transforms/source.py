"""Find a function's source and parse it with libcst.

Guarantees: the returned tree is a libcst ``FunctionDef`` (lambdas are rewritten into an
equivalent one-line ``def``), with decorators removed, and a ``Locator`` that maps libcst nodes
back to the user's file, line and column. The text is the source of the code Python runs: it is
compiled where the function was (inside scopes that bind its free variables, in a class of its
class's name) and compared with the function's code object (``sourcecheck.py``), so a file
edited after import is refused rather than differentiated in place of the code that runs. A
``functools.wraps`` wrapper is read as the function it wraps (``inspect`` shows that source).
Statement lines come from a parallel walk of the stdlib ``ast`` tree (cheap); expression columns
come from libcst's ``PositionProvider``, computed only when an error needs one.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
import textwrap
import types
import weakref

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from sourcegrad.errors import NoSourceError, UnsupportedSyntaxError

from .ir import Pos
from .sourcecheck import check_same_code, check_same_function, compile_in_scope, same_code


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

    def again(self, fn):
        """A ``Source`` of ``fn`` (whose code is this one's) for another compile: the trees, the
        text and the statements' lines shared (nothing changes them), the nodes a compile builds
        (``alias``) its own."""
        new = Source(fn, self.tree, self.text, self.filename, self.first_line, self.col_shift)
        new._module, new._stmt_lines, new.ast_fn = self._module, self._stmt_lines, self.ast_fn
        new._positions = self._positions
        return new

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

    def has_node(self, node):
        """Is ``node`` (a libcst node) one of this function's own (not a helper's)?"""
        node = self._aliases.get(id(node), node)
        if id(node) in self._stmt_lines:
            return True
        if self._positions is None:
            wrapper = MetadataWrapper(self._module, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        return node in self._positions

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


# id of a code object -> (a weak reference to it, the Source first read for it). The text was
# checked to compile to that code, so a later compile of a function running it (another argument
# signature, a captured value that changed, the general code for ``sourcegrad.source``, a helper
# inlined again) reads it again without parsing, and without rereading a file edited since. By
# identity, not by ``==``: equal code objects may come from two files. Dropped with the code.
_READ = {}


def unwrap(fn):
    """The function a chain of ``functools.wraps`` wrappers ends at (``inspect`` shows its
    source), each wrapper checked to add nothing to it."""
    while isinstance(getattr(fn, "__wrapped__", None), types.FunctionType):
        _check_passes_through(fn)
        fn = fn.__wrapped__
    return fn


def _check_passes_through(wrapper):
    """Refuse a ``functools.wraps`` wrapper that computes more than a call of the function it
    wraps (a decorator that scales, clips or logs the value): ``inspect`` shows the wrapped
    function's source, and differentiating that alone would silently drop what the wrapper does.
    A wrapper that only returns ``wrapped(*args, **kwargs)`` (or passes its own parameters on in
    order) is the wrapped function."""
    try:
        lines, first = inspect.getsourcelines(wrapper.__code__)  # the wrapper's own code
        fdef = ast.parse(textwrap.dedent("".join(lines))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        fdef, first = None, wrapper.__code__.co_firstlineno
    if isinstance(fdef, ast.FunctionDef) and _forwards(fdef, wrapper):
        return
    filename = wrapper.__code__.co_filename
    body = getattr(fdef, "body", None)
    lineno = first + body[0].lineno - 1 if body else first
    name = getattr(wrapper, "__qualname__", wrapper.__name__)
    raise UnsupportedSyntaxError(
        f"{name} is decorated with a functools.wraps wrapper "
        f"({wrapper.__code__.co_name}) that does more than call it: sourcegrad differentiates "
        "source it reads, and the wrapped function alone would give the gradient without what "
        "the wrapper computes",
        filename,
        lineno,
        None,
        linecache.getline(filename, lineno),
        hint=f"differentiate the undecorated function ({name}.__wrapped__) and apply the "
        "wrapper's computation in a function sourcegrad reads",
    )


def _forwards(fdef, wrapper):
    """Is ``fdef``'s body (a docstring aside) ``return wrapped(<its parameters, as received>)``?"""
    body = fdef.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    call = body[0].value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return False
    code = wrapper.__code__
    cells = dict(zip(code.co_freevars, wrapper.__closure__ or ()))
    name = call.func.id
    callee = cells[name].cell_contents if name in cells else wrapper.__globals__.get(name)
    if callee is not wrapper.__wrapped__:
        return False
    a = fdef.args
    if a.posonlyargs or a.kwonlyargs or a.defaults or a.kw_defaults:
        return False
    want = [ast.dump(ast.Name(p.arg, ast.Load())) for p in a.args]
    if a.vararg:
        want.append(ast.dump(ast.Starred(ast.Name(a.vararg.arg, ast.Load()), ast.Load())))
    got = [ast.dump(x) for x in call.args]
    keywords = [(k.arg, ast.dump(k.value)) for k in call.keywords]
    want_keywords = [(None, ast.dump(ast.Name(a.kwarg.arg, ast.Load())))] if a.kwarg else []
    return got == want and keywords == want_keywords


def get_source(fn):
    """Return a ``Source`` for a plain Python function or lambda, or raise ``NoSourceError``."""
    fn = unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        raise NoSourceError(
            f"{fn!r} has no Python source to differentiate (it is a builtin or C function). "
            "Register an adjoint rule for it with @sourcegrad.adjoint instead."
        )
    key = id(code)
    known = _READ.get(key)
    if known is None or known[0]() is not code:
        read = _read(fn, code)
        read.fn = None  # (the function would keep its code alive)
        _READ[key] = known = (weakref.ref(code, lambda _, key=key: _READ.pop(key, None)), read)
    return known[1].again(fn)


def _read(fn, code):
    """``get_source`` of ``fn``, parsed and checked."""
    filename = code.co_filename
    try:
        if filename in ("<string>", "<stdin>"):  # (Python 3.13's linecache may hold another text)
            raise OSError("could not get source code")
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
    check_same_function(fn, fdef, filename, first_line)
    check_same_code(fn, lines, filename, first_line)
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
    compiled = compile_in_scope(fn, [lam_text], lam=True)
    return None if compiled is None else same_code(compiled, fn.__code__)
