"""Checkpointing: ``grad(f, checkpoint=...)`` keeps snapshots of a loop's state instead of what
every iteration overwrites, and the backward runs each piece again before reversing it.

The gradient must be the one without checkpointing (the same operations run in the same order,
so equal to the last bit) and agree with central finite differences, for ``for`` and ``while``
loops with branches, inner loops, lists appended to and arrays written in place, for any number
of snapshots. What is kept is measured in bytes (``sourcegrad.memory``), never in time.
"""

import math
import sys

import hypothesis
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg

from .oracle import assert_close, fd_grad


def euler(y0, k, steps):
    y = y0
    for t in range(steps):
        y = y + 0.01 * np.tanh(k * y)
    return np.sum(y * y)


def mixed(x, w, n):
    h = x
    hs = []
    buf = np.zeros(3)
    for i in range(n):
        if np.sum(h) > 0:  # (contracting: finite differences stay accurate over many trips)
            h = np.sin(h * w) * 0.6
        else:
            h = np.cos(h) * w * 0.5
        buf[i % 3] = np.sum(h)
        hs.append(h * 2.0)
        for j in range(2):
            h = h + 0.1 * np.tanh(h)
    return np.sum(np.stack(hs)) + np.sum(buf * buf)


def grow(x, w):
    y = x  # entries >= 0.5: every trip multiplies them by at least 1.3, so the loop ends
    while np.sum(y * y) < 50.0:
        if np.sum(np.sin(10.0 * y)) > 0:
            y = y * 1.5 + 0.1 * np.tanh(w * y)
        else:
            y = y * 1.4 + 0.05 * w * w
    return np.sum(np.sin(y))


CHECKPOINTS = st.sampled_from([None, True, 1, 2, 3, 7, 100])
SEEDS = st.integers(0, 2**32 - 1)
FEW = hypothesis.settings(sg.testing.settings, max_examples=30)
_MADE = {}


def made(make, f, checkpoint, **options):
    """One gradient function per form (each compiles once per argument shapes)."""
    key = (make, f, checkpoint, tuple(sorted(options.items())))
    if key not in _MADE:
        _MADE[key] = make(f, checkpoint=checkpoint, **options)
    return _MADE[key]


@given(seed=SEEDS, trips=st.integers(1, 25), checkpoint=CHECKPOINTS)
@FEW
def test_for_loops_give_the_gradient_without_checkpointing(seed, trips, checkpoint):
    rng = np.random.default_rng(seed)
    x, w = rng.normal(size=3), rng.normal(size=3)
    plain = made(sg.value_and_grad, mixed, None, wrt=(0, 1))(x, w, trips)
    kept = made(sg.value_and_grad, mixed, checkpoint, wrt=(0, 1))(x, w, trips)
    assert plain[0] == kept[0]
    for a, b in zip(plain[1], kept[1]):
        np.testing.assert_array_equal(a, b)
    for i, g in enumerate(kept[1]):
        assert_close(g, fd_grad(mixed, [x, w, trips], i), rtol=1e-5, atol=1e-6)


@given(seed=SEEDS, checkpoint=CHECKPOINTS)
@FEW
def test_while_loops_give_the_gradient_without_checkpointing(seed, checkpoint):
    rng = np.random.default_rng(seed)
    x, w = rng.uniform(0.5, 1.0, size=2), rng.normal(size=2)
    plain = made(sg.grad, grow, None, wrt=(0, 1))(x, w)
    kept = made(sg.grad, grow, checkpoint, wrt=(0, 1))(x, w)
    for a, b in zip(plain, kept):
        np.testing.assert_array_equal(a, b)
    for i, g in enumerate(kept):
        assert_close(g, fd_grad(grow, [x, w], i), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("specialize", [True, False])
def test_general_and_specialized_code_and_vjp(specialize):
    x, w = np.array([0.3, -0.2, 0.5]), np.array([1.1, 0.9, -0.4])
    g = sg.grad(mixed, wrt=(0, 1), checkpoint=4, specialize=specialize)(x, w, 9)
    want = sg.grad(mixed, wrt=(0, 1), specialize=specialize)(x, w, 9)
    for a, b in zip(g, want):
        np.testing.assert_array_equal(a, b)
    value, pullback = sg.vjp(euler, checkpoint=True)(x, w, 30)
    assert value == euler(x, w, 30)
    np.testing.assert_array_equal(pullback(1.0), sg.grad(euler)(x, w, 30))


@pytest.mark.parametrize("steps", [100, 400, 1600])
def test_a_long_loop_keeps_about_its_square_root(steps):
    """Without checkpointing the forward keeps every state (steps of them); with it, the
    snapshots and one piece's saves: a few times sqrt(steps) states."""
    y0, k = np.linspace(-1.0, 1.0, 50), np.linspace(0.5, 2.0, 50)
    state = y0.nbytes
    plain = sg.memory(sg.grad(euler, checkpoint=None), y0, k, steps)
    kept = sg.memory(sg.grad(euler, checkpoint=True), y0, k, steps)
    assert plain.peak >= (steps - 1) * state  # the y of every iteration but the first
    assert kept.peak <= 6 * math.isqrt(steps) * state, (kept.peak, plain.peak)
    few = sg.memory(sg.grad(euler, checkpoint=4), y0, k, steps)
    assert few.peak <= (4 + 3 * (steps // 4 + 1)) * state  # 4 snapshots, one piece of steps/4 iterations


def test_the_generated_code_shows_the_pieces():
    src = sg.source(sg.grad(euler, checkpoint=10))
    assert "segments(" in src and "_snapshots" in src and "_tape.append" in src.split("check_scalar")[1]
    assert "_tape.append" not in src.split("check_scalar")[0]  # the first forward keeps no tape
    assert "snapshots(None)" in sg.source(sg.grad(grow, checkpoint=True))


@pytest.mark.parametrize("bad", [0, -2, 1.5, "yes"])
def test_a_bad_checkpoint_is_refused(bad):
    with pytest.raises(sg.UsageError, match="checkpoint"):
        sg.grad(euler, checkpoint=bad)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
