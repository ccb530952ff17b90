"""Edge values of forward mode and of second order that the rule table's random operands miss:
a constant list beside a differentiated array in a numpy call (its zero tangent is a list of
zeros, not a list of adjoint sentinels) and an exponent of 0 reached in a loop (the slope of
``x ** 0`` is zeros shaped like ``x``, which its second-order rule reads). Each is checked
against central finite differences (``tests/oracle.py``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import sourcegrad as sg

from .oracle import assert_close, fd_grad

VECTORS = hnp.arrays(np.float64, st.integers(2, 6), elements=st.floats(-2.0, 2.0))


def concat_constant_list(x):
    y = np.concatenate([x, [1.0, 2.0]])
    return np.sum(y[:-1] * y[1:])


def stack_constant_tuple(x):
    y = np.stack((x, np.ones_like(x), x * x))
    return np.sum(y[0] * y[2] + y[1])


def powers_from_zero(x):
    s = np.zeros(())
    for k in range(3):
        s = s + np.sum(x**k)
    return s


def literal_zero_power(x):
    return np.sum(x**0 + x**1 * x)


def _fd_jvp(f, x, t):
    return float(np.sum(fd_grad(f, (x,), 0) * t))


def _fd_hvp(f, x, v, h=1e-5):
    g = sg.grad(f)  # the finite difference of the gradient, itself checked against fd below
    return (g(x + h * v) - g(x - h * v)) / (2 * h)


FUNCTIONS = [concat_constant_list, stack_constant_tuple, powers_from_zero, literal_zero_power]


@settings(max_examples=15, deadline=None)
@given(x=VECTORS, data=st.data())
def test_jvp_and_hvp_at_edges(x, data):
    t = data.draw(hnp.arrays(np.float64, x.shape, elements=st.floats(-1.0, 1.0)))
    for f in FUNCTIONS:
        assert_close(sg.grad(f)(x), fd_grad(f, (x,), 0), rtol=1e-5, atol=1e-6)
        value, tangent = sg.jvp(f)(x, t)
        assert_close(value, f(x))
        assert_close(tangent, _fd_jvp(f, x, t), rtol=1e-5, atol=1e-6, what=f"jvp of {f.__name__}")
        assert_close(
            sg.hvp(f)(x, t), _fd_hvp(f, x, t), rtol=1e-4, atol=1e-5, what=f"hvp of {f.__name__}"
        )


# ---- reductions that leave entries out: their tangents never reach the sum ----------------------
# An entry a nan-reduction skips (NaN), that is not the extremum, or that where= masks out adds
# nothing to the tangent, even where its own tangent is NaN (NaN ** 2) or infinite (the slope of
# sqrt at 0): 0 * inf would make the whole sum NaN.


def nansum_square(x, m):
    return np.nansum(x * x)


def nanmean_sin(x, m):
    return np.nanmean(np.sin(x) * x)


def nanmax_square(x, m):
    return np.nanmax(x * x)


def nanmin_cube(x, m):
    return np.nanmin(x * x * x)


def max_of_roots(x, m):
    return np.max(np.sqrt(np.abs(x)) + x)


def sum_where_roots(x, m):
    return np.sum(np.sqrt(np.abs(x)), where=m)


LEFT_OUT = [nansum_square, nanmean_sin, nanmax_square, nanmin_cube, max_of_roots, sum_where_roots]


@settings(max_examples=20, deadline=None)
@given(
    f=st.sampled_from(LEFT_OUT),
    x=hnp.arrays(np.float64, st.integers(3, 6), elements=st.floats(0.3, 2.0), unique=True),
    marks=st.lists(st.booleans(), min_size=6, max_size=6),
    data=st.data(),
)
def test_jvp_through_reductions_that_leave_entries_out(f, x, marks, data):
    marks = np.array(marks[: x.size])
    marks[np.argmax(x)] = False  # the extremum is never left out
    if f in (max_of_roots, sum_where_roots):
        x = np.where(marks, 0.0, x)  # sqrt's slope is infinite there
    else:
        x = np.where(marks, np.nan, x)  # skipped by the nan-reduction
    m = ~marks
    v = data.draw(hnp.arrays(np.float64, x.shape, elements=st.floats(-1.0, 1.0)))
    value, tangent = sg.jvp(f)(x, m, v)
    assert np.isfinite(tangent)
    want = np.nansum(fd_grad(f, (x, m), 0) * v)  # a skipped NaN entry's difference is 0
    assert_close(tangent, want, what=f"{f.__name__}'s tangent")
