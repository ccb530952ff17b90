"""Command line: ``python -m sourcegrad show path/to/file.py:function [--wrt 0,1] [--vjp]``.

Prints the code sourcegrad generates for the function (colored when writing to a terminal).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import keyword
import os
import sys
import tokenize

from . import api

_COLORS = {"keyword": "\033[35m", "comment": "\033[90m", "string": "\033[32m", "number": "\033[36m", "def": "\033[1;34m"}
_RESET = "\033[0m"


def _load(spec):
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise SystemExit(f"expected path/to/file.py:function, got {spec!r}")
    if not os.path.exists(path):
        raise SystemExit(f"no such file: {path}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    mod_spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[mod_spec.name] = module
    mod_spec.loader.exec_module(module)
    obj = module
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise SystemExit(f"{path} has no function {name!r}")
    return getattr(obj, "fn", obj)  # already decorated with @grad: show that function


def _wrt(text):
    items = [int(t) if t.lstrip("-").isdigit() else t for t in text.split(",")]
    return items[0] if len(items) == 1 else tuple(items)


def highlight(code):
    """ANSI colors for Python source, using only the tokenizer."""
    out = []
    last = (1, 0)
    lines = code.splitlines(True)
    prev_name = None
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.ENDMARKER:
            break
        (sr, sc), (er, ec) = tok.start, tok.end
        if (sr, sc) > last:
            out.append(_span(lines, last, (sr, sc)))
        text = tok.string
        color = None
        if tok.type == tokenize.COMMENT:
            color = "comment"
        elif tok.type == tokenize.STRING:
            color = "string"
        elif tok.type == tokenize.NUMBER:
            color = "number"
        elif tok.type == tokenize.NAME and keyword.iskeyword(text):
            color = "keyword"
        elif tok.type == tokenize.NAME and prev_name == "def":
            color = "def"
        out.append(f"{_COLORS[color]}{text}{_RESET}" if color else text)
        if tok.type == tokenize.NAME:
            prev_name = text
        last = (er, ec)
    return "".join(out)


def _span(lines, a, b):
    (ar, ac), (br, bc) = a, b
    if ar == br:
        return lines[ar - 1][ac:bc]
    return lines[ar - 1][ac:] + "".join(lines[ar:br - 1]) + lines[br - 1][:bc]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sourcegrad", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print the generated gradient code of a function")
    show.add_argument("target", help="path/to/file.py:function")
    show.add_argument("--wrt", default="0", help="argument indices or names, comma-separated (default 0)")
    show.add_argument("--vjp", action="store_true", help="show the vjp form (value and pullback)")
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    args = parser.parse_args(argv)
    fn = _load(args.target)
    made = (api.vjp if args.vjp else api.value_and_grad)(fn, wrt=_wrt(args.wrt))
    code = api.source(made)
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
    sys.stdout.write(highlight(code) if color else code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
