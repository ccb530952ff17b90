"""Derivatives of gradients (``sourcegrad/higher.py``): ``grad(grad(f))``, ``vjp(grad(f))``, and
``grad``/``vjp`` of functions that call a gradient made by sourcegrad (a gradient penalty, a
meta-learning step), against central finite differences (``oracle.py``), with loops, branches,
``while`` and in-place writes in the differentiated gradient's function."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import sourcegrad as sg
from sourcegrad.errors import MissingTangentError, UsageError

from .oracle import assert_close, fd_grad, fd_vjp

# ---- inner functions: scalar-valued, of w and x (both differentiable) ---------------------------


def tanh_net(w, x):
    return np.sum(np.tanh(w * x) ** 2) + 0.1 * np.sum(w**3)


def looped(w, x):
    h = w * x
    for i in range(3):
        h = np.sin(h) * w + x
    return np.sum(h * h)


def branched(w, x):
    if np.sum(w) > 0:
        y = np.exp(0.5 * w) * x
    else:
        y = np.cos(w) * x * x
    return np.sum(y * w)


def counted_while(w, x):
    k = 0
    h = x
    while k < 3:
        h = np.tanh(h * w) + 0.5 * x
        k = k + 1
    return np.sum(h**2)


def buffered(w, x):
    out = np.zeros(3)
    for i in range(3):
        out[i] = np.sum(np.sin(w * x[i])) * w[i]
    return np.sum(out * out)


INNERS = [tanh_net, looped, branched, counted_while, buffered]


# ---- outer functions that call a gradient -------------------------------------------------------


def penalty(inner):
    g = sg.grad(inner)

    def with_penalty(w, x):
        return inner(w, x) + 0.5 * np.sum(g(w, x) ** 2)

    return with_penalty


def meta(inner):
    g = sg.grad(inner)

    def after_two_steps(w, x):
        for i in range(2):
            w = w - 0.1 * g(w, x)
        return inner(w, x)

    return after_two_steps


def meta_while(inner):
    g = sg.grad(inner)

    # a loop kept as a loop: the call's operands come back from the tape
    def after_three_steps(w, x):
        k = 0
        while k < 3:
            w = w - 0.1 * g(w, x)
            k = k + 1
        return inner(w, x)

    return after_three_steps


def both_parts(inner):
    vg = sg.value_and_grad(inner)

    def value_and_slope(w, x):
        v, gw = vg(w, x)
        return v * np.sum(gw * x)

    return value_and_slope


def two_gradients(inner):
    g2 = sg.grad(inner, wrt=(0, 1))

    def mixed(w, x):
        gw, gx = g2(w, x)
        return np.sum(gw**2) + np.sum(gx * x)

    return mixed


OUTERS = [penalty, meta, meta_while, both_parts, two_gradients]

vectors = st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3).map(np.array)


def _away_from_the_branch(w):
    assume(abs(np.sum(w)) > 1e-2)  # branched: finite differences must not step across the branch


@pytest.mark.parametrize("outer", OUTERS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("inner", INNERS, ids=lambda f: f.__name__)
@given(w=vectors, x=vectors)
@settings(max_examples=8, deadline=None)
def test_grad_of_a_function_that_calls_a_gradient(inner, outer, w, x):
    _away_from_the_branch(w)
    f = outer(inner)
    gw, gx = sg.grad(f, wrt=(0, 1))(w, x)
    assert_close(gw, fd_grad(f, (w, x), 0), rtol=1e-4, atol=1e-5)
    assert_close(gx, fd_grad(f, (w, x), 1), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("inner", INNERS, ids=lambda f: f.__name__)
@given(w=vectors, x=vectors, u=vectors)
@settings(max_examples=8, deadline=None)
def test_vjp_of_a_meta_learning_step(inner, w, x, u):
    _away_from_the_branch(w)
    g = sg.grad(inner)

    def step(w, x):
        return w - 0.1 * g(w, x)

    value, pullback = sg.vjp(step)(w, x)
    assert_close(value, w - 0.1 * fd_grad(inner, (w, x), 0), rtol=1e-5, atol=1e-6)
    assert_close(pullback(u), fd_vjp(step, (w, x), 0, u), rtol=1e-4, atol=1e-5)


def _directional_fd(f, args, tangents, h=1e-6):
    """d/de f(args + e tangents) by central differences (a tangent of None: that argument stays)."""

    def at(sign):
        return np.asarray(
            f(*(a if t is None else a + sign * h * t for a, t in zip(args, tangents)))
        )

    return (at(1) - at(-1)) / (2 * h)


def step_with(inner):
    g = sg.grad(inner)

    def step(w, x):
        return w - 0.1 * g(w, x)

    return step


def value_times_gradient(inner):
    vg = sg.value_and_grad(inner)

    def scaled(w, x):
        v, gw = vg(w, x)
        return v * gw

    return scaled


def both_gradients(inner):
    g2 = sg.grad(inner, wrt=(0, 1))

    def summed(w, x):
        gw, gx = g2(w, x)
        return gw * x + gx

    return summed


@pytest.mark.parametrize(
    "outer", [step_with, value_times_gradient, both_gradients], ids=lambda o: o.__name__
)
@pytest.mark.parametrize("inner", INNERS, ids=lambda f: f.__name__)
@given(w=vectors, x=vectors, t=vectors, u=vectors)
@settings(max_examples=6, deadline=None)
def test_jvp_of_a_function_that_calls_a_gradient(inner, outer, w, x, t, u):
    _away_from_the_branch(w)
    f = outer(inner)
    _, got = sg.jvp(f)(w, x, t)
    assert_close(got, _directional_fd(f, (w, x), (t, None)), rtol=1e-4, atol=1e-5)
    _, got = sg.jvp(f, wrt=(0, 1))(w, x, (t, u))
    assert_close(got, _directional_fd(f, (w, x), (t, u)), rtol=1e-4, atol=1e-5)


def _second_fd(f, args, i, j):
    """d/d args[j] of d f / d args[i], both by central differences (no sourcegrad code)."""
    return fd_grad(lambda *a: fd_grad(f, a, i, h=1e-5), args, j, h=1e-4)


def scalar_loop(a, b):
    s = a
    for i in range(3):
        s = np.sin(s * b) + a
    return s * s * b


def scalar_branch(a, b):
    if a > 0:
        return np.exp(a * b) + a**3
    return np.log(1.0 + a * a) * b


def scalar_while(a, b):
    t = a
    n = 0
    while n < 4:
        t = t * np.cos(b) + 0.3 * a * t
        n = n + 1
    return t


scalars = st.floats(-1.2, 1.2).filter(lambda v: abs(v) > 1e-2)


@pytest.mark.parametrize("f", [scalar_loop, scalar_branch, scalar_while], ids=lambda f: f.__name__)
@given(a=scalars, b=scalars)
@settings(max_examples=10, deadline=None)
def test_grad_of_grad(f, a, b):
    assert_close(sg.grad(sg.grad(f))(a, b), _second_fd(f, (a, b), 0, 0), rtol=1e-4, atol=1e-5)
    mixed = sg.grad(sg.grad(f), wrt=1)(a, b)
    assert isinstance(mixed, float)
    assert_close(mixed, _second_fd(f, (a, b), 0, 1), rtol=1e-4, atol=1e-5)
    value, second = sg.value_and_grad(sg.grad(f, wrt=1), wrt=(0, 1))(a, b)
    assert_close(value, fd_grad(f, (a, b), 1), rtol=1e-5, atol=1e-6)
    assert_close(second[0], _second_fd(f, (a, b), 1, 0), rtol=1e-4, atol=1e-5)
    assert_close(second[1], _second_fd(f, (a, b), 1, 1), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("inner", INNERS, ids=lambda f: f.__name__)
@given(w=vectors, x=vectors, u=vectors)
@settings(max_examples=6, deadline=None)
def test_vjp_of_a_gradient_is_the_hessian_times_the_cotangent(inner, w, x, u):
    _away_from_the_branch(w)
    value, pullback = sg.vjp(sg.grad(inner), wrt=(0, 1))(w, x)
    hw, hx = pullback(u)
    first = lambda w, x: fd_grad(inner, (w, x), 0, h=1e-5)  # noqa: E731
    assert_close(value, first(w, x), rtol=1e-5, atol=1e-6)
    assert_close(hw, fd_vjp(first, (w, x), 0, u, h=1e-4), rtol=1e-4, atol=1e-5)
    assert_close(hx, fd_vjp(first, (w, x), 1, u, h=1e-4), rtol=1e-4, atol=1e-5)
    assert_close(pullback(u), (hw, hx), rtol=0, atol=0)  # the pullback runs again


def test_float32_in_float32_out():
    w, x = np.array([0.3, -0.2, 0.5], np.float32), np.array([1.0, 2.0, -0.5], np.float32)
    f = penalty(looped)
    got = sg.grad(f)(w, x)
    assert got.dtype == np.float32
    assert_close(got, fd_grad(f, (w.astype(float), x.astype(float)), 0), rtol=2e-3, atol=2e-3)


def test_only_the_active_arguments_get_second_derivatives():
    g = sg.grad(looped)

    def data_fixed(w, x):
        return np.sum(g(w, x) ** 2)

    w, x = np.array([0.3, -0.2, 0.5]), np.array([1.0, 2.0, -0.5])
    assert_close(sg.grad(data_fixed)(w, x), fd_grad(data_fixed, (w, x), 0), rtol=1e-4, atol=1e-5)
    text = sg.source(sg.grad(data_fixed))
    assert "pullback_of_gradient(_sg_looped_grad, 0," in text and ", 1," not in text
    assert list(g._second_order) == [
        (("w",), ())
    ]  # (the arguments differentiated, the tangent's: g's own)


def test_source_of_grad_of_grad_is_generated_code():
    text = sg.source(sg.grad(sg.grad(scalar_loop)))
    assert "s_dot" in text and "_bar" in text


# ---- refusals ------------------------------------------------------------------------------------


def test_grad_of_grad_needs_a_scalar_argument():
    with pytest.raises(UsageError, match="scalar value.*vjp"):
        sg.grad(sg.grad(tanh_net))(np.ones(3), np.ones(3))


@pytest.mark.parametrize(
    "make",
    [
        lambda f: sg.jvp(f),
        lambda f: sg.hvp(f),
        lambda f: sg.vjp(f),
        lambda f: sg.grad(f, has_aux=True),
        lambda f: sg.grad(f, wrt=(0, 1)),
    ],
)
def test_grad_of_what_is_not_a_one_argument_gradient_is_refused(make):
    with pytest.raises(UsageError):
        sg.grad(make(tanh_net))


def test_grad_of_grad_with_respect_to_an_int_is_refused():
    with pytest.raises(UsageError, match="'b'.*an int"):
        sg.grad(sg.grad(scalar_loop), wrt=1)(0.5, 2)


def test_third_derivatives_are_refused():
    with pytest.raises(UsageError, match="third derivatives"):
        sg.grad(sg.grad(sg.grad(scalar_loop)))


def test_jvp_and_hvp_of_a_gradient_are_refused():
    for transform in (sg.jvp, sg.hvp):
        with pytest.raises(UsageError, match="original function"):
            transform(sg.grad(tanh_net))


_aux_grad = sg.grad(lambda w, x: (np.sum(w * x), 1), has_aux=True)
_plain_grad = sg.grad(tanh_net)


def calls_an_aux_gradient(w, x):
    g, aux = _aux_grad(w, x)
    return np.sum(g * g)


def calls_with_a_keyword(w, x):
    return np.sum(_plain_grad(w, x=x))


def calls_in_forward_mode(w, x):
    return np.sum(_plain_grad(w, x) ** 2)


def test_a_module_level_gradient_keeps_its_name_in_the_generated_code():
    assert "pullback_of_gradient(_plain_grad, 0, " in sg.source(sg.grad(calls_in_forward_mode))


def _cumulative(w):
    return np.sum(np.cumprod(w))  # no tangent rule


_cumulative_grad = sg.grad(_cumulative)


def calls_a_gradient_without_second_derivatives(w):
    return np.sum(_cumulative_grad(w) ** 2)


def _line(fn, offset):
    return fn.__code__.co_firstlineno + offset


@pytest.mark.parametrize(
    "run, exc, match, fn, offset",
    [
        (
            lambda w: sg.grad(calls_an_aux_gradient)(w, w),
            sg.UnsupportedSyntaxError,
            "has_aux",
            calls_an_aux_gradient,
            1,
        ),
        (
            lambda w: sg.grad(calls_with_a_keyword)(w, w),
            sg.UnsupportedSyntaxError,
            "positional",
            calls_with_a_keyword,
            1,
        ),
        (
            lambda w: sg.hvp(calls_in_forward_mode)(w, w, w),
            sg.MissingAdjointError,
            "a third derivative",  # (in the user's terms, not the runtime helper's name)
            calls_in_forward_mode,
            1,
        ),
        (
            lambda w: sg.grad(calls_a_gradient_without_second_derivatives)(w),
            MissingTangentError,
            "cumprod",
            _cumulative,
            1,
        ),
    ],
    ids=["aux", "keyword", "hvp: third derivatives", "no-tangent-rule-inside"],
)
def test_what_has_no_second_derivatives_is_refused_at_its_line(run, exc, match, fn, offset):
    with pytest.raises(exc, match=match) as e:
        run(np.array([0.5, 0.25, 0.75]))
    assert e.value.lineno == _line(fn, offset)
    assert e.value.filename == __file__


def dict_inner(p, x):
    return np.sum(np.tanh(p["a"] * x) ** 2) + np.sum(p["b"] ** 3)


_dict_grad = sg.grad(dict_inner)


def uses_one_entry_of_a_dict_gradient(p, x):
    gp = _dict_grad(p, x)
    return np.sum(gp["a"] ** 2) + np.sum(p["a"] ** 3) + np.sum(np.sin(p["b"]))


@given(a=vectors, b=vectors, x=vectors)
@settings(max_examples=8, deadline=None)
def test_a_dict_gradient_whose_entries_are_read_in_part(a, b, x):
    got = sg.grad(uses_one_entry_of_a_dict_gradient)({"a": a, "b": b}, x)
    f = uses_one_entry_of_a_dict_gradient
    assert_close(got["a"], fd_grad(lambda a: f({"a": a, "b": b}, x), (a,), 0), rtol=1e-4, atol=1e-5)
    assert_close(got["b"], fd_grad(lambda b: f({"a": a, "b": b}, x), (b,), 0), rtol=1e-4, atol=1e-5)


def test_the_readme_example_runs(tmp_path):
    from .test_readme import code_blocks, run_python, section

    block = code_blocks(section("### Forward mode, Jacobians and higher derivatives"), "python")[1]
    proc = run_python(block, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "pullback_of_gradient(g, 0, " in proc.stdout
