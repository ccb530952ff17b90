"""The aliasing pass (``transforms/aliasing.py``): which copies are fresh, that a list or tuple
holds its arrays themselves (not copies), and that its analysis does work linear in the program.

Refusals themselves are tabled with the other errors (``tests/bad_inputs.py``); writes it must let
through are checked against finite differences in ``test_mutation.py``.
"""

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sourcegrad as sg
from sourcegrad.transforms import aliasing

from .corpus.harness import check, check_value
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


# ---- a list or tuple holds its arrays, not copies -------------------------------------------
# ``[w, b]``, ``hs + [h]``, ``[h] * 2``, ``list(...)``, ``xs.copy()`` and a comprehension all hold
# the very arrays they were made of, so an entry read back (``p = ps[0]``, ``for p in (w, b)``) is
# one of them, and ``ps[i] += v`` updates the entry's array itself. Every in-place write below is
# seen through another name read after it: it must be refused at its line. Rebuilding instead of
# updating must give the gradient of finite differences.

_X = np.array([0.3, -0.7, 1.1])

CONTAINERS = {
    "list": "lst = [buf, y]",
    "tuple": "lst = (buf, y)",
    "repeat": "lst = [buf] * 2",
    "concat": "lst = [buf] + [y]",
    "tuple_concat": "lst = (buf,) + (y,)",
    "list_call": "lst = list([buf, y])",
    "tuple_call": "lst = tuple([buf, y])",
    "list_copy": "lst = [buf, y].copy()",
    "comprehension": "pair = [buf, y]\n    lst = [b for b in pair]",
    "comprehension_of_literal": "lst = [b for b in [buf, y]]",
    "append": "lst = [y]\n    lst.append(buf)",
    "augmented_concat": "lst = [y]\n    lst += [buf]",
    "concat_to_name": "lst = [y]\n    lst = lst + [buf]",
    "slice": "lst = [buf, y][0:2]",
    "nested": "lst = [[buf, y]][0]",
}
TUPLES = {"tuple", "tuple_concat", "tuple_call"}  # no item assignment

IN_PLACE = {
    "iadd": "buf += x  # W",
    "setitem": "buf[0] = 2.0  # W",
    "loop_imul": "for p in lst:\n        p *= 0.9  # W",
    "loop_setitem": "for p in lst:\n        p[1] = 0.5  # W",
    "entry_iadd": "p = lst[0]\n    p += 1.0  # W",
    "enumerate_imul": "for i, p in enumerate(lst):\n        p *= 0.9 + 0.1 * i  # W",
    "zip_imul": "for p, s in zip(lst, [0.9, 0.8]):\n        p *= s  # W",
    "index_iadd": "lst[0] += 1.0  # W",
    "range_index_imul": "for i in range(len(lst)):\n        lst[i] *= 0.9  # W",
}
REBUILT = {
    "rebind": "buf = buf + x",
    "rebuild": "lst = [p * 0.9 for p in lst]",
    "loop_rebind": "for p in lst:\n        p = p * 0.9",
}

PROGRAM = """import numpy as np


def f(x):
    buf = x * 1.5
    y = np.sin(x)
    {container}
    {write}
    return np.sum(buf * x) + np.sum(np.stack(lst) ** 2) + np.sum(y)
"""


def refused_at_marked_line(f, args, marker="# W", match=None):
    """``sg.grad(f)`` is refused, located at the line of ``f``'s file that ends with ``marker``."""
    lines, _ = inspect.findsource(f)
    want = [i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(marker)]
    with pytest.raises(sg.UnsupportedSyntaxError, match=match) as e:
        sg.grad(f)(*args)
    assert e.value.lineno in want, (e.value.lineno, want, str(e.value))
    assert "in-place write" in str(e.value) and e.value.hint


@pytest.mark.parametrize("write", sorted(IN_PLACE))
@pytest.mark.parametrize("container", sorted(CONTAINERS))
def test_an_in_place_write_seen_through_a_list_or_tuple_is_refused_at_its_line(container, write):
    if container in TUPLES and write in ("index_iadd", "range_index_imul"):
        container = "list"  # Python itself refuses to assign into a tuple's entry
    f = load(PROGRAM.format(container=CONTAINERS[container], write=IN_PLACE[write])).f
    refused_at_marked_line(f, (_X.copy(),))


@pytest.mark.parametrize("write", sorted(REBUILT))
@pytest.mark.parametrize("container", sorted(CONTAINERS))
def test_new_arrays_in_place_of_the_update_get_the_right_gradient(container, write):
    f = load(PROGRAM.format(container=CONTAINERS[container], write=REBUILT[write])).f
    check(f, (_X.copy(),))
    check_value(f, (_X.copy(),))


def weight_decay(w, b, x):
    w = w.copy()
    b = b.copy()
    for p in [w, b]:
        p *= 0.9  # W
    return np.sum((x @ w + b) ** 2)


def weight_decay_by_index(w, b, x):
    w = w.copy()
    b = b.copy()
    ps = [w, b]
    for i in range(2):
        ps[i] *= 0.9  # W
    return np.sum((x @ w + b) ** 2)


def weight_decay_rebuilt(w, b, x):
    w = w.copy()
    b = b.copy()
    ps = [w, b]
    for i in range(2):
        ps[i] = ps[i] * 0.9
    w, b = ps
    return np.sum((x @ w + b) ** 2)


def running_states_concatenated(x):
    h = np.zeros(3)
    hs = []
    for t in range(x.shape[0]):
        h += x[t]  # W
        hs = hs + [h]
    return np.sum(np.stack(hs) ** 2)


def running_states_rebound(x):
    h = np.zeros(3)
    hs = []
    for t in range(x.shape[0]):
        h = h + x[t]
        hs = hs + [h]
    return np.sum(np.stack(hs) ** 2)


def repeated_then_written(x):
    h = x * 1.0
    hs = [h] * 2
    h += 1.0  # W
    return np.sum(np.stack(hs) * x)


def one_buffer_repeated(x):
    hs = [np.zeros(3)] * 3  # one array, three times
    for t in range(3):
        hs[t] += x[t]  # W
    return np.sum(np.stack(hs) ** 2)


def same_buffer_twice(x):
    h = np.zeros(3)
    hs = [h, h]
    hs[0] += x[0]  # W
    return np.sum(np.stack(hs) ** 2)


def distinct_buffers(x):
    hs = [np.zeros(3) for _ in range(3)]  # three arrays
    for t in range(3):
        hs[t] += x[t]
    return np.sum(np.stack(hs) ** 2)


def distinct_buffers_appended(x):
    hs = []
    for t in range(3):
        hs.append(x[t] * 2.0)
    hs[1] *= x[0]
    hs[2] += hs[1]
    return np.sum(np.stack(hs) ** 2)


def dict_entry_shared(x):
    h = x * 1.0
    d = {"a": h}
    d["a"] += 1.0  # W
    return np.sum(h * x) + np.sum(d["a"])


def dict_entry_own(x):
    d = {"a": x * 1.0}
    d["a"] += x
    d["a"] *= x
    return np.sum(d["a"])


def loop_over_argument(x):
    for r in [x]:
        r *= 2.0  # W
    return np.sum(x**2)


def list_entry_is_argument(x):
    h = x * 1.0
    lst = [h, x]
    lst[1] += 1.0  # W
    return np.sum(lst[0] * lst[1])


_LAYER = (np.linspace(-1.0, 1.0, 6).reshape(3, 2), np.array([0.5, -0.25]), np.ones((4, 3)))


@pytest.mark.parametrize("f", [weight_decay, weight_decay_by_index], ids=lambda f: f.__name__)
def test_weight_decay_through_a_list_of_the_parameters_is_refused_at_its_line(f):
    refused_at_marked_line(f, _LAYER)


@pytest.mark.parametrize("f", [repeated_then_written, same_buffer_twice], ids=lambda f: f.__name__)
def test_a_write_into_an_array_a_list_holds_twice_is_refused_at_its_line(f):
    refused_at_marked_line(f, (_X.copy(),))


@pytest.mark.parametrize(
    "f",
    [running_states_concatenated, one_buffer_repeated, dict_entry_shared],
    ids=lambda f: f.__name__,
)
def test_a_write_into_an_array_a_list_or_dict_also_holds_is_refused_at_its_line(f):
    refused_at_marked_line(f, (np.linspace(-1.0, 1.0, 9).reshape(3, 3),))


@pytest.mark.parametrize(
    "f", [loop_over_argument, list_entry_is_argument], ids=lambda f: f.__name__
)
def test_a_write_into_an_argument_through_a_list_is_refused(f):
    refused_at_marked_line(f, (_X.copy(),), match="argument 'x'")


@pytest.mark.parametrize(
    "f",
    [running_states_rebound, distinct_buffers, distinct_buffers_appended, dict_entry_own],
    ids=lambda f: f.__name__,
)
def test_a_list_of_its_own_new_arrays_may_be_updated_entry_by_entry(f):
    check(f, (np.linspace(-1.0, 1.0, 9).reshape(3, 3),))
    check_value(f, (np.linspace(-1.0, 1.0, 9).reshape(3, 3),))


def test_rebuilding_the_list_gets_the_right_gradient():
    check(weight_decay_rebuilt, _LAYER, wrt=(0, 1))


def decay_by_comprehension(w, b, x):
    w, b = [p * 0.9 for p in (w, b)]  # entries of different shapes: (w, b)[k]'s adjoint
    return np.sum((x @ w + b) ** 2)


def scaled_by_position(w, b, x):
    return sum(np.sum(p * (k + 1.0)) for k, p in enumerate([w, b, x]))


@pytest.mark.parametrize(
    "f", [decay_by_comprehension, scaled_by_position], ids=lambda f: f.__name__
)
@given(seed=st.integers(0, 2**16))
@settings(max_examples=10, deadline=None)
def test_an_entry_of_a_literal_picked_by_position_gets_its_own_adjoint(f, seed):
    rng = np.random.default_rng(seed)
    args = (rng.normal(size=(3, 2)), rng.normal(size=2), rng.normal(size=(4, 3)))
    check(f, args, wrt=(0, 1, 2))
    check_value(f, args)


# ---- a module-level or closed-over array is memory from outside the function ------------------
# The function reads such a value as a constant: a write into it (through another name, a view or
# a list) would change the caller's value and, read back, would not be seen by the gradient.

OUTSIDE = np.array([1.0, 2.0, 3.0])


def outside_iadd(x):
    s = OUTSIDE
    s += x  # W
    return np.sum(s * x)


def outside_setitem_read_back(x):
    s = OUTSIDE
    s[0] = x[0]  # W
    return np.sum(OUTSIDE * x)


def outside_view_written(x):
    s = OUTSIDE[0:2]
    s[0] = x[0] * 3.0  # W
    return np.sum(OUTSIDE * x)


def outside_transposed(x):
    s = OUTSIDE.T
    s *= x  # W
    return np.sum(s)


def outside_in_a_list(x):
    h = x * 2.0
    for p in [h, OUTSIDE]:
        p *= 0.5  # W
    return np.sum(h * x)


def outside_constant_write(x):
    s = OUTSIDE
    s *= 2.0  # W (no gradient flows through it, but Python would double OUTSIDE)
    return np.sum(s * x)


def _closed_over():
    table = np.array([0.5, -1.0, 2.0])

    def f(x):
        t = table
        t[1] = x[1]  # W
        return np.sum(table * x)

    return f


def outside_copied(x):
    s = OUTSIDE.copy()
    s += x
    s[0] = x[0] * 3.0
    return np.sum(s * x) + np.sum(OUTSIDE * x)


@pytest.mark.parametrize(
    "f",
    [
        outside_iadd,
        outside_setitem_read_back,
        outside_view_written,
        outside_transposed,
        outside_in_a_list,
        outside_constant_write,
        _closed_over(),
    ],
    ids=lambda f: f.__qualname__,
)
def test_a_write_into_an_array_from_outside_the_function_is_refused_at_its_line(f):
    before = OUTSIDE.copy()
    marker = "# W (no gradient" if f is outside_constant_write else "# W"
    lines, _ = inspect.findsource(f)
    want = [i + 1 for i, line in enumerate(lines) if marker in line]
    with pytest.raises(sg.UnsupportedSyntaxError, match="from outside the function") as e:
        sg.grad(f)(_X.copy())
    assert e.value.lineno in want and e.value.hint and "copy" in e.value.hint
    np.testing.assert_array_equal(OUTSIDE, before)  # refused before anything ran


def test_a_copy_of_an_array_from_outside_may_be_written():
    check(outside_copied, (_X.copy(),))
    check_value(outside_copied, (_X.copy(),))


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


def listed(lines):
    """``lines`` lines of arithmetic reading arrays back from small lists; every tenth writes into
    the fresh array the line before made (no list holds it yet)."""
    body, m = ["    a0 = np.tanh(x * w)", "    l0 = [a0, x]"], 0
    for i in range(1, lines // 2):
        if i % 10 == 0:
            body.append(f"    a{m}[{i % 4}] = np.sin(l{m - 1}[1][0])")
        else:
            m += 1
            body.append(f"    a{m} = np.sin(a{m - 1}) * w + l{m - 1}[0]")
            body.append(f"    l{m} = [a{m - 1}, a{max(0, m - 2)}] + l{max(0, m - 3)}[1:]")
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


def test_work_grows_linearly_with_the_lines_of_lists():
    small, large = work(listed(200)), work(listed(400))
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
