"""Packaging and layering: installed names, one-way imports, a wheel that works outside the repo."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run(code, cwd, env=None):
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_runtime_imports_neither_libcst_nor_the_compiler(tmp_path):
    r = _run(
        "import sys, sourcegrad.runtime; "
        "assert 'libcst' not in sys.modules, 'libcst'; "
        "assert 'sourcegrad.transforms' not in sys.modules, 'transforms'; print('ok')",
        tmp_path,
    )
    assert r.returncode == 0, r.stderr


def test_installed_under_sourcegrad_namespace(tmp_path):
    r = _run(
        "import sourcegrad.transforms, sourcegrad.runtime, importlib.util as u; "
        "assert u.find_spec('transforms') is None or 'sourcegrad' not in (u.find_spec('transforms').origin or ''); "
        "print('ok')",
        tmp_path,
    )
    assert r.returncode == 0, r.stderr


def _dependency_paths():
    """The folders numpy and libcst import from (site-packages, where a plain install of
    sourcegrad may also be): a child started with ``-I -S`` gets these and nothing else, so no
    editable install's import hook and no ``.pth`` file takes part."""
    import libcst
    import numpy

    return sorted({str(pathlib.Path(m.__file__).resolve().parents[1]) for m in (numpy, libcst)})


def _run_isolated(code, path, cwd):
    prelude = f"import sys; sys.path[:0] = {[str(p) for p in path] + _dependency_paths()!r}\n"
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", prelude + code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_checkout_imports_its_compiler_and_runtime_from_the_top_level(tmp_path):
    # `python -m pytest` or `python -m sourcegrad` from the repository root after a plain (not
    # editable) install: the root's sourcegrad/ is imported, and it must find transforms/ and
    # runtime/ beside it, not the installed copies, nor fail
    r = _run_isolated(
        "import sourcegrad, sourcegrad.runtime, sourcegrad.transforms.rules, sourcegrad.errors as e\n"
        "for m in (sourcegrad, sourcegrad.runtime, sourcegrad.transforms, sourcegrad.transforms.rules):\n"
        "    print(m.__name__, m.__file__)\n"
        "assert e.UnsupportedValueError is sourcegrad.runtime.UnsupportedValueError\n",
        [ROOT],
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    files = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert files == {
        "sourcegrad": str(ROOT / "sourcegrad" / "__init__.py"),
        "sourcegrad.runtime": str(ROOT / "runtime" / "__init__.py"),
        "sourcegrad.transforms": str(ROOT / "transforms" / "__init__.py"),
        "sourcegrad.transforms.rules": str(ROOT / "transforms" / "rules" / "__init__.py"),
    }


def test_the_checkout_differentiates_from_the_repository_root(tmp_path):
    (tmp_path / "square.py").write_text(
        "import numpy as np\nimport sourcegrad as sg\n\n"
        "print(sg.grad(lambda x: np.sum(x * x))(np.array([1.0, 2.0])))\n"
    )
    r = _run_isolated("import square", [ROOT, tmp_path], ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[2.", "4.]"]


@pytest.mark.slow
def test_wheel_installs_and_differentiates_outside_the_repository(tmp_path):
    # the build tools come with the test extra; only an environment without them may skip, and
    # then a broken build is not hidden: with them, a failing build fails the test
    pytest.importorskip("setuptools")
    pytest.importorskip("wheel")
    wheel_dir = tmp_path / "wheel"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheel_dir),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, f"building the wheel failed:\n{r.stderr[-2000:]}"
    wheel = next(wheel_dir.glob("sourcegrad-*.whl"))
    target = tmp_path / "site"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    for sub in ("runtime", "transforms", "transforms/rules"):
        assert (target / "sourcegrad" / sub / "__init__.py").is_file(), sub
    user = tmp_path / "user"
    user.mkdir()
    (user / "model.py").write_text(
        "import sys\nimport numpy as np\nimport sourcegrad as sg\n\n"
        "def f(x):\n    return np.sum(np.tanh(x) ** 2)\n\n"
        "g = sg.grad(f)(np.array([0.5, -1.0]))\n"
        "for m in (sg, sg.runtime, sg.transforms):\n"
        "    assert m.__file__.startswith(%r), m.__file__\n"
        "assert not any(type(f).__name__ == '_SourceTreeFinder' for f in sys.meta_path)  # installed: not needed\n"
        "print(repr(g))\n" % str(target)
    )
    r = _run_isolated("import model", [user, target], user)
    assert r.returncode == 0, r.stderr
    assert "array(" in r.stdout
