"""The house style that a tool can check: the code is as ``ruff format`` writes it (100 columns,
configured in pyproject.toml), so a diff shows changes of meaning, not of layout."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_code_is_formatted():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--diff", str(ROOT)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
