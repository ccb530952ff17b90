"""Deny by default: the catalogue of what the compiler refuses, and how to say so.

The normalizer handles an explicit list of libcst node kinds; everything else reaches
``refuse``, which raises ``UnsupportedSyntaxError`` located at the user's file, line and column,
with the source line, a caret and a hint. ``HINTS`` holds the message for each refused kind, so
a user meets one consistent voice whatever they wrote.
"""

from __future__ import annotations

import libcst as cst

from sourcegrad.errors import MissingAdjointError, UnsupportedSyntaxError

HINTS = {
    "Yield": (
        "generators (yield) cannot be differentiated",
        "return a value instead of yielding it",
    ),
    "Await": ("await cannot be differentiated", "differentiate a plain (not async) function"),
    "Global": (
        "global declarations cannot be differentiated",
        "pass the value in as an argument and return the new value",
    ),
    "Nonlocal": (
        "nonlocal declarations cannot be differentiated",
        "pass the value in as an argument and return the new value",
    ),
    "TryStar": (
        "try/except* cannot be differentiated",
        "catch the exceptions with a plain except",
    ),
    "With": (
        "this with block cannot be differentiated: supported are `with sourcegrad.no_grad():`, "
        "context managers that carry no gradient (np.errstate, warnings.catch_warnings, "
        "contextlib.nullcontext, np.printoptions) and contextlib.suppress",
        "move the with block out of the differentiated function",
    ),
    "ClassDef": (
        "class definitions inside a differentiated function are not supported",
        "define the class at module level",
    ),
    "Del": ("del cannot be differentiated", "let the variable go out of use instead"),
    "Import": (
        "import inside a differentiated function is not supported",
        "import at module level",
    ),
    "ImportFrom": (
        "import inside a differentiated function is not supported",
        "import at module level",
    ),
    "Lambda": (
        "a lambda inside a differentiated function is supported only when assigned to a name and called",
        "name it and call it (h = lambda t: ...; h(x)), or define the function with def at module level",
    ),
    "NamedExpr": (
        "the walrus operator := is not supported in a loop's range",
        "assign the value in a statement of its own before the loop",
    ),
    "SetComp": ("set comprehensions cannot be differentiated", "use a list and a for loop"),
    "Starred": ("*args unpacking in calls is not supported", "pass the arguments one by one"),
    "Dict": (
        "a dict literal is supported only when assigned to a local name, with string-constant keys",
        'write d = {"a": x} and read d["a"], or pass arrays as separate arguments',
    ),
    "Set": ("set literals cannot be differentiated", "use a tuple"),
    "AsyncFunctionDef": (
        "async functions cannot be differentiated",
        "differentiate a plain function",
    ),
    "Ellipsis": ("... is only allowed inside an index", "write the value out"),
    "Subscript": (
        "only a plain variable can be indexed and assigned to",
        "assign the indexed value to a variable first",
    ),
}


def refuse(src, node, kind=None, msg=None, hint=None):
    """Raise ``UnsupportedSyntaxError`` for ``node``, located in the user's source."""
    kind = kind or type(node).__name__
    default_msg, default_hint = HINTS.get(
        kind, (f"{_describe(node)} is not supported by sourcegrad", None)
    )
    raise located(
        UnsupportedSyntaxError,
        src,
        node,
        f"{msg or default_msg} (in {src.fn.__qualname__})",
        hint or default_hint,
    )


def missing_adjoint(src, node, callee, name):
    raise located(
        MissingAdjointError,
        src,
        node,
        f"no adjoint rule for {name} (called in {src.fn.__qualname__})",
        f"register one with\n    @sourcegrad.adjoint({name})\n    def _(result, *args):\n"
        "        d[args] += ...\nor wrap the value in sourcegrad.stop_gradient(...) if no gradient should flow through it",
    )


def located(cls, src, where, msg, hint):
    """An error of class ``cls`` at ``where`` (a libcst node or an ``ir.Pos``) in the user's file."""
    pos = where if hasattr(where, "line") and hasattr(where, "filename") else src.pos_of(where)
    error = cls(
        msg,
        filename=pos.filename,
        lineno=pos.line,
        offset=pos.col,
        text=src.line_text(pos.line),
        hint=hint,
    )
    error.where = (
        where  # the code it is about (a branch that holds it may be deferred: deferral.py)
    )
    return error


def _describe(node):
    name = type(node).__name__
    if isinstance(node, cst.BaseSmallStatement) or isinstance(node, cst.BaseCompoundStatement):
        return f"the {name} statement"
    return f"the {name} expression"
