"""The command line: ``python -m sourcegrad show file.py:function`` on a terminal and in a pipe,
with bad targets and options, on methods, and with ``--shapes``."""

import itertools
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.__main__ import highlight, main

ROOT = pathlib.Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\033\[[0-9;]*m")

MODEL = """
import numpy as np


def loss(w, x):
    h = np.tanh(x @ w)
    if np.sum(h) > 0:
        for i in range(3):
            h = h * 2.0
    return np.sum(h * h)


def broadcast(w, b):
    return np.sum(np.tanh(w + b))


def with_default(w, scale=2.0):
    return np.sum(w * w) * scale


def keyword_only(w, *, scale=2.0, shift):
    return np.sum(w * w) * scale + shift


def unsupported(w):
    global LAST
    LAST = w
    y = np.sum(w)
    return y


class Model:
    def loss(self, w, x):
        return np.sum(np.tanh(x @ w))

    @staticmethod
    def static_loss(w, x):
        return np.sum(w * x)

    @classmethod
    def class_loss(cls, w, x):
        return np.sum(w * x)


NOT_A_FUNCTION = 3
"""


_MODULE_NUMBERS = itertools.count()


@pytest.fixture
def model(tmp_path):
    """A user's file, imported by the command under a name of its own; sys.path and sys.modules
    are restored afterwards."""
    name = f"cli_model_{next(_MODULE_NUMBERS)}"  # (not the test's name: it would show in the code)
    path = tmp_path / f"{name}.py"
    path.write_text(MODEL)
    saved = list(sys.path)
    yield str(path)
    sys.path[:] = saved
    sys.modules.pop(name, None)


def show(capsys, *argv):
    rc = main(["show", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def user_module(path):
    return sys.modules[pathlib.Path(path).stem]


# ---- the highlighter ---------------------------------------------------------------------------

SOURCES = [
    "def f(x):\n    return x\n",
    "def f(x):\n    if x:\n        for i in y:\n            z = 1\n    return x",  # ends in DEDENTs, no newline
    "x = 1  # a comment\n",
    's = """two\nlines"""\nt = f"{s!r} and {1 + 2}"\n',
    "def f(x):\n    return x\n\n\n",
    "",
]


@pytest.mark.parametrize("code", SOURCES)
def test_highlight_only_adds_color(code):
    assert ANSI.sub("", highlight(code)) == code


def test_highlight_colors_keywords_names_defined_comments_strings_and_numbers():
    colored = highlight("def f(x):\n    return 'a' + 1.0  # why\n")
    assert "\033[35mdef\033[0m \033[1;34mf\033[0m" in colored
    assert "\033[35mreturn\033[0m" in colored
    assert (
        "\033[32m'a'\033[0m" in colored
        and "\033[36m1.0\033[0m" in colored
        and "\033[90m# why\033[0m" in colored
    )


# ---- show ------------------------------------------------------------------------------------------


def test_show_prints_the_general_code(model, capsys):
    rc, out, err = show(capsys, f"{model}:loss", "--color", "never")
    assert rc == 0 and err == ""
    assert out == sg.source(sg.value_and_grad(user_module(model).loss))
    assert "\033[" not in out


def test_show_on_a_terminal_colors_the_same_code(model, capsys):
    # the highlighter used to fail on every terminal (tokenize's trailing DEDENT/ENDMARKER)
    rc, plain, _ = show(capsys, f"{model}:loss", "--color", "never")
    rc_color, colored, err = show(capsys, f"{model}:loss", "--color", "always")
    assert rc == rc_color == 0 and err == ""
    assert "\033[35mdef\033[0m" in colored
    assert ANSI.sub("", colored) == plain


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_show_colors_on_a_real_terminal_by_default(model):
    leader, follower = os.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sourcegrad", "show", f"{model}:loss"],
        cwd=ROOT,
        env=env,
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    chunks = []
    try:
        while True:  # read as it writes (a full terminal buffer would block it)
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed (Linux answers EIO)
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
        err = proc.stderr.read().decode()
        proc.wait(timeout=120)
    assert proc.returncode == 0, err
    out = b"".join(chunks).decode()
    assert "\033[35mdef\033[0m" in out and "_value_and_grad" in ANSI.sub("", out)


def test_show_vjp_and_wrt(model, capsys):
    rc, out, _ = show(capsys, f"{model}:loss", "--wrt", "0,x", "--vjp")
    assert rc == 0
    assert out == sg.source(sg.vjp(user_module(model).loss, wrt=(0, "x")))
    assert "w_bar" in out and "x_bar" in out


def test_show_runs_as_a_module_from_the_repository_root(model):
    proc = subprocess.run(
        [sys.executable, "-m", "sourcegrad", "show", f"{model}:loss", "--wrt", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "def loss_value_and_grad(w, x):" in proc.stdout and "x_bar" in proc.stdout


# ---- refusals: one line (or a located message), never a traceback ------------------------------------


@pytest.mark.parametrize(
    "target, extra, message",
    [
        (
            "{model}:loss",
            ["--wrt", "5"],
            "wrt=5 is out of range: loss has 2 parameter(s) ['w', 'x']",
        ),
        ("{model}:loss", ["--wrt", "z"], "wrt='z' names no parameter of loss"),
        ("{model}", [], "expected path/to/file.py:function"),
        ("{model}.missing:loss", [], "no such file"),
        ("{model}:nothing_here", [], "has no 'nothing_here'"),
        ("{model}:Model.nothing_here", [], "has no 'Model.nothing_here'"),
        ("{model}:NOT_A_FUNCTION", [], "needs a function, got 3"),
        ("{model}:loss", ["--shapes", "3x"], "--shapes item '3x' is not a shape"),
        ("{model}:loss", ["--shapes", "3"], "--shapes gives 1 argument(s); loss takes 2: w, x"),
        ("{model}:with_default", ["--shapes", "3,float,3"], "with_default takes 1 to 2: w, scale"),
        (
            "{model}:keyword_only",
            ["--shapes", "3,float,shift=float"],
            "--shapes gives 2 argument(s); keyword_only takes 1: w (and by name: scale, shift)",
        ),
        (
            "{model}:keyword_only",
            ["--shapes", "3"],
            "--shapes gives no shift, a keyword-only parameter of keyword_only "
            "without a default: add shift=SHAPE",
        ),
        (
            "{model}:keyword_only",
            ["--shapes", "3,w=float,shift=float"],
            "--shapes names 'w', which is not a keyword-only parameter of keyword_only",
        ),
        (
            "{model}:keyword_only",
            ["--shapes", "shift=float,3"],
            "--shapes item '3' comes after a named one",
        ),
        ("{model}:keyword_only", ["--shapes", "3,shift=3y"], "--shapes item '3y' is not a shape"),
        (
            "{model}:Model.loss",
            ["--wrt", "self"],
            "Model.loss is a method, and self is the instance",
        ),
    ],
)
def test_bad_targets_and_options_print_one_line(model, capsys, target, extra, message):
    rc, out, err = show(capsys, target.format(model=model), *extra)
    assert rc == 1 and out == ""
    assert err.startswith("python -m sourcegrad: error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_refused_function_prints_the_located_message(model, capsys):
    rc, out, err = show(capsys, f"{model}:unsupported")
    assert rc == 1 and out == ""
    assert err.startswith("python -m sourcegrad: error: ") and "Traceback" not in err
    assert f'File "{model}", line' in err and "global LAST" in err


def test_a_bad_wrt_from_the_command_line_is_one_line_without_a_traceback(model):
    proc = subprocess.run(
        [sys.executable, "-m", "sourcegrad", "show", f"{model}:loss", "--wrt", "5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "python -m sourcegrad: error: wrt=5 is out of range: loss has 2 parameter(s) ['w', 'x']"
    ]


# ---- methods: wrt counts the arguments after self ----------------------------------------------------


@pytest.mark.parametrize(
    "target, wrt, expect",
    [
        ("Model.loss", None, "w_bar"),
        ("Model.loss", "1", "x_bar"),
        ("Model.loss", "x", "x_bar"),
        ("Model.loss", "-1", "x_bar"),
        ("Model.class_loss", None, "w_bar"),
        ("Model.class_loss", "1", "x_bar"),
        ("Model.static_loss", None, "w_bar"),  # no self: counted from the first argument
        ("Model.static_loss", "1", "x_bar"),
    ],
)
def test_methods_are_differentiated_with_respect_to_the_arguments_after_self(
    model, capsys, target, wrt, expect
):
    rc, out, err = show(capsys, f"{model}:{target}", *(["--wrt", wrt] if wrt else []))
    assert rc == 0, err
    assert expect in out
    assert "self_bar" not in out and "cls_bar" not in out
    assert sum(name in out for name in ("w_bar", "x_bar")) == 1


# ---- --shapes: the code a call with such arrays runs -------------------------------------------------


def test_shapes_show_the_specialized_code(model, capsys):
    rc, general, _ = show(capsys, f"{model}:broadcast", "--color", "never")
    rc_shapes, out, err = show(
        capsys, f"{model}:broadcast", "--shapes", "3x4,4", "--color", "never"
    )
    assert rc == rc_shapes == 0, err
    f = user_module(model).broadcast
    assert out == sg.source(sg.value_and_grad(f), np.zeros((3, 4)), np.zeros(4))
    assert "unbroadcast" in general and "unbroadcast" not in out  # w's shape is the sum's shape


@pytest.mark.parametrize(
    "target, shapes, args",
    [
        ("with_default", "3", (np.ones(3),)),
        ("with_default", "3,float", (np.ones(3), 2.0)),
        ("with_default", "(),float", (np.ones(()), 2.0)),
        ("Model.loss", "4x2,3x4", (np.ones((4, 2)), np.ones((3, 4)))),
        ("keyword_only", "3,shift=float", (np.ones(3), {"shift": 1.0})),
        (
            "keyword_only",
            "2x3,scale=(),shift=float",
            (np.ones((2, 3)), {"scale": np.ones(()), "shift": 1.0}),
        ),
    ],
)
def test_shapes_build_one_argument_per_item(model, capsys, target, shapes, args):
    rc, out, err = show(capsys, f"{model}:{target}", "--shapes", shapes)
    assert rc == 0, err
    obj = user_module(model)
    for part in target.split("."):
        obj = getattr(obj, part)
    if target.startswith("Model."):
        # bound: wrt counts after self, as the command does
        obj = sg.value_and_grad(obj.__get__(object()))
    else:
        obj = sg.value_and_grad(obj)
    kwargs = args[-1] if isinstance(args[-1], dict) else {}
    args = args[:-1] if kwargs else args
    assert out == sg.source(obj, *args, **kwargs)
    if kwargs:  # keyword-only parameters are counted apart: the code is the one a call runs
        made = sg.value_and_grad(getattr(user_module(model), target))
        made(*args, **kwargs)
        assert len(made._specialized) == 1 and sg.source(made, *args, **kwargs) == out
        assert out != sg.source(made)


def test_keyword_only_parameters_are_keyword_only_in_the_header(model, capsys):
    rc, out, err = show(capsys, f"{model}:keyword_only", "--wrt", "scale")
    assert rc == 0, err
    assert out.splitlines()[0] == "def keyword_only_value_and_grad(w, *, scale, shift):"
    f = user_module(model).keyword_only
    w = np.array([1.0, -2.0, 0.5])
    for specialize in (True, False):
        made = sg.value_and_grad(f, wrt=("w", "scale"), specialize=specialize)
        value, (gw, gscale) = made(w, shift=0.25)
        np.testing.assert_allclose(value, f(w, shift=0.25))
        np.testing.assert_allclose(gw, 2.0 * 2.0 * w)
        np.testing.assert_allclose(gscale, np.sum(w * w))
        assert isinstance(gscale, float)
        value, (gw, gscale) = made(w, scale=3.0, shift=0.25)
        np.testing.assert_allclose(gw, 2.0 * 3.0 * w)
    with pytest.raises(TypeError, match="shift"):
        sg.grad(f)(w)  # as calling f(w) would


def test_a_function_decorated_with_grad_is_shown_with_its_wrt(tmp_path, capsys):
    path = tmp_path / "cli_decorated.py"
    path.write_text(
        textwrap.dedent("""
        import numpy as np
        import sourcegrad as sg

        @sg.grad(wrt="b")
        def f(a, b):
            return np.sum(a * b)
    """)
    )
    saved = list(sys.path)
    try:
        rc, out, err = show(capsys, f"{path}:f")
    finally:
        sys.path[:] = saved
        sys.modules.pop("cli_decorated", None)
    assert rc == 0, err
    assert "b_bar" in out and "a_bar" not in out
