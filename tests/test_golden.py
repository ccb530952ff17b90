"""Golden tests: the generated source of a few functions, regenerated and diffed.

Run with SOURCEGRAD_REGEN_GOLDEN=1 to rewrite the expected files after an intended change, then
review the diff like any other code change.
"""

import difflib
import os
import pathlib
import subprocess
import sys

import pytest

import sourcegrad as sg

from .golden import functions as F

HERE = pathlib.Path(__file__).parent / "golden"
CASES = [
    ("two_layer", sg.value_and_grad(F.two_layer, wrt=(0, 1)), ()),
    ("basics", sg.grad(F.basics), ()),
    ("branch", sg.grad(F.branch), ()),
    ("rnn", sg.grad(F.rnn), ()),
    ("doubling", sg.vjp(F.doubling), ()),
    # specialized to argument shapes: no unbroadcast, no rank dispatch, no taped shapes
    ("two_layer_specialized", sg.value_and_grad(F.two_layer, wrt=(0, 1)), F.two_layer_args()),
    ("rnn_specialized", sg.grad(F.rnn), F.rnn_args()),
    # h * h is read for its shape alone, which is known: not taped in the loop
    ("energy_specialized", sg.grad(F.energy, wrt=(0, 1)), F.energy_args()),
    ("doubling_loss_specialized", sg.value_and_grad(F.doubling_loss), F.doubling_loss_args()),
]


@pytest.mark.parametrize("name,g,args", CASES, ids=[c[0] for c in CASES])
def test_generated_source_matches_golden(name, g, args):
    got = sg.source(g, *args)
    path = HERE / f"{name}.expected.py"
    if os.environ.get("SOURCEGRAD_REGEN_GOLDEN"):
        path.write_text(got)
    want = path.read_text()
    if got != want:
        diff = "".join(
            difflib.unified_diff(
                want.splitlines(True), got.splitlines(True), "expected", "generated"
            )
        )
        pytest.fail(f"generated source of {name} changed:\n{diff}")


def test_two_layer_reads_like_the_hand_written_backward():
    src = sg.source(CASES[0][1])
    assert "x_bar" not in src and "y_bar" not in src  # no adjoints for inputs outside wrt
    assert "= ZERO" not in src and "zeros_like" not in src  # no zero-initialised accumulators
    assert "# functions.py:" in src  # statements mapped to the user's lines
    assert "h_relu_bar" in src and "w1_bar" in src  # the user's names


_SOURCES = """
import hashlib, sourcegrad as sg
from tests import test_sequences as t, test_second_order as s
from tests.golden import functions as F
text = sg.source(sg.grad(t.f_tuple_concat)) + sg.source(sg.hvp(s.piecewise_linear))
text += sg.source(sg.grad(F.rnn)) + sg.source(sg.vjp(F.doubling))
print(hashlib.sha256(text.encode()).hexdigest())
"""


def test_generated_code_is_the_same_in_every_process():
    """Nothing the compiler names depends on the order of a set of strings, which Python's
    hash seed changes from one process to the next."""
    root = pathlib.Path(__file__).resolve().parents[1]
    digests = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        proc = subprocess.run(
            [sys.executable, "-c", _SOURCES], capture_output=True, text=True, env=env, cwd=root
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        digests.add(proc.stdout.strip())
    assert len(digests) == 1
