"""The function's lines as ``inspect.getsourcelines`` finds them, without its tokenizer: the end
of the block comes from the code's positions (``source._source_lines``), and ``inspect`` decides
wherever the lines after the last instruction could continue a string or a bracket."""

import ast
import dataclasses
import importlib.util
import inspect
import json.decoder
import textwrap
import types

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.transforms import source

TRICKY = textwrap.dedent('''
    import functools

    import numpy as np


    def plain(x):
        return np.sum(x * x)


    def deco(f):
        return f


    @deco
    @deco
    def decorated(x):
        return np.sum(x)


    def trailing_comments(x):
        y = x * 2.0
        return np.sum(y)
        # indented: inspect keeps it
    # at the margin: inspect drops it


    def dead_code_after_return(x):
        return np.sum(x)
        pass


    def string_after_return(x):
        return np.sum(x)
        """a string with no instructions,
    at the margin"""


    def bracket_at_margin(x):
        return np.sum(
            x
    )


    def annotation_at_margin(x):
        return np.sum(x)
        y: dict[
    str, int]


    def continued(x, w):
        y = x * \\
            w
        return np.sum(y)


    def only_a_docstring(x):
        """Nothing else."""


    def only_pass(x):
        pass


    def one_line(x): return np.sum(x)


    def nested(x):
        def inner(y):
            return y * 2.0
        return np.sum(inner(x))


    class Holder:
        def method(self, x):
            return np.sum(x)

        @staticmethod
        def static(x):
            return np.sum(x * 3.0)


    def last(x):
        return np.sum(x)
''')


@pytest.fixture(scope="module")
def tricky(tmp_path_factory):
    path = tmp_path_factory.mktemp("lines") / "tricky_lines.py"
    path.write_text(TRICKY)
    spec = importlib.util.spec_from_file_location("tricky_lines", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _functions(module):
    for v in vars(module).values():
        if isinstance(v, types.FunctionType) and v.__module__ == module.__name__:
            yield v
        elif isinstance(v, type) and v.__module__ == module.__name__:
            for w in vars(v).values():
                w = getattr(w, "__func__", w)
                if isinstance(w, types.FunctionType):
                    yield w


def _code_lines(lines):
    return [line for line in lines if not line.strip().startswith("#")]


def _same_as_inspect(fn):
    try:
        want, want_first = inspect.getsourcelines(fn)
    except OSError:  # made by exec: no source either way
        with pytest.raises(OSError):
            source._source_lines(fn)
        return
    got, first = source._source_lines(fn)
    # a trailing comment between the def's and the body's indentation may differ: it is not code
    assert (_code_lines(got), first) == (_code_lines(want), want_first), fn.__qualname__


def test_tricky_layouts_give_inspects_lines(tricky):
    names = [f.__qualname__ for f in _functions(tricky)]
    assert len(names) == 16
    for fn in _functions(tricky):
        _same_as_inspect(fn)


@pytest.mark.parametrize("module", [ast, dataclasses, inspect, json.decoder, source])
def test_library_functions_give_inspects_lines(module):
    functions = list(_functions(module))
    assert functions
    for fn in functions:
        _same_as_inspect(fn)


def test_unsure_endings_are_left_to_inspect(tricky, monkeypatch):
    asked = []
    real = inspect.getblock
    monkeypatch.setattr(inspect, "getblock", lambda lines: asked.append(1) or real(lines))
    for name in ("string_after_return", "annotation_at_margin", "only_a_docstring", "one_line"):
        before = len(asked)
        source._source_lines(getattr(tricky, name))
        assert len(asked) == before + 1, name
    before = len(asked)
    clear = ("plain", "decorated", "trailing_comments", "bracket_at_margin", "continued", "nested")
    for name in clear:
        source._source_lines(getattr(tricky, name))
    # Python 3.10's code objects record no end positions: there inspect finds every end
    assert len(asked) == before + (
        0 if hasattr(tricky.plain.__code__, "co_positions") else len(clear)
    )


def test_gradients_of_the_tricky_layouts(tricky):
    x = np.array([0.5, -1.0, 2.0])
    for name in ("plain", "decorated", "trailing_comments", "bracket_at_margin", "nested", "last"):
        f = getattr(tricky, name)
        np.testing.assert_allclose(
            sg.grad(f)(x), _central(f, x), rtol=1e-6, atol=1e-8, err_msg=name
        )


def test_the_whole_body_is_read(tricky):
    """The line after ``return`` is part of the function: refused as dead code, at its line."""
    with pytest.raises(sg.errors.UnsupportedSyntaxError, match="never run") as e:
        sg.grad(tricky.dead_code_after_return)(np.ones(3))
    assert e.value.lineno == TRICKY.splitlines().index("    pass") + 1


def _central(f, x, h=1e-6):
    """Central differences, independent of the compiler."""
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out
