"""Language forms numpy code is written in: assert, nested literals, nested loop targets,
keyword-only parameters of helpers. Each against finite differences, in both the specialized and
the general code (``tests/corpus/harness.check``); what stays refused says where and why.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import sourcegrad as sg
from sourcegrad.errors import UnsupportedSyntaxError

from .corpus.harness import check, check_value
from .oracle import assert_close, fd_grad

V3 = np.array([0.3, -0.5, 0.9])
M23 = np.arange(6.0).reshape(2, 3) / 7.0 - 0.2
M32 = np.arange(6.0).reshape(3, 2) / 5.0 + 0.1


# ==== assert: runs in the forward, never differentiated ============================================


def asserts(x):
    assert x.ndim == 1
    assert np.all(np.isfinite(x)), "x must be finite"
    y = np.tanh(x) * 2.0
    assert y.shape == x.shape, f"shape {y.shape}"
    return np.sum(y * x)


def assert_fails(x):
    assert x.ndim == 2, "x must be a matrix"
    return np.sum(x)


def test_assert_runs_in_the_forward():
    check(asserts, (V3,))
    check_value(asserts, (V3,))


@pytest.mark.parametrize("specialize", [True, False])
def test_a_failing_assert_raises_as_python_does(specialize):
    with pytest.raises(AssertionError, match="x must be a matrix"):
        sg.grad(assert_fails, specialize=specialize)(V3)


# ==== nested list and tuple literals ===============================================================


def rotation(t, v):
    c, s = np.cos(t), np.sin(t)
    m = np.array([[c, -s], [s, c]])
    return np.sum((m @ v) ** 3)


def active_matrix(a, b, c, d):
    m = np.array([[a, b], [c, d]])
    return np.sum(m @ m) + np.linalg.det(m)


def mixed_matrix(a, b):
    m = np.array([[1.0, a], [b * a, 2.0]])
    return np.sum(m @ m * m)


def pad_constant_widths(x):
    y = np.pad(x, ((1, 1), (0, 0)))
    return np.sum(y**2 * np.arange(y.size).reshape(y.shape))


def constant_kernel(x):
    k = np.array([[1.0, -2.0], [0.5, 3.0]])
    return np.sum(np.tanh(x @ k))


def tensordot_axes(a, b):
    return np.sum(np.sin(np.tensordot(a, b, axes=([1], [0]))))


def nested_tuple_of_arrays(x):
    y = np.concatenate([np.stack([x, x * 2.0]), np.stack([x**2, -x])])
    z = np.array([[x, x * 2.0], [x**2, -x]]) * np.arange(12.0).reshape(2, 2, 3)
    return np.sum(y * y) + np.sum(z * z)


def deep_literal(a):
    t = np.array([[[a, 1.0], [2.0, a * a]], [[0.0, a], [a, -a]]])
    return np.sum(t * np.arange(8.0).reshape(2, 2, 2))


def nested_index_list(x):
    return np.sum(x[[[0, 1], [2, 0]]] ** 2)


@pytest.mark.parametrize(
    "f, args, wrt",
    [
        (rotation, (0.3, np.array([1.0, 2.0])), (0, 1)),
        (active_matrix, (0.4, -0.7, 1.1, 0.2), (0, 1, 2, 3)),
        (mixed_matrix, (0.4, 0.7), (0, 1)),
        (pad_constant_widths, (M23,), 0),
        (constant_kernel, (M32,), 0),
        (tensordot_axes, (M23, M32), (0, 1)),
        (nested_tuple_of_arrays, (V3,), 0),
        (deep_literal, (0.6,), 0),
        (nested_index_list, (V3,), 0),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_nested_literals(f, args, wrt):
    check(f, args, wrt=wrt)


def test_an_all_constant_nested_literal_is_one_constant():
    text = sg.source(sg.value_and_grad(pad_constant_widths))
    assert "((1, 1), (0, 0))" in text


# ==== nested loop targets ==========================================================================


def loop_over_pairs(x):
    pairs = [(x[0], x[1]), (x[1], x[2])]
    s = 0.0
    for a, b in pairs:
        s = s + a * b
    return s


def enumerate_pairs(x):
    pairs = [(x[0], x[1]), (x[1], x[2])]
    s = 0.0
    for i, (a, b) in enumerate(pairs):
        s = s + (i + 1) * np.sin(a * b)
    return s


def enumerate_zip(x):
    xs = [x[0], x[1], x[2]]
    ys = [x[2] ** 2, x[1], x[0] * 3.0]
    s = 0.0
    for i, (a, b) in enumerate(zip(xs, ys)):
        s = s + (i + 1) * np.tanh(a * b)
    return s


def zip_nested_target(x):
    pairs = [(x[0], x[1]), (x[1], x[2])]
    ws = [x[2], x[0]]
    s = 0.0
    for w, (a, b) in zip(ws, pairs):
        s = s + w * a - b * b
    return s


def enumerate_start(x):
    s = 0.0
    for i, v in enumerate(x, 1):
        s = s + i * v
    return s


@pytest.mark.parametrize("f", [loop_over_pairs, enumerate_pairs, enumerate_zip, zip_nested_target])
def test_nested_loop_targets(f):
    check(f, (V3,))


def test_enumerate_start_is_refused_not_ignored():
    with pytest.raises(UnsupportedSyntaxError, match="start="):
        sg.grad(enumerate_start)(V3)


# ==== keyword-only parameters ======================================================================


def scaled(x, *, scale=2.0, power):
    return scale * x**power


def calls_keyword_only(x):
    return np.sum(scaled(x, power=3)) + np.sum(scaled(x, scale=0.5, power=2))


def keyword_only_itself(x, w, *, scale=1.0, shift):
    return np.sum(np.tanh(x * w) * scale + shift * x)


def test_keyword_only_parameters_of_a_helper():
    check(calls_keyword_only, (V3,))


@pytest.mark.parametrize("specialize", [True, False])
@pytest.mark.parametrize("wrt", [0, "scale", ("x", "shift"), (1, "scale", "shift")])
def test_keyword_only_parameters_of_the_function_itself(wrt, specialize):
    x, w, scale, shift = V3, V3[::-1].copy(), 0.7, -0.4
    f = lambda x, w, scale, shift: keyword_only_itself(x, w, scale=scale, shift=shift)  # noqa: E731 (the oracle's view)
    names = ("x", "w", "scale", "shift")
    items = wrt if isinstance(wrt, tuple) else (wrt,)
    got = sg.grad(keyword_only_itself, wrt=wrt, specialize=specialize)(
        x, w, shift=shift, scale=scale
    )
    got = got if isinstance(wrt, tuple) else (got,)
    for g, item in zip(got, items):
        i = names.index(item) if isinstance(item, str) else item
        assert_close(g, fd_grad(f, (x, w, scale, shift), i), what=f"gradient wrt {item}")


def test_keyword_only_defaults_apply():
    g = sg.grad(keyword_only_itself, wrt="shift")(V3, V3, shift=0.2)
    assert_close(g, np.sum(V3))
    with pytest.raises(TypeError):
        sg.grad(keyword_only_itself)(V3, V3, 1.0, 0.2)  # keyword-only: as calling it would


# ==== np.where(condition) and max/min of more than two values ======================================


def where_indices(x, w):
    idx = np.where(x > 0)[0]  # one argument: the indices, as np.nonzero gives them
    return np.sum(x[idx] * w[idx]) + np.sum(w**2)


def max_of_several(x, w):
    return max(x[0], w[0], 0.1, x[1] * w[1]) + min(x[2], w[2], x[0] - w[1])


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from([where_indices, max_of_several]),
    hnp.arrays(np.float64, 3, elements=st.floats(-2, 2)),
    hnp.arrays(np.float64, 3, elements=st.floats(-2, 2)),
)
def test_where_of_a_condition_and_max_of_several(f, x, w):
    values = np.concatenate([x, w, [0.1, x[1] * w[1], x[0] - w[1]]])
    # away from ties and from the sign change, where the derivative jumps
    assume(np.min(np.abs(values[:, None] - values[None, :]) + np.eye(len(values))) > 1e-3)
    assume(np.min(np.abs(x)) > 1e-3)
    check(f, (x, w), wrt=(0, 1))


# ==== loops over a module-level list or a literal: read by index, like a local list ================

LAYERS = [np.array([0.5, -0.25, 1.0]), np.array([1.5, 0.2, -0.7])]
SCALES = (0.5, 2.0)


def loop_over_module_lists(x, w):
    h = x
    for W in LAYERS:
        h = np.tanh(h * W + w)
    for s in SCALES:
        h = h * s
    for c in [1.0, -2.0]:
        h = h + c * x
    return np.sum(h)


@settings(max_examples=20, deadline=None)
@given(
    hnp.arrays(np.float64, 3, elements=st.floats(-2, 2)),
    hnp.arrays(np.float64, 3, elements=st.floats(-2, 2)),
)
def test_loops_over_a_module_level_list_and_a_literal(x, w):
    check(loop_over_module_lists, (x, w), wrt=(0, 1))


def test_a_changed_module_level_list_is_read_again():
    x, w = np.array([0.3, -0.5, 0.9]), np.array([0.1, 0.2, 0.3])
    df = sg.grad(loop_over_module_lists, wrt=(0, 1))
    df(x, w)
    saved = LAYERS[0]
    try:
        LAYERS[0] = np.array([1.0, 1.0, 1.0])
        assert_close(df(x, w)[0], fd_grad(loop_over_module_lists, (x, w), 0))
    finally:
        LAYERS[0] = saved
