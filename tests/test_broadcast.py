"""Broadcast adjoints summed late, through chains that mix shapes, loops, reductions and `dot`,
against finite differences.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg

from .corpus.harness import check
from .flow import SEEDS, rng_of


# Broadcast adjoints summed late: a temporary made by a broadcasting binary operation may keep
# its adjoint in the larger shape; the operation that made it sums it down. These chains mix
# shapes (3, 1), (1, 4), (4,), () so that every kind of broadcast happens at every link.


def broadcast_chain(a, b, c):
    return np.sum(np.tanh(a * b + c) * (a - c / (2.0 + b * b)))


def broadcast_chain_in_loop(a, b, c, n):
    y = a * 1.0
    for _ in range(n):
        y = np.tanh(y * b + c - a)  # y grows from a's shape to the broadcast shape
    return np.sum(y * y)


def _blend(p, q):
    return p * q + (1.0 - p)


def broadcast_helper_in_loop(a, b, c, n):
    y = c * 1.0
    s = 0.0
    for _ in range(n):
        y = np.tanh(_blend(a, y) - b * c)
        s = s + np.sum(y * a)
    return s + np.sum(y)


def broadcast_temp_read_twice(a, b, c):
    # a * b is a temporary read twice inside _blend: against c (it may broadcast) and against a
    # number; its adjoint gets an exact part and a broadcast part, which must not be mixed
    return np.sum(np.tanh(_blend(a * b, c)))


def broadcast_with_scalar(a, b, c):
    # a * 2.0: the number operand keeps a's shape, so that rule drops its own unbroadcast, and
    # the adjoint of the temporary it makes must come back exact
    return np.sum(np.cos(a * 2.0 - c) * b)


BROADCAST_SHAPES = st.sampled_from([(3, 1), (1, 4), (4,), (), (3, 4), (1, 1)])


@pytest.mark.parametrize(
    "f, loops",
    [
        (broadcast_chain, False),
        (broadcast_with_scalar, False),
        (broadcast_temp_read_twice, False),
        (broadcast_chain_in_loop, True),
        (broadcast_helper_in_loop, True),
    ],
)
@given(
    seed=SEEDS,
    shapes=st.tuples(BROADCAST_SHAPES, BROADCAST_SHAPES, BROADCAST_SHAPES),
    n=st.integers(0, 3),
)
def test_broadcast_adjoints_summed_late(f, loops, seed, shapes, n):
    rng = rng_of(seed)
    args = tuple(rng.uniform(0.2, 1.0, size=s) for s in shapes) + ((n,) if loops else ())
    check(f, args, wrt=(0, 1, 2))


def broadcast_after_reduction_and_dot(a, b, c, d):
    # temporaries made by a reduction and by dot (not broadcasting rules) broadcast against c:
    # their adjoints must be summed to their own shapes at once
    return np.sum(np.sum(a * b, axis=-1) * c) + np.sum(np.dot(a, b) * d)


@given(seed=SEEDS, rows=st.integers(1, 3), cols=st.integers(1, 3), outer=st.integers(2, 3))
def test_broadcast_against_reductions_and_dot(seed, rows, cols, outer):
    rng = rng_of(seed)
    args = (
        rng.normal(size=(rows, cols)),
        rng.normal(size=cols),
        rng.normal(size=(outer, rows)),
        rng.normal(size=(outer, rows)),
    )
    check(broadcast_after_reduction_and_dot, args, wrt=(0, 1, 2, 3))


def test_broadcast_temporary_keeps_no_shape():
    # the temporary w * y is summed by its own rule: nothing keeps its shape, no unbroadcast to it
    def f(w, x, y):
        for _ in range(3):
            y = np.tanh(w * y + x)
        return np.sum(y)

    text = sg.source(sg.value_and_grad(f, wrt=(0, 1)))
    assert "shape_of" not in text and "unbroadcast(_t1_bar, _t0)" not in text, text
