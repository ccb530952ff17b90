"""The generated code's names never capture the user's.

sourcegrad's own names (runtime helpers such as ``acc`` and ``unbroadcast``, the globals adjoint
templates use such as ``np``, builtins the generated code calls such as ``range``) are chosen by
the naming of the compile (``captures.Captures.bind``): a name the user's function reads that
means something else there makes the helper take a fresh name; the user's text is never
rewritten. Each case is a module of its own with a global (or local) spelled like one of those
names, and every gradient is checked against finite differences, specialized and general.
"""

import sys

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.transforms import rules as R

from .corpus.harness import check
from .fuzz.check import load

# Functions that make the backward use most runtime helpers: broadcasting (unbroadcast),
# reductions (unreduce), a loop with a branch (the tape, acc, ZERO, reversed, bool), writes into
# a buffer (zero_at, copy_value, written_part), a while loop (range), a list (split_last).
BODY = """
import numpy as np

{name} = {value}


def f(x, w):
    s = np.var(x) + np.sum(x * {name})
    h = np.zeros(3)
    for i in range(3):
        if np.sum(x) > i * {name}:
            h = h + np.tanh(x[i] * w) * {name}
        else:
            h = h * 0.5 + x[i]
    buf = np.zeros(3)
    buf[1] = s
    buf[[0, 2]] = h[[0, 2]] * {name}
    ys = []
    k = 0
    while k < 2:
        ys.append(buf * w + {name})
        k += 1
    return np.mean(np.stack(ys)) + np.sum(h * w)
"""

# np, range: the body reads them
NAMES = sorted(
    (set(R.NAMESPACE) - {"np"}) | {"bool", "len", "reversed", "_tape", "acc", "centered"}
)


@pytest.mark.parametrize("name", NAMES)
def test_a_module_constant_named_like_a_helper_is_read_as_the_user_wrote_it(name):
    module = load(BODY.format(name=name, value=0.5))
    x, w = np.array([0.3, -0.2, 0.8]), np.array([0.5, 1.5, -0.7])
    check(module.f, (x, w), wrt=(0, 1))


LOCAL = """
import numpy as np


def f(x):
    {name} = x * 2.0
    total = 0.0
    for i in range(3):
        if x[i] > 0:
            total = total + np.sum({name} * x[i])
    return total + np.mean({name} ** 2)
"""


@pytest.mark.parametrize(
    "name",
    [
        "acc",
        "unbroadcast",
        "unreduce",
        "ZERO",
        "finalize",
        "_tape",
        "shape_of",
        "zeros_like",
        "check_scalar",
    ],
)
def test_a_local_named_like_a_helper_keeps_its_name(name):
    module = load(LOCAL.format(name=name))
    x = np.array([0.3, -0.2, 0.8])
    check(module.f, (x,))
    assert f"{name} = x * 2.0" in sg.source(sg.grad(module.f))  # the user's own line, as written


NOT_NUMPY = """
import types

import numpy

np = types.SimpleNamespace(tanh=numpy.tanh, sin=numpy.sin, sum=numpy.sum, mean=numpy.mean, var=numpy.var)


def f(x):
    return np.sum(np.tanh(x) * x) + np.var(x) + np.mean(np.sin(x) * x)
"""


def test_a_user_np_that_is_not_numpy():
    module = load(NOT_NUMPY)
    check(module.f, (np.array([0.3, -0.2, 0.8]),))
    src = sg.source(sg.grad(module.f))
    assert "np.tanh(x)" in src  # the user's np, read as written
    assert "_sg_np.cos(" in src  # numpy for the templates (sin's rule), under a name of its own


def test_the_reported_collisions():
    """The two programs of the report: a module constant ``centered`` (a runtime helper's name)
    and ``acc`` read in a loop with a branch."""
    centered = load(
        "import numpy as np\n\ncentered = 0.5\n\n\ndef f(x):\n"
        "    return np.var(x) + np.sum(x * centered)\n"
    )
    check(centered.f, (np.array([0.3, -0.2, 0.8]),))
    acc = load(
        "import numpy as np\n\nacc = 0.9\n\n\ndef f(x):\n    y = x\n    for i in range(3):\n"
        "        if np.sum(y) > 0:\n            y = y * acc\n        else:\n            y = y + acc\n"
        "    return np.sum(y * y)\n"
    )
    check(
        acc.f,
        (np.array([0.3, -0.2, 0.8]),),
    )
    check(acc.f, (np.array([-0.3, -0.2, -0.8]),))


def test_kept_text_carries_its_names(monkeypatch):
    """Conditions, loop ranges and effects are kept as the user wrote them; what they read comes
    with them (from the libcst tree or the atoms they were made of), never from their text."""
    from sourcegrad.transforms import ir

    from .corpus import all_cases

    untyped = []
    real = ir.idents

    def idents(t):
        if getattr(t, "names", None) is None:
            untyped.append(t)
        return real(t)

    monkeypatch.setattr(ir, "idents", idents)
    for c in all_cases():
        sg.source(sg.grad(c.fn, wrt=c.wrt))
    assert not untyped, untyped[:10]


def test_dropped_gradients_release_their_code():
    """A gradient that is collected takes its generated code, its linecache entry and its
    registry entry with it (they kept closures over large arrays alive)."""
    import gc
    import linecache
    import weakref

    from sourcegrad.transforms.emit import REGISTRY

    def make():
        big = np.ones(1000)

        def f(x):
            return np.sum(x * big)

        g = sg.grad(f, specialize=False)
        g(np.ones(1000))
        return g, weakref.ref(big)

    before = set(REGISTRY)
    g, big = make()
    new = set(REGISTRY) - before
    assert new and all(n in linecache.cache for n in new)
    del g
    gc.collect()
    assert big() is None
    assert not (set(REGISTRY) & new)
    assert not any(n in linecache.cache for n in new)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_a_long_expression_compiles():
    """A sum of hundreds of terms nests that deep: the passes that recurse on it must not run
    out of Python's recursion limit (it is raised while a compile runs, then restored)."""
    import sys as _sys

    terms = " + ".join(f"{k % 7 + 1}.0 * np.sin(x * {k % 5 + 1}.0)" for k in range(500))
    module = load(f"import numpy as np\n\n\ndef f(x):\n    return np.sum({terms})\n")
    limit = _sys.getrecursionlimit()
    x = np.array([0.3, -0.2])
    check(module.f, (x,))
    assert _sys.getrecursionlimit() == limit
