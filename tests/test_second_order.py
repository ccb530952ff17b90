"""Second order through the reductions whose tangent multiplies by a runtime slope (``std``,
``var``, ``prod``, vector norms, ``ptp``, quantiles, ``interp``, casts) and through lists built in
a loop: ``hvp`` and ``hessian`` against a second-order central difference of ``f`` itself, which
reads nothing of sourcegrad's. Matrix norms of orders other than Frobenius are refused when the
backward runs, never approximated."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import sourcegrad as sg
from sourcegrad.errors import SourcegradError

from .oracle import assert_close, fd_grad


def fd_hvp(f, x, v, h=1e-4):
    """(H v)_i from four values of f around x, along e_i and v: no gradient of ours is read."""
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        w = h * v
        out[i] = (f(x + e + w) - f(x + e - w) - f(x - e + w) + f(x - e - w)) / (4 * h * h)
    return out


def vector_norm(x):
    return np.linalg.norm(x) ** 3


def norm_of_rows(A):
    return np.sum(np.linalg.norm(A, axis=1) ** 2 * np.linalg.norm(A, axis=0, keepdims=True).sum())


def norm_order_3(x):
    return np.linalg.norm(x, 3) * np.sum(x)


def norm_order_1_and_inf(x):
    return (np.linalg.norm(x, 1) + np.linalg.norm(x, np.inf)) * np.sum(x * x)


def frobenius(A):
    return np.linalg.norm(A, "fro") ** 3 + np.linalg.norm(A) * np.sum(A)


def std_of_columns(A):
    return np.sum(np.std(A, axis=0) ** 2 * np.mean(A, axis=0))


def std_kept_ddof(A):
    return np.sum(A.std(axis=1, ddof=1, keepdims=True) * A)


def std_all(x):
    return np.std(x) * np.sum(x**2)


def var_of_columns(A):
    return np.sum(np.var(A, axis=0) * np.sum(A, axis=0)) + np.var(A) ** 2


def prod_all(x):
    return np.prod(x) * np.sum(x)


def prod_of_rows(A):
    return np.sum(np.prod(A, axis=1) ** 2) + np.sum(np.prod(A, axis=0) * A[0])


def piecewise_linear(x):
    return (np.ptp(x) + np.median(x)) * np.sum(x**2) + np.sum(
        np.interp(x, [-3.0, 0.0, 3.0], [1.0, 0.0, 2.0]) * x
    )


def cast_round_trip(x):
    return np.sum(x.astype(np.float64) ** 3)


def list_in_loop(x):
    vals = [x[0] ** 2]
    for i in range(1, x.shape[0]):
        vals.append(vals[-1] * x[i])
    return sum(vals) + np.mean([v**2 for v in vals])


VECTOR = [
    vector_norm,
    norm_order_3,
    norm_order_1_and_inf,
    std_all,
    prod_all,
    piecewise_linear,
    cast_round_trip,
    list_in_loop,
]
MATRIX = [norm_of_rows, frobenius, std_of_columns, std_kept_ddof, var_of_columns, prod_of_rows]
SPREAD = st.floats(-2.0, 2.0).filter(lambda t: abs(t) > 0.05)


def _check(f, x, v):
    assert_close(
        sg.hvp(f)(x, v), fd_hvp(f, x, v), rtol=2e-4, atol=2e-4, what=f"hvp of {f.__name__}"
    )


@pytest.mark.parametrize("f", VECTOR, ids=lambda f: f.__name__)
@settings(max_examples=12, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(2, 5), elements=SPREAD), data=st.data())
def test_hvp_of_vector_functions(f, x, data):
    # no near-ties (ptp, median)
    assume(np.min(np.abs(np.subtract.outer(x, x)) + np.eye(x.size)) > 0.05)
    v = data.draw(hnp.arrays(np.float64, x.shape, elements=st.floats(-1.0, 1.0)))
    _check(f, x, v)


@pytest.mark.parametrize("f", MATRIX, ids=lambda f: f.__name__)
@settings(max_examples=10, deadline=None)
@given(
    A=hnp.arrays(np.float64, st.tuples(st.integers(2, 4), st.integers(2, 4)), elements=SPREAD),
    data=st.data(),
)
def test_hvp_of_matrix_functions(f, A, data):
    # std away from its kink
    assume(np.min(np.std(A, axis=0)) > 0.1 and np.min(np.std(A, axis=1)) > 0.1)
    v = data.draw(hnp.arrays(np.float64, A.shape, elements=st.floats(-1.0, 1.0)))
    _check(f, A, v)


@settings(max_examples=15, deadline=None)
@given(
    x=hnp.arrays(
        np.float64, st.integers(2, 5), elements=st.one_of(st.just(0.0), st.floats(-2.0, 2.0))
    )
)
def test_hessian_of_prod_with_exact_zeros(x):
    """The product's curvature is computed without division: exact where entries are 0."""
    h = sg.hessian(prod_all)(x)
    assert h.shape == x.shape + x.shape
    assert_close(h, h.T, what="symmetry of the Hessian")
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = 1.0
        assert_close(h[:, i], fd_hvp(prod_all, x, e), rtol=2e-4, atol=2e-4, what="Hessian column")


def spectral(A):
    return np.linalg.norm(A, 2) ** 2


def test_matrix_norm_second_order_is_refused():
    A = np.arange(6.0).reshape(2, 3) + 1.0
    # first order works
    assert_close(sg.grad(spectral)(A), fd_grad(spectral, (A,), 0), rtol=1e-5, atol=1e-6)
    with pytest.raises(SourcegradError, match="matrix norm of order 2"):
        sg.hvp(spectral)(A, np.ones_like(A))


# ---- log-space sums: np.logaddexp, and scipy.special's softmax, log_softmax, logsumexp -------------
sc = pytest.importorskip("scipy.special")


def logistic_regression(w):
    X = np.array(
        [
            [1.0, 0.5, -0.3, 0.6],
            [0.2, -1.0, 0.8, 0.0],
            [-0.7, 0.3, 0.1, -0.2],
            [0.4, 0.4, -0.9, 1.0],
        ]
    )
    z = X[:, : w.shape[0]] @ w
    return np.sum(np.logaddexp(0.0, z) - np.array([1.0, 0.0, 1.0, 0.0]) * z) + np.sum(
        np.logaddexp2(w, 2 * w)
    )


def softmax_rows(A):
    return np.sum(sc.softmax(A, axis=1) ** 2 * A) + np.sum(sc.softmax(A) * A)


def log_softmax_rows(A):
    return np.sum(sc.log_softmax(A, axis=0) ** 2) + np.sum(sc.log_softmax(A) * A)


def logsumexp_weighted(A):
    b = np.array([0.5, 1.0, 2.0, 1.5])[: A.shape[1]]
    return (
        np.sum(sc.logsumexp(A, axis=1, b=b) ** 2)
        + sc.logsumexp(A) ** 2
        + np.sum(sc.logsumexp(A, axis=0, keepdims=True) * A)
    )


def logsumexp_of_its_weights(b):
    a = np.array([0.3, -0.5, 1.2, 0.1])[: b.shape[0]]
    return sc.logsumexp(a * b, b=b * b) ** 2


def special_functions(x):
    return np.sum(sc.gammaln(x * x + 1.0) + sc.digamma(x * x + 2.0) + sc.expit(x) ** 2)


LOG_SPACE = [softmax_rows, log_softmax_rows, logsumexp_weighted]


@pytest.mark.parametrize("f", LOG_SPACE, ids=lambda f: f.__name__)
@settings(max_examples=10, deadline=None)
@given(
    A=hnp.arrays(
        np.float64, st.tuples(st.integers(2, 3), st.integers(2, 4)), elements=st.floats(-2.0, 2.0)
    ),
    data=st.data(),
)
def test_jvp_and_hvp_of_log_space_reductions(f, A, data):
    v = data.draw(hnp.arrays(np.float64, A.shape, elements=st.floats(-1.0, 1.0)))
    _, tangent = sg.jvp(f)(A, v)
    assert_close(
        tangent, np.sum(fd_grad(f, (A,), 0) * v), rtol=1e-5, atol=1e-6, what=f"jvp of {f.__name__}"
    )
    _check(f, A, v)


@pytest.mark.parametrize(
    "f",
    [logistic_regression, logsumexp_of_its_weights, special_functions],
    ids=lambda f: f.__name__,
)
@settings(max_examples=10, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(2, 4), elements=SPREAD), data=st.data())
def test_hvp_of_log_space_vectors(f, x, data):
    v = data.draw(hnp.arrays(np.float64, x.shape, elements=st.floats(-1.0, 1.0)))
    _check(f, x, v)


def logsumexp_with_sign(x):
    return sc.logsumexp(x, return_sign=True)[0]


def test_logsumexp_return_sign_is_refused_in_forward_mode():
    with pytest.raises(SourcegradError, match="return_sign"):
        sg.jvp(logsumexp_with_sign)(np.ones(3), np.ones(3))


def test_hvp_code_names_the_users_lines():
    """hvp compiles the generated jvp code; its comments follow that code back to your lines."""
    import inspect
    import os
    import re

    h = sg.hvp(std_all)
    h(np.array([0.3, -1.0, 2.0]), np.ones(3))
    text = sg.source(h)
    first = inspect.getsourcelines(std_all)[1]
    lines = {int(n) for n in re.findall(rf"# {os.path.basename(__file__)}:(\d+)", text)}
    assert lines and lines <= {first, first + 1}, text
    assert "jvp #" not in text, text


# ---- abs of complex values: |z| is smooth away from 0, not piecewise linear ----------------------


def abs_of_spectrum(x):
    return np.sum(np.abs(np.fft.fft(x)))


def power_of_spectrum(x):
    return np.sum(np.abs(np.fft.fft(x * np.linspace(0.5, 1.5, x.size))) ** 2)


def abs_of_complex(x):
    return np.sum(np.abs(x + 1j * x**2) ** 3)


@pytest.mark.parametrize(
    "f", [abs_of_spectrum, power_of_spectrum, abs_of_complex], ids=lambda f: f.__name__
)
@settings(max_examples=12, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(2, 5), elements=SPREAD), data=st.data())
def test_hvp_through_abs_of_complex_values(f, x, data):
    assume(np.min(np.abs(np.fft.fft(x))) > 0.05)  # away from |z| = 0, where abs has a kink
    v = data.draw(hnp.arrays(np.float64, x.shape, elements=st.floats(-1.0, 1.0)))
    _check(f, x, v)
