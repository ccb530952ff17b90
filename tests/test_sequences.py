"""Python lists and tuples are values: concatenation, repetition, slicing, assignment, reductions.

Each program is written to a real module (sourcegrad reads source) and its gradient compared with
central finite differences (``tests/oracle.py``), in both the general and the shape-specialized
code. The fuzz test draws whole programs of list operations with hypothesis.
"""

import os

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import sourcegrad as sg

from .fuzz.check import load
from .oracle import assert_close, fd_grad


def check(f, *args, wrt=0):
    """The general and the specialized gradient of ``f`` both match finite differences."""
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    for specialize in (False, True):
        df = sg.grad(f, wrt=wrt, specialize=specialize)
        for _ in range(2):  # the second call runs the specialized code
            got = df(*args)
        got = got if isinstance(wrt, tuple) else (got,)
        for g, i in zip(got, wrts):
            assert_close(
                g,
                fd_grad(f, args, i),
                what=f"d/d{f.__code__.co_varnames[i]} (specialize={specialize})",
            )


# ---- the forms users write ------------------------------------------------------------------------
def f_concat_loop(x):
    hs = [x]
    h = x
    for i in range(3):
        h = np.tanh(h * 1.5)
        hs = hs + [h]
    return np.sum(np.stack(hs) * np.arange(4.0)[:, None])


def f_mean_of_losses(x):
    losses = []
    for i in range(3):
        losses.append(np.sum(x * x * (i + 1.0)))
    return np.mean(losses)


def f_sum_of_literal(a):
    return np.sum([1.0, a * a, 2.0])


def f_mean_axis(a):
    return np.sum(np.mean([a, a + 2.0, a * a], axis=0) * np.array([1.0, -2.0]))


def f_tuple_concat(x):
    t = (x,) + (x * 2.0,)
    return np.sum(t[0] * t[1])


def f_repeat(x):
    hs = [x * 1.0] * 3
    return np.sum(np.stack(hs) * np.arange(3.0)[:, None])


def f_repeat_left(x):
    hs = 2 * [x, np.sin(x)]
    return np.sum(np.stack(hs) * np.arange(4.0)[:, None])


def f_builtin_sum(x):
    return np.sum(sum([x, x * x, 3.0]))


def f_builtin_max(a):
    return max([a, 2.0 * a - 1.0, 0.5])


def f_builtin_min(a):
    return min([a * a, a + 0.25])


def f_append_function(x):
    return np.sum(np.append([1.0, 2.0], x * x) * np.arange(5.0))


def f_slice(x):
    hs = [x, x * 2.0, x * x, np.sin(x)]
    tail = hs[1:]
    return np.sum(np.stack(tail[::2]) ** 2)


def f_assign(x):
    hs = [x, x * 2.0, x * x]
    hs[1] = np.cos(hs[2])
    return np.sum(np.stack(hs) * np.arange(3.0)[:, None])


def f_extend(x):
    hs = [x]
    hs.extend([x * 2.0, np.exp(x)])
    return np.sum(np.concatenate(hs) ** 2)


def f_nested_mean(x):
    per_step = []
    for k in range(2):
        per_step.append(np.mean([x * k, x + k], axis=0))
    return np.sum(np.stack(per_step) ** 2)


def f_enumerate_rebound(v):
    for i, e in enumerate(v):  # iterates the array v held when the loop began
        v = 0.5 * v + e * i
    return np.sum(v * v)


def f_zip_reversed_rebound(v, w):
    for a, b in zip(v, w):
        v = v * b + a
    for e in reversed(w):
        w = w * 0.9 + e
    return np.sum(v * w)


FORMS = [
    (f_concat_loop, np.array([0.3, -0.5])),
    (f_mean_of_losses, np.array([0.3, -0.5, 1.1])),
    (f_sum_of_literal, 1.3),
    (f_mean_axis, np.array([0.4, 0.9])),
    (f_tuple_concat, np.array([0.3, 1.2])),
    (f_repeat, np.array([0.7, -0.2])),
    (f_repeat_left, np.array([0.7, -0.2])),
    (f_builtin_sum, np.array([0.4, 1.5])),
    (f_builtin_max, 1.3),
    (f_builtin_max, 0.2),
    (f_builtin_min, 0.9),
    (f_append_function, np.array([0.5, 1.5, -1.0])),
    (f_slice, np.array([0.2, 0.8])),
    (f_assign, np.array([0.2, 0.8])),
    (f_extend, np.array([0.2, -0.6])),
    (f_nested_mean, np.array([0.3, 0.7])),
    (f_enumerate_rebound, np.array([0.3, -0.7, 1.1])),
]


def test_loops_read_the_sequence_they_began_with():
    v, w = np.array([0.3, -0.7]), np.array([1.1, 0.4])
    check(f_zip_reversed_rebound, v, w, wrt=(0, 1))


@pytest.mark.parametrize("f, x", FORMS, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(FORMS)])
def test_sequence_form(f, x):
    check(f, x)


def f_param_list_plus(xs, y):
    return np.sum(np.stack(xs + [y]))


def test_a_list_argument_concatenated_with_a_list():
    """``xs`` is a parameter (its kind is unknown when compiling), ``[y]`` a list: concatenation."""
    xs = [np.array([0.5, 1.0]), np.array([2.0, -1.0])]
    g = sg.grad(f_param_list_plus, wrt=(0, 1))(xs, np.array([0.3, 0.4]))
    assert all(np.allclose(gi, 1.0) for gi in g[0]) and np.allclose(g[1], 1.0)


def f_params_added(a, b):
    return np.sum(np.stack(a + b))


def test_two_list_arguments_are_concatenated():
    """The code is specialized to the call, which says both parameters are lists: ``a + b`` is
    their concatenation, each entry's adjoint its own."""
    a, b = [np.array([0.5, 1.0])], [np.array([2.0, 3.0]), np.array([1.0, -1.0])]
    ga, gb = sg.grad(f_params_added, wrt=(0, 1))(a, b)
    assert len(ga) == 1 and len(gb) == 2
    assert all(np.array_equal(g, np.ones(2)) for g in (*ga, *gb))


def test_a_list_argument_never_reaches_an_array_rule():
    """``a + b`` compiled for arrays (the general code does not know its parameters' kinds),
    called with two lists: refused, never summed as an array."""
    a = [np.array([0.5, 1.0])]
    with pytest.raises(sg.SourcegradError, match="list"):
        sg.grad(f_params_added, specialize=False)(a, [np.array([2.0, 3.0])])


# ---- a fuzz test of list programs --------------------------------------------------------------------
@st.composite
def list_programs(draw):
    """A program over a list of same-shaped arrays: build, append, concatenate, repeat, slice,
    assign, extend, index, then reduce."""
    lines = ["def f(x, y):", "    xs = [x, y * 2.0]"]
    n = 2
    for _ in range(draw(st.integers(1, 6))):
        op = draw(
            st.sampled_from(
                ["append", "concat", "tuple_concat", "repeat", "slice", "assign", "extend", "loop"]
            )
        )
        i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if op == "append":
            lines.append(f"    xs.append(np.sin(xs[{i}]) * xs[{j}])")
            n += 1
        elif op == "concat":
            lines.append(f"    xs = xs + [np.tanh(xs[{i}]), xs[{j}] * 0.5]")
            n += 2
        elif op == "tuple_concat":
            lines.append(f"    xs = list(tuple(xs) + (xs[{i}] + xs[{j}],))")
            n += 1
        elif op == "repeat" and n <= 4:
            lines.append("    xs = xs * 2")
            n *= 2
        elif op == "slice" and n > 2:
            lines.append("    xs = xs[1:]")
            n -= 1
        elif op == "assign":
            lines.append(f"    xs[{i}] = np.cos(xs[{j}])")
        elif op == "extend":
            lines.append(f"    xs.extend([xs[{i}] * xs[{j}]])")
            n += 1
        elif op == "loop":
            lines.append("    for k in range(2):")
            lines.append(f"        xs = xs + [xs[-1] * 0.9 + xs[{i}] * 0.1]")
            n += 2
    reduce = draw(
        st.sampled_from(
            [
                "np.sum(np.stack(xs) * W[: len(xs), None])",
                "np.sum(np.mean(xs, axis=0) ** 2)",
                "np.sum(sum(xs) * np.array([1.0, -0.5]))",
                "np.sum(np.stack(xs[::2]) ** 2) + np.sum(xs[-1])",
                "np.mean(np.concatenate(xs) ** 2)",
            ]
        )
    )
    lines.append(f"    return {reduce}")
    return "W = np.linspace(1.0, 2.0, 64)\n\n" + "\n".join(lines) + "\n"


@settings(max_examples=int(os.environ.get("SOURCEGRAD_FUZZ_PROGRAMS", "30")), deadline=None)
@given(list_programs(), st.integers(0, 2**16))
def test_random_list_programs(source, seed):
    note(source)
    f = load("import numpy as np\n\n" + source).f
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2)
    check(f, x, y, wrt=(0, 1))


# ---- a list beside an array: numpy's operation, not the list's ---------------------------------------
# Python decides ``a + b`` and ``a * b`` by the values: two lists concatenate, a list and a Python
# int repeat, but a list and an array (or a float, or a numpy integer) are numpy's elementwise
# operation. Each form takes ``x`` (an array), ``xs`` (a list of floats) and ``k`` (an int).
MIXED_FORMS = [
    "np.sum(x * [2.0, -1.0, 0.5])",
    "np.sum([0.5, 1.0, 2.0] + x)",
    "np.sum(x - [1.0, 2.0, 3.0]) + np.sum((1.0, 2.0, 3.0) / (x * x + 1.0))",
    "np.sum((x,) * 2 + (x * x,))",
    "np.sum(np.array(xs + [x[0]]) ** 2)",
    "np.sum(np.array(xs * k) * np.arange(len(xs) * k))",
    "np.sum(np.stack([x] * k) * x)",
    "np.sum(xs * x) + np.sum(x * xs)",
    "np.sum(np.array([1.0, 2.0, 3.0] * (np.argmax(x) + 1)) * x[0])",
    "np.sum(np.array(tuple(xs) + (x[1],)) * np.array([1.0, 2.0, 3.0, 4.0]))",
    "np.sum(np.array([x[0]] * (len(xs) + 1))) * xs[2]",
    "np.sum(xs + x * 2.0)",
]
# ``xs * k`` of two parameters: the general code knows neither kind and refuses at run time
# (the code specialized to the call knows a list and an int: a repetition)
GENERAL_REFUSES = {"np.sum(np.array(xs * k) * np.arange(len(xs) * k))"}


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(MIXED_FORMS),
    st.lists(st.floats(-2, 2), min_size=3, max_size=3),
    st.lists(st.floats(-2, 2), min_size=3, max_size=3),
    st.integers(1, 3),
)
def test_a_list_beside_an_array_is_numpy_arithmetic(tmp_path_factory, form, x, xs, k):
    note(form)
    module = load(
        f"import numpy as np\n\n\ndef f(x, xs, k):\n    return {form}\n",
        str(tmp_path_factory.getbasetemp()),
    )
    x = np.array(x)
    if form in GENERAL_REFUSES and k > 1:  # (k == 1: a list's repetition is its product by 1)
        with pytest.raises(sg.SourcegradError, match="concatenation or repetition"):
            sg.grad(module.f, wrt=(0, 1), specialize=False)(x, xs, k)
        specialized = sg.grad(module.f, wrt=(0, 1))(x, xs, k)
        for i, g in enumerate(specialized):
            assert_close(g, fd_grad(module.f, (x, xs, k), i))
    else:
        check(module.f, x, xs, k, wrt=(0, 1))


def f_two_lists_inside_a_list(p):
    zs = p[0] + p[1]
    return np.sum(np.array(zs) * np.array([1.0, 10.0]))


def test_lists_inside_a_list_argument_are_refused_not_summed():
    """``p[0] + p[1]``: entries of a container, whose kinds no call tells. Python concatenates
    them; the array rule the compiler chose cannot tell that from broadcasting, and refuses."""
    with pytest.raises(sg.SourcegradError, match="concatenation or repetition"):
        sg.grad(f_two_lists_inside_a_list)([[1.0], [3.0]])


# ---- second order: the tangent code of a sequence primitive, differentiated again ---------------------
# ``hvp`` differentiates the generated tangent code, whose ``concat_sequences``/``repeat_sequence``
# calls take sequences of tangents: they must stay sequence operations, not arrays.
SECOND_ORDER_FORMS = [
    "np.sum(np.stack([x] + [y * x]) ** 2)",
    "np.sum(np.stack([x] * 3) * np.arange(1.0, 4.0)[:, None] * x)",
    "np.sum(np.stack((x, np.sin(x)) + (y,)) ** 3)",
    "np.sum(x * [2.0, -1.0, 0.5] * x + [1.0, 2.0, 3.0] * x ** 3)",
]


def fd_hvp(f, x, v, h=1e-4):
    """(H v)_i from four values of ``f`` around ``x``, along e_i and ``v``."""
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e + h * v) - f(x + e - h * v) - f(x - e + h * v) + f(x - e - h * v)) / (
            4 * h * h
        )
    return out


@settings(max_examples=15, deadline=None)
@given(
    st.sampled_from(SECOND_ORDER_FORMS),
    st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3),
    st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3),
)
def test_second_derivatives_through_sequences(tmp_path_factory, form, x, v):
    note(form)
    module = load(
        f"import numpy as np\n\n\ndef f(x, y):\n    return {form}\n",
        str(tmp_path_factory.getbasetemp()),
    )
    x, v, y = np.array(x), np.array(v), np.array([0.5, -1.0, 2.0])
    got = sg.hvp(module.f)(x, y, v)
    assert_close(got, fd_hvp(lambda z: module.f(z, y), x, v), rtol=1e-4, atol=1e-4, what="H v")


# ---- every pairing of operand kinds under + and * --------------------------------------------------
# An array, a list argument, list and tuple literals, an int argument and literal, a float, a
# numpy float and a numpy integer, a list and a tuple made from values: Python decides what
# ``a + b`` and ``a * b`` are from these, and the gradient must follow (or the call be refused).
OPERANDS = [
    "x",
    "xs",
    "[x[0], x[1], x[2]]",
    "(1.0, 2.0, 3.0)",
    "k",
    "2",
    "2.0",
    "np.sum(x)",
    "list(x)",
    "tuple(xs)",
    "np.argmax(x)",
    "x[0]",
]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(OPERANDS), st.sampled_from(OPERANDS), st.sampled_from("+*"), st.booleans())
def test_every_pairing_of_operand_kinds(tmp_path_factory, a, b, op, specialize):
    source = (
        "import numpy as np\n\n\ndef f(x, xs, k):\n"
        f"    z = ({a}) {op} ({b})\n"
        "    return np.sum(np.array(z) ** 2)\n"
    )
    note(source)
    module = load(source, str(tmp_path_factory.getbasetemp()))
    args = (np.array([0.3, -0.5, 0.9]), [0.2, 0.4, -0.1], 2)
    try:
        module.f(*args)
    except (TypeError, ValueError):
        return  # Python or numpy refuses these operands themselves
    try:
        gx, gxs = sg.grad(module.f, wrt=(0, 1), specialize=specialize)(*args)
    except sg.SourcegradError:
        return  # refused, with its reason: never a wrong number
    assert_close(gx, fd_grad(module.f, args, 0), what="d/dx")
    assert_close(np.asarray(gxs, dtype=float), fd_grad(module.f, args, 1), what="d/dxs")
