"""Errors sourcegrad raises on purpose reach the user without the compiler's frames (as JAX's
filtered tracebacks do): the traceback goes from the user's call to the one API frame that
raised it, then to any user or generated code that ran. SOURCEGRAD_TRACEBACK=full keeps them all."""

import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sourcegrad as sg
import sourcegrad.runtime
import sourcegrad.transforms

ROOT = pathlib.Path(__file__).resolve().parents[1]
OURS = tuple(
    str(pathlib.Path(m.__file__).resolve().parent) + os.sep
    for m in (sg, sourcegrad.runtime, sourcegrad.transforms)
)


def not_scalar(x):
    return x * 2.0


def uses_try(x):
    try:
        return np.sum(x)
    except ValueError:
        return 0.0


def no_rule(x):
    return np.sum(np.i0(x))  # the modified Bessel function: no rule


class Refuses(sg.Function):
    @staticmethod
    def forward(ctx, x):
        raise sg.UsageError("refused by the user's own forward")

    @staticmethod
    def backward(ctx, g):
        return g


def calls_refuses(x):
    return np.sum(Refuses.apply(x))


def _pullback_twice():
    _, pb = sg.vjp(not_scalar)(np.ones(3))
    pb(np.ones(3))
    pb(np.ones(3))


X = np.ones(3)

CASES = [  # (id, error, what the user ran, how many of sourcegrad's frames remain)
    ("unsupported_syntax", sg.UnsupportedSyntaxError, lambda: sg.grad(uses_try)(X), 1),
    ("missing_adjoint", sg.MissingAdjointError, lambda: sg.grad(no_rule)(X), 1),
    ("value_and_grad", sg.MissingAdjointError, lambda: sg.value_and_grad(no_rule)(X), 1),
    ("vjp", sg.MissingAdjointError, lambda: sg.vjp(no_rule)(X), 1),
    ("source", sg.MissingAdjointError, lambda: sg.source(sg.grad(no_rule)), 1),
    ("source_specialized", sg.MissingAdjointError, lambda: sg.source(sg.grad(no_rule), X), 1),
    ("non_scalar_at_run_time", sg.NonScalarOutputError, lambda: sg.grad(not_scalar)(X), 1),
    ("int_argument", sg.WrtError, lambda: sg.grad(not_scalar)(np.arange(3)), 1),
    ("check_grad", sg.MissingAdjointError, lambda: sg.check_grad(no_rule, X), 1),
    ("pullback_twice", sg.PullbackError, _pullback_twice, 1),
    # made by grad(...): grad's own frame and the one that raised
    ("wrt_out_of_range", sg.WrtError, lambda: sg.grad(not_scalar, wrt=3), 2),
    ("decorator_wrt", sg.WrtError, lambda: sg.grad(wrt=3)(not_scalar), 2),
]


def frames(excinfo):
    return [
        str(pathlib.Path(entry.path).resolve())
        if os.path.exists(str(entry.path))
        else str(entry.path)
        for entry in excinfo.traceback
    ]


def ours(paths):
    return [p for p in paths if p.startswith(OURS)]


@pytest.mark.parametrize("error, run, kept", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_sourcegrad_frames_are_hidden(error, run, kept, monkeypatch):
    monkeypatch.delenv("SOURCEGRAD_TRACEBACK", raising=False)
    with pytest.raises(error) as info:
        run()
    paths = frames(info)
    assert len(ours(paths)) == kept, "\n".join(paths)
    assert paths[0] == str(pathlib.Path(__file__).resolve())  # from the user's call


@pytest.mark.parametrize(
    "error, run",
    [
        c[1:3]
        for c in CASES
        if c[0] in ("unsupported_syntax", "missing_adjoint", "wrt_out_of_range")
    ],
)
def test_the_environment_switch_shows_every_frame(error, run, monkeypatch):
    monkeypatch.setenv("SOURCEGRAD_TRACEBACK", "full")
    with pytest.raises(error) as info:
        run()
    assert len(ours(frames(info))) >= 3


def test_user_and_generated_frames_stay():
    with pytest.raises(sg.UsageError, match="the user's own forward") as info:
        sg.grad(calls_refuses)(X)
    paths = frames(info)
    assert paths[-1] == str(pathlib.Path(__file__).resolve())  # Refuses.forward raised it
    assert any(p.startswith("<sourcegrad:") for p in paths)  # the generated forward called it
    assert len(ours(paths)) == 1


def test_other_errors_keep_their_frames():
    # a bug or a numpy error is not sourcegrad's message about the user's code: nothing is hidden
    def shapes_disagree(x, y):
        return np.sum(x * y)

    with pytest.raises(ValueError) as info:
        sg.grad(shapes_disagree)(np.ones(3), np.ones(4))
    assert len(ours(frames(info))) >= 2


def test_a_printed_refusal_is_short(tmp_path):
    script = tmp_path / "user.py"
    script.write_text(
        textwrap.dedent("""
        import numpy as np
        import sourcegrad as sg

        def loss(x):
            global LAST
            LAST = x
            y = np.sum(x)
            return y

        sg.grad(loss)(np.ones(3))
    """)
    )
    env = {k: v for k, v in os.environ.items() if k != "SOURCEGRAD_TRACEBACK"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 1
    err = proc.stderr
    assert "UnsupportedSyntaxError: global declarations cannot be differentiated" in err
    assert f'File "{script}", line 11' in err  # the user's call
    assert "SOURCEGRAD_TRACEBACK=full" in err  # the line that raised says how to see the rest
    assert "transforms" not in err and "runtime" not in err
    full = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "SOURCEGRAD_TRACEBACK": "full"},
    )
    assert "transforms" in full.stderr and len(full.stderr.splitlines()) > len(err.splitlines())
