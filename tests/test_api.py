"""The public API: forms of grad/value_and_grad/vjp, wrt selection, structure, shape and dtype."""

import linecache
import math
import threading

import numpy as np
import pytest
from hypothesis import given

import sourcegrad as sg
from sourcegrad.testing import arrays

from .oracle import assert_close, fd_grad


def quad(a, b):
    return np.sum(a * a * b + np.sin(b))


@sg.grad
def decorated(x):
    return np.sum(np.tanh(x))


@sg.grad(wrt=(0, 1))
def decorated_pair(a, b):
    return np.sum(a * b)


@sg.grad(wrt="w1")
def decorated_named(x, w1):
    return np.sum(x @ w1)


def test_decorator_forms():
    x = np.array([0.1, -0.3])
    assert_close(decorated(x), 1 - np.tanh(x) ** 2)
    ga, gb = decorated_pair(np.ones(2), np.arange(2.0))
    assert_close(ga, np.arange(2.0))
    assert_close(gb, np.ones(2))
    w = np.ones((2, 3))
    assert_close(decorated_named(np.array([1.0, 2.0]), w), np.array([[1.0] * 3, [2.0] * 3]))


@given(arrays(shape=(3,)), arrays(shape=(3,)))
def test_wrt_by_index_name_and_tuple_agree_with_finite_differences(a, b):
    assert_close(sg.grad(quad)(a, b), fd_grad(quad, (a, b), 0))
    assert_close(sg.grad(quad, wrt="b")(a, b), fd_grad(quad, (a, b), 1), rtol=1e-5, atol=1e-5)
    ga, gb = sg.grad(quad, wrt=(0, "b"))(a, b)
    assert_close(ga, fd_grad(quad, (a, b), 0))
    value, g = sg.value_and_grad(quad)(a, b)
    assert value == pytest.approx(quad(a, b))
    assert_close(g, ga)


def test_lambdas_and_several_on_one_line():
    f, g = (lambda x: np.sum(np.sin(x) ** 2)), (lambda y: np.sum(y**3))
    x = np.array([0.5, 1.0])
    assert_close(sg.grad(f)(x), np.sin(2 * x))
    assert_close(sg.grad(g)(x), 3 * x**2)


def test_float32_in_float32_out_and_python_float_in_float_out():
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    g = sg.grad(decorated.__wrapped__)(x)
    assert g.dtype == np.float32 and g.shape == x.shape
    out = sg.grad(lambda t: math.sin(t) * t)(0.3)
    assert type(out) is float
    assert out == pytest.approx(math.cos(0.3) * 0.3 + math.sin(0.3))


def test_gradient_has_the_structure_of_a_dict_argument():
    params = {"w": np.ones((2, 2)), "b": np.zeros(2)}

    def loss(p, x):
        return np.sum(np.tanh(x @ p["w"] + p["b"]))

    g = sg.grad(loss)(params, np.ones((3, 2)))
    assert set(g) == {"w", "b"} and g["w"].shape == (2, 2) and g["b"].shape == (2,)


def test_nonscalar_output_points_to_vjp():
    with pytest.raises(sg.NonScalarOutputError, match="vjp"):
        sg.grad(lambda x: x * 2)(np.ones(3))


def test_vjp_with_a_non_scalar_cotangent():
    def f(x):
        return np.sin(x) * x

    x = np.array([0.2, 0.4, -0.7])
    value, pullback = sg.vjp(f)(x)
    ct = np.array([1.0, -2.0, 0.5])
    assert_close(value, f(x))
    assert_close(pullback(ct), ct * (np.cos(x) * x + np.sin(x)))
    with pytest.raises(RuntimeError, match="once"):
        pullback(ct)


def test_source_is_registered_in_linecache():
    g = sg.grad(quad)
    text = sg.source(g)
    filename = g.compiled().filename
    assert filename.startswith("<sourcegrad:")
    assert "".join(linecache.getlines(filename)).count(text.splitlines()[1]) == 1
    with pytest.raises(TypeError):
        sg.source(quad)


def test_wrt_errors():
    with pytest.raises(sg.WrtError, match="out of range"):
        sg.grad(quad, wrt=2)
    with pytest.raises(sg.WrtError, match="names no parameter"):
        sg.grad(quad, wrt="c")
    with pytest.raises(sg.WrtError, match="floating-point"):
        sg.grad(quad)(np.arange(3), np.ones(3))


def test_concurrent_first_calls_compile_once_and_agree():
    def f(x):
        return np.sum(np.exp(np.sin(x)))

    g = sg.grad(f)
    x = np.linspace(0, 1, 7)
    want = np.cos(x) * np.exp(np.sin(x))
    results = [None] * 8

    def work(i):
        results[i] = g(x)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert_close(r, want)


def scaled_softplus(x):
    return np.log1p(np.exp(x)) * 2.0


def test_user_rule_is_used_and_replacing_one_warns():
    # a rule for a library-like function: callers are compiled against it, not its source
    import sourcegrad.transforms.rules as R

    try:

        @sg.adjoint(scaled_softplus)
        def _(y, x):
            d[x] += d[y] * 2.0 / (1.0 + np.exp(-x))  # noqa: F821 (template notation)

        def f(x):
            return np.sum(scaled_softplus(x))

        x = np.array([-1.0, 0.5, 2.0])
        assert_close(sg.grad(f)(x), fd_grad(f, (x,), 0))
        with pytest.warns(UserWarning, match="replaces an existing"):

            @sg.adjoint(np.tanh)
            def _(y, x):
                d[x] += d[y] * (1.0 - y * y)  # noqa: F821
    finally:
        R.RULES.pop(scaled_softplus, None)
        from sourcegrad.transforms.rules import unary

        unary([np.tanh], "d[y] * (1.0 - y * y)")


def test_compiling_different_functions_concurrently_matches_serial():
    def make(k):
        def f(x):
            y = x
            for i in range(3 + k % 3):
                y = np.sin(y) * (1.0 + 0.1 * k)
            return np.sum(y)

        return f

    x = np.linspace(-1, 1, 5)
    serial = [sg.grad(make(k))(x) for k in range(8)]
    results = [None] * 8

    def work(k):
        results[k] = sg.grad(make(k))(x)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(results, serial):
        assert np.array_equal(a, b)


def masked_square(x, y):
    return np.sum(x * x) + np.sum(y[0])


_X = np.array([0.5, -1.0, 2.0])
_MASKED = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])


@pytest.mark.parametrize(
    "args, what",
    [
        ((_MASKED, [_X]), "masked array"),  # differentiated
        ((_X, [_MASKED]), "masked array"),  # inside a list that is not
        ((np.matrix([[1.0, 2.0, 3.0]]), [_X]), "np.matrix"),
        ((_X, (np.matrix([[1.0, 2.0]]),)), "np.matrix"),
    ],
)
def test_masked_arrays_and_matrices_are_refused_wherever_passed(args, what):
    """numpy's functions skip a masked entry and np.matrix reads * as a matrix product: a gradient
    computed by the plain rules would ignore both, so either is refused when it is passed."""
    for g in (sg.grad(masked_square), sg.value_and_grad(masked_square), sg.vjp(masked_square)):
        with pytest.raises(sg.errors.UnsupportedValueError, match=what):
            g(*args)
