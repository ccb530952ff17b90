"""The aliasing pass (``transforms/aliasing.py``): which copies are fresh, and that its analysis
does work linear in the program.

Refusals themselves are tabled with the other errors (``tests/bad_inputs.py``); writes it must let
through are checked against finite differences in ``test_mutation.py``.
"""

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.transforms import aliasing

from .corpus.harness import check
from .fuzz.check import load

# ---- x.flatten() is a copy; x.ravel() and x.reshape() may be views ------------------------------


def flatten_then_write(x):
    y = x.flatten()
    y[0] = 5.0  # y is a new array: x is untouched
    return np.sum(y * x.ravel())


def flatten_order_then_write(x):
    y = x.flatten("F")
    y[1] = y[0] * 2.0
    return np.sum(y * y)


def ravel_then_write(x):
    y = x.ravel()
    y[0] = 5.0
    return np.sum(y)


def reshape_then_write(x):
    y = x.reshape(-1)
    y[0] = 5.0
    return np.sum(y)


@pytest.mark.parametrize("f", [flatten_then_write, flatten_order_then_write])
def test_a_write_into_a_flattened_copy_is_allowed(f):
    check(f, (np.array([[0.5, -1.0], [2.0, 0.25]]),))


@pytest.mark.parametrize("f", [ravel_then_write, reshape_then_write])
def test_a_write_into_a_raveled_or_reshaped_argument_is_refused(f):
    with pytest.raises(
        sg.UnsupportedSyntaxError, match="'y' may share memory with the argument 'x'"
    ):
        sg.grad(f)(np.array([[0.5, -1.0], [2.0, 0.25]]))


# ---- the analysis is linear in the program ----------------------------------------------------
# ``aliasing.work`` counts the statements the analyses visit and the name entries they touch one
# by one (joined, aged, recorded, dropped). Before issue 14 each allocation aged every name in the
# state (quadratic in the lines) and each loop was analysed afresh in every round of each loop
# around it (exponential in the depth): 1,000 lines took 30 s, loops nested 14 deep 152 s.


def straight(lines):
    """``lines`` lines of arithmetic; every tenth writes into the fresh array the line before made."""
    body, m = ["    a0 = np.tanh(x * w)"], 0
    for i in range(1, lines):
        if i % 10 == 0:
            body.append(f"    a{m}[{i % 4}] = np.sin(a{m - 3}[0])")
        else:
            m += 1
            body.append(f"    a{m} = np.sin(a{m - 1}) * w + a{max(0, m - 3)}")
    return (
        "import numpy as np\n\n\ndef f(x, w):\n" + "\n".join(body) + f"\n    return np.sum(a{m})\n"
    )


def nested(depth, exits=False):
    """``depth`` loops, one inside the other, each allocating a buffer and writing into it (and
    with ``exits``, leaving its loop early from a branch)."""
    lines = [
        "import numpy as np",
        "",
        "",
        "def f(x, w):",
        "    y = x * w",
        "    trips = x.shape[0] // 4",
    ]
    for d in range(depth):
        pad = "    " * (d + 2)
        lines += [
            f"{pad[4:]}for i{d} in range(trips):",
            f"{pad}b{d} = np.zeros(4)",
            f"{pad}b{d}[{d % 4}] = y[0]",
        ]
        if exits:
            lines += [f"{pad}if np.sum(y) > {d}.0:", f"{pad}    y = y + b{d}", f"{pad}    break"]
        lines.append(f"{pad}y = np.tanh(y + b{d} * w)")
    return "\n".join(lines + ["    return np.sum(y)"]) + "\n"


def work(source):
    """The aliasing pass's work to compile ``source``'s ``f`` (which it must accept)."""
    before = aliasing.work.total()
    f = load(source).f
    sg.grad(f, wrt=(0, 1))(np.linspace(0.1, 0.4, 4), np.linspace(-0.3, 0.3, 4))
    return aliasing.work.total() - before


def test_work_grows_linearly_with_the_lines():
    small, large = work(straight(200)), work(straight(400))
    assert 0 < large <= 2.3 * small, (small, large)


@pytest.mark.parametrize("exits", [False, True], ids=["plain", "with-break"])
def test_work_grows_linearly_with_the_depth_of_loops(exits):
    shallow, deep = work(nested(6, exits)), work(nested(12, exits))
    assert 0 < deep <= 2.3 * shallow, (shallow, deep)


def test_deeply_nested_buffers_get_the_right_gradient():
    check(
        load(nested(8, exits=True)).f,
        (np.linspace(0.1, 0.4, 4), np.linspace(-0.3, 0.3, 4)),
        wrt=(0, 1),
    )
