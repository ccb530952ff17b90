"""What README.md shows runs as written: the first example, the Quick start commands CI runs, the
property-based test snippet (under hypothesis's own default settings), and a notebook cell."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CI_VARIABLES = (
    "CI",
    "TF_BUILD",
    "GITHUB_ACTIONS",
    "BUILDKITE",
    "CIRCLECI",
    "GITLAB_CI",
    "JENKINS_URL",
)


def section(heading):
    """The text under a Markdown heading (``## Quick start``), up to the next heading of its level."""
    level = heading.split(" ")[0]
    match = re.search(rf"^{re.escape(heading)}\n(.*?)(?=^{level} |\Z)", README, re.S | re.M)
    assert match, f"README.md has no section {heading!r}"
    return match.group(1)


def code_blocks(text, language):
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.S | re.M)


def run_python(code, cwd, timeout=300):
    """Run ``code`` as a user's script would run, with this checkout first on the path."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in CI_VARIABLES and not k.startswith("SOURCEGRAD_")
    }
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    script = pathlib.Path(cwd) / "readme_example.py"
    script.write_text(code)
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_first_example_runs(tmp_path):
    first = code_blocks(README, "python")[0]
    proc = run_python(first, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "def loss_value_and_grad(w, x, y):" in proc.stdout


def test_ci_runs_the_quick_start_commands():
    block = code_blocks(section("## Quick start"), "sh")[0]
    commands = [
        line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    assert len(commands) == 2
    demo, tests = commands
    assert re.match(r"pip install \. && python examples/two_layer\.py\b", demo), demo
    assert re.match(r'pip install "\.\[test\]" && python -m pytest\b', tests), tests
    assert (ROOT / "examples" / "two_layer.py").exists()
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("needs bash")
    ci = subprocess.run(
        [bash, str(ROOT / ".ci" / "run"), "--commands"], capture_output=True, text=True, timeout=60
    )
    assert ci.returncode == 0, ci.stderr
    assert ci.stdout.splitlines() == commands


def test_the_property_test_snippet_passes_under_hypothesis_defaults(tmp_path):
    # The snippet as written, run by pytest in a folder of its own: hypothesis's default profile
    # (a 200 ms deadline per example, which the first call's compilation exceeds unless the
    # snippet's settings lift it), none of this repository's conftest.
    pytest.importorskip("hypothesis")
    snippet = code_blocks(section("### Testing your own gradients"), "python")[0]
    (tmp_path / "test_snippet.py").write_text(snippet)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in CI_VARIABLES and not k.startswith(("SOURCEGRAD_", "PYTEST_"))
    }
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_snippet.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\b1 passed\b", proc.stdout), proc.stdout


CELLS = [
    "import numpy as np\nimport sourcegrad as sg",
    "def loss(w):\n    h = np.tanh(w)\n    return np.sum(h * h)",
    "g = sg.grad(loss)(np.array([0.5, -1.0]))\ncode = sg.source(sg.grad(loss))",
    "def refused(w):\n    global LAST\n    LAST = w\n    return np.sum(w)",
    "try:\n    sg.grad(refused)(np.ones(2))\nexcept sg.UnsupportedSyntaxError as e:\n    where = (e.lineno, e.text)",
]


def test_a_notebook_cell_is_differentiated_through_ipython(tmp_path):
    pytest.importorskip("IPython")
    program = (
        "import json, sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        f"for cell in {CELLS!r}:\n"
        "    shell.run_cell(cell, store_history=True).raise_error()\n"
        "ns = shell.user_ns\n"
        "print(json.dumps({'g': ns['g'].tolist(), 'code': ns['code'], 'where': list(ns['where'])}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCEGRAD_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["IPYTHONDIR"] = str(tmp_path / "ipython")  # no profile or history of the user's
    proc = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    w = np.array([0.5, -1.0])
    np.testing.assert_allclose(out["g"], 2 * np.tanh(w) * (1 - np.tanh(w) ** 2))
    assert "def loss_value_and_grad(w):" in out["code"] and "h = np.tanh(w)" in out["code"]
    assert out["where"] == [2, "    global LAST\n"]  # located in the cell
