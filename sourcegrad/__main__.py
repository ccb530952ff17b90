"""Command line: ``python -m sourcegrad show path/to/file.py:function [--wrt 0,1] [--vjp] [--shapes 3x4,4] [--html]``.

Prints the code sourcegrad generates for the function (colored when writing to a terminal): the
general code, or with ``--shapes`` the code specialized for arguments of those shapes, which is
what a call with such arrays runs. ``--shapes`` lists the positional arguments in order, then
``name=shape`` for keyword-only parameters (``3x4,scale=float``); those not named take their
defaults. For a method (``file.py:Class.method``) ``--wrt`` and ``--shapes`` count the arguments
after ``self``.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import io
import keyword
import os
import sys
import tokenize
import types

import numpy as np

from . import api, compiled
from .errors import SourcegradError

_COLORS = {
    "keyword": "\033[35m",
    "comment": "\033[90m",
    "string": "\033[32m",
    "number": "\033[36m",
    "def": "\033[1;34m",
}
_RESET = "\033[0m"
_TOKEN_COLORS = {tokenize.COMMENT: "comment", tokenize.STRING: "string", tokenize.NUMBER: "number"}


class CommandError(Exception):
    """A target, option or value the command line cannot use; printed as one line, no traceback."""


class Target:
    """The function named on the command line, and whether it is a method taking ``self`` first."""

    def __init__(self, fn, method=False, wrt=None):
        self.fn = fn
        self.method = method
        self.wrt = wrt  # the wrt of a function already decorated with @grad, if any


def load(spec):
    """The ``Target`` that ``path/to/file.py:name`` (or ``:Class.method``) names; runs the file."""
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise CommandError(f"expected path/to/file.py:function, got {spec!r}")
    if not os.path.isfile(path):
        raise CommandError(f"no such file: {path}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    mod_spec = importlib.util.spec_from_file_location(
        os.path.splitext(os.path.basename(path))[0], path
    )
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[mod_spec.name] = module
    mod_spec.loader.exec_module(module)
    owner, obj = None, module
    for part in name.split("."):
        owner, obj = obj, getattr(obj, part, None)
        if obj is None:
            raise CommandError(f"{path} has no {name!r}")
    if isinstance(obj, compiled._Compiled):  # already decorated with @grad: show that function
        return Target(obj.fn, wrt=obj.wrt)
    if isinstance(obj, types.MethodType):  # a classmethod: cls comes first, as self does
        return Target(obj.__func__, method=True)
    last = name.rpartition(".")[2]
    method = isinstance(owner, type) and isinstance(
        inspect.getattr_static(owner, last, None), types.FunctionType
    )
    return Target(obj, method=method)


def parse_wrt(text):
    """``0,1`` -> (0, 1); ``w1`` -> "w1"; ``-1`` -> -1."""
    items = [int(t) if t.strip().lstrip("-").isdigit() else t.strip() for t in text.split(",")]
    return items[0] if len(items) == 1 else tuple(items)


def method_wrt(fn, wrt):
    """``wrt`` as given for a method (counting after ``self``), as it indexes ``fn``'s parameters."""
    items = list(wrt) if isinstance(wrt, tuple) else [wrt]
    self_name = api.parameters_of(fn)[0] if api.parameters_of(fn) else "self"
    if self_name in items:
        raise CommandError(
            f"--wrt {self_name}: {fn.__qualname__} is a method, and {self_name} is the instance, "
            f"not an array; --wrt counts the arguments after {self_name}"
        )
    shifted = [w + 1 if isinstance(w, int) and w >= 0 else w for w in items]
    return tuple(shifted) if isinstance(wrt, tuple) else shifted[0]


def example_argument(text):
    """An argument of the shape a ``--shapes`` item names: ``3x4`` a (3, 4) array of ones, ``5`` a
    (5,) array, ``()`` a 0-d array, ``float`` or ``int`` a Python number."""
    text = text.strip()
    if text in ("float", "int"):
        return 1.0 if text == "float" else 1
    if text == "()":
        return np.ones(())
    dims = text.split("x")
    if not all(d.isdigit() for d in dims):
        raise CommandError(
            f"--shapes item {text!r} is not a shape: write 3x4 for a (3, 4) array, 5 for a (5,) "
            "array, () for a 0-d array, float or int for a Python number"
        )
    return np.ones(tuple(int(d) for d in dims))


def examples(target, text):
    """The example arguments ``--shapes`` describes, checked against the function's parameters:
    ``(args, kwargs)``. Items in order are the positional parameters (after ``self`` for a
    method); ``name=item`` gives a keyword-only parameter (one not given takes its default)."""
    fn, skip = target.fn, (1 if target.method else 0)
    code = fn.__code__
    params = list(code.co_varnames[skip : code.co_argcount])
    kwonly = list(code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount])
    args, kwargs = [], {}
    for item in text.split(","):
        name, named, shape = item.partition("=")
        if not named:
            if kwargs:
                raise CommandError(
                    f"--shapes item {item.strip()!r} comes after a named one: list the positional "
                    "arguments first, then name=shape for keyword-only ones"
                )
            args.append(example_argument(item))
        elif name.strip() not in kwonly:
            raise CommandError(
                f"--shapes names {name.strip()!r}, which is not a keyword-only parameter of "
                f"{fn.__qualname__} ({', '.join(kwonly) or 'it has none'}): give the positional "
                "arguments in order, without names"
            )
        else:
            kwargs[name.strip()] = example_argument(shape)
    required = len(params) - len(fn.__defaults__ or ())
    if not required <= len(args) <= len(params):
        takes = required if required == len(params) else f"{required} to {len(params)}"
        raise CommandError(
            f"--shapes gives {len(args)} argument(s); {fn.__qualname__} takes {takes}: "
            f"{', '.join(params)}" + (f" (and by name: {', '.join(kwonly)})" if kwonly else "")
        )
    missing = [k for k in kwonly if k not in kwargs and k not in (fn.__kwdefaults__ or {})]
    if missing:
        raise CommandError(
            f"--shapes gives no {missing[0]}, a keyword-only parameter of {fn.__qualname__} without "
            f"a default: add {missing[0]}=SHAPE (e.g. {missing[0]}=float)"
        )
    return (
        [None] if target.method else []
    ) + args, kwargs  # no instance is needed to compile for a method


def generated(target, wrt_text=None, vjp=False, shapes=None, as_html=False):
    """The source ``show`` prints (``as_html``: the page of ``sourcegrad.notebook``, the function
    beside its generated code)."""
    wrt = (
        parse_wrt(wrt_text)
        if wrt_text is not None
        else (target.wrt if target.wrt is not None else 0)
    )
    if target.method:
        wrt = method_wrt(target.fn, wrt)
    made = (api.vjp if vjp else api.value_and_grad)(target.fn, wrt=wrt)
    args, kwargs = examples(target, shapes) if shapes is not None else ((), {})
    if as_html:
        from .notebook import page

        return page(made, *args, **kwargs)
    return api.source(made, *args, **kwargs)


def highlight(code):
    """ANSI colors for Python source, using only the tokenizer. Removing the color codes gives back
    ``code`` exactly: only the colored tokens are wrapped, the text between them is copied."""
    lines = io.StringIO(code).readlines()  # the lines the tokenizer numbers
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(pos):  # tokenize ends with DEDENT/ENDMARKER tokens past the last line
        row, col = pos
        return min(starts[row - 1] + col, len(code)) if row <= len(lines) else len(code)

    out, last, prev_name = [], 0, None
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        color = _token_color(tok, prev_name)
        if tok.type == tokenize.NAME:
            prev_name = tok.string
        start, end = offset(tok.start), offset(tok.end)
        if color is None or start >= end:
            continue
        out.append(code[last:start] + _COLORS[color] + code[start:end] + _RESET)
        last = end
    out.append(code[last:])
    return "".join(out)


def _token_color(tok, prev_name):
    if tok.type != tokenize.NAME:
        return _TOKEN_COLORS.get(tok.type)
    if keyword.iskeyword(tok.string):
        return "keyword"
    return "def" if prev_name == "def" else None


def parser():
    p = argparse.ArgumentParser(prog="python -m sourcegrad", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print the generated gradient code of a function")
    show.add_argument("target", help="path/to/file.py:function, or path/to/file.py:Class.method")
    show.add_argument(
        "--wrt",
        default=None,
        help="argument indices or names, comma-separated (default 0; a method's count after self)",
    )
    show.add_argument("--vjp", action="store_true", help="show the vjp form (value and pullback)")
    show.add_argument(
        "--shapes",
        default=None,
        metavar="3x4,4",
        help="show the code specialized for arguments of these shapes (what such a call runs): "
        "one item per positional argument, then name=item for keyword-only ones; 3x4 an "
        "array, () a 0-d array, float or int a number",
    )
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    show.add_argument(
        "--html",
        action="store_true",
        help="write an HTML page instead: the function beside its generated code, each generated "
        "line linked to the line it comes from (python -m sourcegrad show f.py:loss --html > loss.html)",
    )
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        code = generated(load(args.target), args.wrt, args.vjp, args.shapes, args.html)
    except (CommandError, SourcegradError) as e:
        print(f"python -m sourcegrad: error: {e}", file=sys.stderr)
        return 1
    if args.html:
        sys.stdout.write(code)
        return 0
    color = args.color == "always" or (
        args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    )
    sys.stdout.write(highlight(code) if color else code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
