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
