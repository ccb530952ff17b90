"""Library functions beyond one-line rules: what they refuse, and the conventions they follow.

The rules themselves are checked against finite differences in ``tests/test_systematic.py`` (and
``tests/test_rules.py``); here: scatters into buffers that another name sees are refused, a full
SVD's extra singular vectors are refused unless read through their span, ties share evenly, and
complex values follow JAX's convention.
"""

import warnings

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.errors import UnsupportedSyntaxError

from .oracle import assert_close, fd_grad

IDX = np.array([0, 2, 2, 1])
TALL = np.eye(4, 2) * [1.0, 2.0]
X = np.array([0.5, -0.25, 0.75, 1.5])


# ---- ufunc.at: a scatter into a buffer the function allocated --------------------------------------
def scatter_into_argument(x):
    np.add.at(x, IDX, 1.0)  # line 26
    return np.sum(x)


def scatter_into_view(x):
    buf = np.zeros(6)
    v = buf[:3]
    np.add.at(v, IDX[:2], x[:2])
    return np.sum(buf * 2.0)


def scatter_with_keywords(x):
    buf = np.zeros(3)
    np.add.at(buf, IDX, b=x)
    return np.sum(buf)


def histogram(x):
    counts = np.zeros(3)
    np.add.at(counts, IDX, x * x)
    return np.sum(counts * np.array([1.0, 2.0, 3.0]))


def max_scatter_ties(x):
    buf = np.zeros(3)
    np.maximum.at(buf, np.array([0, 0, 1]), x * np.array([0.0, 0.0, 1.0]))
    return np.sum(buf * np.array([1.0, 2.0, 3.0]))


def test_scatter_into_an_argument_is_refused_at_its_line():
    with pytest.raises(UnsupportedSyntaxError, match="writes into 'x', an argument") as e:
        sg.grad(scatter_into_argument)(X.copy())
    assert "line 26" in str(e.value) and "copy" in str(e.value)


def test_scatter_into_a_view_is_refused():
    with pytest.raises(UnsupportedSyntaxError, match="may share memory with 'v'"):
        sg.grad(scatter_into_view)(X.copy())


def test_scatter_with_keywords_is_refused():
    with pytest.raises(UnsupportedSyntaxError, match="three arguments by position"):
        sg.grad(scatter_with_keywords)(X.copy())


def test_scatter_add_accumulates_repeated_indices():
    assert_close(sg.grad(histogram)(X), fd_grad(histogram, [X], 0))
    assert_close(sg.grad(histogram)(X), 2.0 * X * np.array([1.0, 3.0, 3.0, 2.0]))


def test_scatter_max_ties_share_evenly():
    # buf[0] = max(0, 0 * x0, 0 * x1): three tied values; buf[1] = x2
    g = sg.grad(max_scatter_ties)(np.array([1.0, 1.0, 1.0]))
    assert np.array_equal(g, [0.0, 0.0, 2.0])


# ---- masked and bounded reductions -----------------------------------------------------------------
def max_with_initial(x):
    return np.max(x, initial=1.0)


def test_initial_ties_with_entries_share_evenly():
    # the result 1.0 is attained by x[1] and by initial: x[1] gets half
    assert np.array_equal(sg.grad(max_with_initial)(np.array([0.5, 1.0, -2.0])), [0.0, 0.5, 0.0])
    assert np.array_equal(sg.grad(max_with_initial)(np.array([0.5, 0.25])), [0.0, 0.0])


# ---- svd(full_matrices=True) of a matrix that is not square ----------------------------------------
def complement_projection(a):
    u, s, vh = np.linalg.svd(a + TALL)
    return np.sum(u[:, 2:] @ u[:, 2:].T * np.arange(16.0).reshape(4, 4)) + np.sum(s)


def complement_basis(a):
    u = np.linalg.svd(a + TALL)[0]
    return np.sum(u[:, 2:] * np.arange(4.0)[:, None])


def test_full_svd_extra_columns_through_their_span():
    a = np.random.default_rng(0).uniform(-0.3, 0.3, (4, 2))
    assert_close(
        sg.grad(complement_projection)(a),
        fd_grad(complement_projection, [a], 0),
        rtol=1e-5,
        atol=1e-6,
    )


def test_full_svd_extra_columns_read_otherwise_are_refused():
    a = np.random.default_rng(0).uniform(-0.3, 0.3, (4, 2))
    with pytest.raises(NotImplementedError, match="only their span"):
        sg.grad(complement_basis)(a)


# ---- complex values: JAX's convention --------------------------------------------------------------
def power(z):
    return np.sum(np.abs(z) ** 2)


def spectrum_times_window(x, w):
    return np.sum(np.abs(np.fft.fft(x) * w))


def filtered(x):
    return np.sum(
        np.real(np.fft.ifft(np.fft.fft(x) * np.array([1.0, 0.5j, -0.25, 2.0 - 1.0j]))) ** 2
    )


def test_gradient_of_a_complex_argument_is_jax_convention():
    z = np.array([3.0 + 4.0j, 1.0 - 2.0j])
    assert_close(sg.grad(power)(z).real, [6.0, 2.0])
    assert_close(sg.grad(power)(z).imag, [-8.0, 4.0])  # 2 conj(z), as jax.grad; PyTorch gives 2 z


def test_real_operand_of_a_complex_product_gets_the_real_part():
    w = np.array([0.5, 1.5, 2.0, -1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        gx, gw = sg.grad(spectrum_times_window, wrt=(0, 1))(X, w)
    assert_close(gx, fd_grad(spectrum_times_window, [X, w], 0))
    assert_close(gw, fd_grad(spectrum_times_window, [X, w], 1))


def test_filter_round_trip():
    assert_close(sg.grad(filtered)(X), fd_grad(filtered, [X], 0))
