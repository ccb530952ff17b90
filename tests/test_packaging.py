"""Packaging and layering: installed names, one-way imports, a wheel that works outside the repo."""

import os
import pathlib
import subprocess
import sys
import venv

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run(code, cwd, env=None):
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_runtime_imports_neither_libcst_nor_the_compiler(tmp_path):
    r = _run("import sys, sourcegrad.runtime; "
             "assert 'libcst' not in sys.modules, 'libcst'; "
             "assert 'sourcegrad.transforms' not in sys.modules, 'transforms'; print('ok')", tmp_path)
    assert r.returncode == 0, r.stderr


def test_installed_under_sourcegrad_namespace(tmp_path):
    r = _run("import sourcegrad.transforms, sourcegrad.runtime, importlib.util as u; "
             "assert u.find_spec('transforms') is None or 'sourcegrad' not in (u.find_spec('transforms').origin or ''); "
             "print('ok')", tmp_path)
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_wheel_installs_and_differentiates_outside_the_repository(tmp_path):
    # the build tools come with the test extra; only an environment without them may skip, and
    # then a broken build is not hidden: with them, a failing build fails the test
    pytest.importorskip("setuptools")
    pytest.importorskip("wheel")
    wheel_dir = tmp_path / "wheel"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(wheel_dir), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"building the wheel failed:\n{r.stderr[-2000:]}"
    wheel = next(wheel_dir.glob("sourcegrad-*.whl"))
    env_dir = tmp_path / "env"
    venv.create(env_dir, system_site_packages=True, with_pip=False)
    py = env_dir / ("Scripts" if os.name == "nt" else "bin") / "python"
    target = tmp_path / "site"
    r = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    user = tmp_path / "user"
    user.mkdir()
    (user / "model.py").write_text(
        "import numpy as np\nimport sourcegrad as sg\n\n"
        "def f(x):\n    return np.sum(np.tanh(x) ** 2)\n\n"
        "g = sg.grad(f)(np.array([0.5, -1.0]))\n"
        "assert sg.__file__.startswith(%r), sg.__file__\n"
        "print(repr(g))\n" % str(target)
    )
    env = dict(os.environ, PYTHONPATH=str(target), PYTHONNOUSERSITE="1")
    r = subprocess.run([str(py), "-I", "-c", "import sys; sys.path.insert(0, %r); sys.path.insert(0, '.'); import model" % str(target)],
                       cwd=user, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "array(" in r.stdout
