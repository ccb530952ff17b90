"""Run one generated program through sourcegrad and compare with the finite-difference oracle.

The program is written to a real ``.py`` file (sourcegrad reads source, so ``exec`` will not do)
and imported with importlib. Outcomes:

- ``ok``: value and gradient with respect to ``x``, ``y``, ``s`` and ``w`` match finite
  differences, in the code specialized to the arguments' shapes and in the general code, and the
  two agree with each other;
- ``kink``: finite differences with two step sizes disagree (the input sits next to a kink or a
  branch boundary), so the oracle has no answer there: skipped (the two compiled codes are still
  compared with each other first);
- ``refused``: sourcegrad raised ``UnsupportedSyntaxError`` or ``MissingAdjointError`` (safe, but
  counted: the generator only writes constructs sourcegrad documents as supported);
- ``fail``: a wrong value or gradient, a crash, or an internal compiler error;
- ``known``: a crash that matches one of ``KNOWN_BUGS`` (counted, not failed);
- ``invalid``: the program itself misbehaves under plain numpy (a generator bug).
"""

from __future__ import annotations

import atexit
import copy
import hashlib
import importlib.util
import os
import re
import shutil
import tempfile
import traceback
from dataclasses import dataclass

import numpy as np

import sourcegrad as sg

from ..oracle import fd_grad

WRT = (0, 1, 2, 4)  # x, y, s (a Python float) and w; k is an int

# Known compiler bugs, recognised by their error: such programs count as "known", not "fail", so
# the fuzz test keeps looking for new ones. Each has a minimal reproducer marked xfail in the
# control-flow tests (tests/test_loops.py and its siblings); delete its entry here when it is
# fixed. (Empty: all fixed.)
KNOWN_BUGS = {}
_DIR = None


@dataclass
class Outcome:
    status: str
    detail: str = ""
    category: str = ""
    gradients: tuple = None  # the gradient functions an "ok" check used


def program_dir():
    """A temporary folder for the program files, removed when the process exits."""
    global _DIR
    if _DIR is None:
        _DIR = tempfile.mkdtemp(prefix="sourcegrad_fuzz_")
        atexit.register(shutil.rmtree, _DIR, ignore_errors=True)
    return _DIR


def load(source, directory=None):
    """Write ``source`` to a uniquely named module file and import it."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    name = f"sgfuzz_{digest}"
    path = os.path.join(directory or program_dir(), name + ".py")
    if not os.path.exists(path):
        with open(path, "w") as fh:
            fh.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _close(a, b, rtol, atol):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= atol + rtol * np.abs(b)))


def _category(exc):
    line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {line[:120]}"


def check_program(program, seed=0, rtol=1e-4, atol=1e-5):
    module = load(program.source)
    for (
        name,
        value,
    ) in program.rebind.items():  # the module as written, if an earlier check rebound it
        setattr(module, name, _as_written(program.source, name, value))
    outcome = _check(module.f, program, seed, rtol, atol)
    if outcome.status != "ok" or not program.rebind:
        return outcome
    # the same gradient functions again after the program rebinds its module globals: they must
    # read the new values (a float live, an int loop bound through a recompile), never the old
    for name, value in program.rebind.items():
        setattr(module, name, value)
    again = _check(module.f, program, seed, rtol, atol, gradients=outcome.gradients)
    if again.status == "fail":
        again.category = f"after rebinding module globals: {again.category}"
    return again


def _as_written(source, name, value):
    for line in source.splitlines():
        if line.startswith(f"{name} = "):
            return type(value)(eval(line.split(" = ", 1)[1]))  # noqa: S307 (our own generated literal)
    return value


def _check(f, program, seed, rtol, atol, gradients=None):
    args = program.args(seed)
    try:
        with np.errstate(all="raise", under="ignore"):
            want = f(*copy.deepcopy(args))
        if not np.isfinite(want) or np.ndim(want) != 0:
            return Outcome("invalid", f"f returned {want!r}", "invalid value")
    except Exception as exc:  # the program must run under plain numpy
        return Outcome("invalid", traceback.format_exc(), _category(exc))

    saved = copy.deepcopy(args)
    vg, vg_general = gradients or (
        sg.value_and_grad(f, wrt=WRT),
        sg.value_and_grad(f, wrt=WRT, specialize=False),
    )
    try:
        value, grads = vg(*args)
        general_value, general = vg_general(*copy.deepcopy(saved))
    except (sg.UnsupportedSyntaxError, sg.MissingAdjointError) as exc:
        return Outcome("refused", str(exc), _category(exc))
    except Exception as exc:
        category = _category(exc)
        for pattern, bug in KNOWN_BUGS.items():
            if re.search(pattern, category):
                return Outcome("known", traceback.format_exc(), f"known bug: {bug}")
        return Outcome("fail", traceback.format_exc(), category)

    if not all(np.array_equal(a, b) for a, b in zip(args, saved)):
        return Outcome("fail", "computing the gradient changed the arguments", "arguments changed")
    for what, v in (("", value), (" (general code)", general_value)):
        if not _close(v, want, 1e-9, 1e-12):
            return Outcome("fail", f"value{what} {v!r} != f(...) = {want!r}", f"wrong value{what}")
    for i, g, g_general in zip(WRT, grads, general):
        # differential: the specialized and the general code against each other, oracle or not
        if type(g) is not type(g_general) or not _close(g, g_general, 1e-7, 1e-9):
            return Outcome(
                "fail",
                f"gradient wrt argument {i}: specialized {g!r}\n general code {g_general!r}",
                "specialized and general code disagree",
            )
        if isinstance(saved[i], float) and type(g) is not float:
            return Outcome(
                "fail",
                f"gradient wrt the float argument {i} is {g!r}",
                "gradient of a float not a float",
            )
    for i, g, g_general in zip(WRT, grads, general):
        fine = fd_grad(f, saved, i, 1e-6)
        coarse = fd_grad(f, saved, i, 1e-5)
        if not _close(fine, coarse, 1e-3, 1e-4):
            return Outcome("kink", f"finite differences disagree with themselves for argument {i}")
        if not _close(g, fine, rtol, atol):
            return Outcome(
                "fail",
                f"gradient wrt argument {i}: sourcegrad {g!r}\n finite differences {fine!r}",
                "wrong gradient",
            )
        if not _close(g_general, fine, rtol, atol):
            return Outcome(
                "fail",
                f"gradient wrt argument {i}: sourcegrad (general code) {g_general!r}\n"
                f" finite differences {fine!r}",
                "wrong gradient (general code)",
            )
    return Outcome("ok", gradients=(vg, vg_general))
