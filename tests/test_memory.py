"""``sourcegrad.memory``: what a gradient's forward keeps for its backward, per line.

The counts are checked against what the backward must read (one value per iteration of a loop
that overwrites a value it reads, nothing for values never overwritten), the bytes against the
arrays' own sizes, and the metered call must give the same value and gradient as the gradient.
"""

import sys
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg


def rnn(W, xs):
    h = np.zeros(W.shape[0])
    for x in xs:
        h = np.tanh(W @ h + x)
    return np.sum(h)


def overwrite(x):
    y = np.sin(x)
    y = y * y
    return np.sum(y)


def halve_until_small(x):
    y = x
    while np.sum(y * y) > 1.0:
        y = np.sin(y) * 0.5
    return np.sum(y)


def straight(x, w):
    return np.sum(np.tanh(x @ w))


@given(steps=st.integers(1, 12), hidden=st.integers(1, 6))
@sg.testing.settings
def test_a_loop_keeps_one_state_per_iteration(steps, hidden):
    rng = np.random.default_rng(steps)
    W, xs = rng.normal(size=(hidden, hidden)) * 0.3, rng.normal(size=(steps, hidden))
    report = sg.memory(sg.grad(rnn), W, xs)
    [(where, text, count, size)] = report.lines()
    # the line overwriting h
    assert where.endswith(f":{rnn.__code__.co_firstlineno + 3}") and "np.tanh" in text
    assert count == steps and size == steps * hidden * 8
    assert report.total == size and report.peak == size
    np.testing.assert_allclose(report.value[1], sg.grad(rnn)(W, xs), rtol=0, atol=0)


def test_an_overwritten_value_outside_loops_is_kept_once():
    x = np.linspace(0.1, 1.0, 5)
    report = sg.memory(sg.value_and_grad(overwrite), x)
    [(where, saved, count, size)] = report.rows()
    assert where.endswith(f":{overwrite.__code__.co_firstlineno + 2}") and saved == "y"
    assert count == 1 and size == x.nbytes
    value, grad = sg.value_and_grad(overwrite)(x)
    assert report.value[0] == value
    np.testing.assert_array_equal(report.value[1], grad)


def test_a_while_loop_keeps_its_states_and_its_trip_count():
    x = np.full(4, 3.0)
    trips = 0
    y = x.copy()
    while np.sum(y * y) > 1.0:
        y = np.sin(y) * 0.5
        trips += 1
    report = sg.memory(sg.grad(halve_until_small), x)
    kept = {saved: count for _, saved, count, _ in report.rows()}
    assert kept["y"] == trips  # the state each iteration overwrites
    assert "kept in all" in str(report) and "halve_until_small" in str(report)


def test_a_function_without_overwrites_keeps_nothing():
    report = sg.memory(sg.grad(straight), np.ones((2, 3)), np.ones((3, 4)))
    assert report.rows() == [] and report.total == 0 and report.peak == 0


def test_vjp_and_bound_methods():
    W, xs = np.eye(3) * 0.5, np.ones((4, 3))
    report = sg.memory(sg.vjp(rnn), W, xs)
    value, pullback = report.value
    assert value == rnn(W, xs) and report.lines()[0][2] == 4

    class Model:
        def __init__(self, W):
            self.W = W

        def loss(self, xs):
            return rnn(self.W, xs)

    # general code (self is an object): shapes are kept too
    report = sg.memory(sg.grad(Model(W).loss), xs)
    kept = {saved: (count, size) for _, saved, count, size in report.rows()}
    assert kept["h"] == (4, 4 * 3 * 8) and report.total == sum(size for _, size in kept.values())


def euler(y, k, steps):
    for t in range(steps):
        y = y + 0.01 * np.tanh(k * y)
    return np.sum(y * y)


def held_by_a_vjp(vf, args):
    """What a vjp's forward leaves held (tracemalloc), its report, and both pullbacks' results."""
    vf(*args)  # compiled outside the measurement
    report = sg.memory(vf, *args)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        value, pullback = vf(*args)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(pullback(1.0), report.value[1](1.0))
    return held, report


@pytest.mark.parametrize("f", [rnn, euler])
def test_the_bytes_reported_are_the_bytes_tracemalloc_sees(f):
    """A vjp's forward keeps what its pullback will read; in a long loop that is nearly all the
    memory the call leaves held, and tracemalloc sees it within 10% of the report's bytes."""
    rng = np.random.default_rng(0)
    if f is rnn:
        args = (rng.normal(size=(300, 300)) * 0.05, rng.normal(size=(150, 300)))
    else:
        args = (rng.normal(size=2000), rng.normal(size=2000), 150)
    held, report = held_by_a_vjp(sg.vjp(f), args)
    assert report.total > 100 * 2400  # a hundred arrays at least
    assert abs(held - report.total) <= 0.1 * report.total, (held, report.total)


@pytest.mark.parametrize("checkpoint", [True, 5, 40])
def test_a_checkpointed_loops_snapshots_are_counted_in_full(checkpoint):
    """What tracemalloc sees held beyond the snapshots reported is the loop's last values (four
    arrays here: y and the three temporaries of its last iteration), however many snapshots."""
    rng = np.random.default_rng(1)
    y, k = rng.normal(size=2000), rng.normal(size=2000)
    held, report = held_by_a_vjp(sg.vjp(euler, checkpoint=checkpoint), (y, k, 150))
    assert report.total >= 4 * y.nbytes
    assert report.total <= held <= report.total + 4 * y.nbytes + 4096, (held, report.total)


def test_memory_needs_a_gradient():
    with pytest.raises(TypeError, match="made by grad"):
        sg.memory(rnn, np.eye(2), np.ones((2, 2)))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
