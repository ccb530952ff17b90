"""Checkpointing: ``grad(f, checkpoint=...)`` and loops marked ``sourcegrad.checkpointed(...)``
keep snapshots of a loop's state instead of what every iteration overwrites; the backward runs
iterations again from them (the binomial schedule for ``for`` loops, pieces for ``while`` loops).

The gradient must be the one without checkpointing (the same operations run in the same order,
so equal to the last bit) and agree with central finite differences, for ``for`` and ``while``
loops with branches, inner loops, lists appended to, arrays written in place and values carried
from one iteration to the next, for any number of snapshots. What is kept is measured in bytes
(``sourcegrad.memory``), never in time. What cannot be checkpointed is refused at its line.
"""

import copy
import inspect
import math
import random
import re
import sys

import hypothesis

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg
from sourcegrad.runtime.revolve import default_slots

from .corpus import all_cases
from .corpus.harness import leaves
from .fuzz.check import load
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


def carried(x, w, n):
    y = x
    for i in range(n):
        if i > 0:  # prev is first set by the loop itself: a snapshot must keep it
            y = y + 0.5 * np.sin(prev * w)
        prev = np.tanh(y)
    return np.sum(y * y)


def marked(x, w, n):
    h = x
    for i in range(n % 2 + 1):  # not checkpointed: only the marked loop is
        h = np.sin(h + w)
    for i in sg.checkpointed(range(n)):
        h = np.tanh(h * w) + 0.5 * h
    return np.sum(h * h)


def marked_few(x, w, n):
    h = x
    hs = []
    for i in sg.checkpointed(range(n), snapshots=2):
        if np.sum(h) > 0:
            h = np.sin(h * w) * 0.8
        else:
            h = np.cos(h) * w * 0.5
        hs.append(h)
    return np.sum(np.stack(hs)) + np.sum(h)


def rereads(x, w, n):
    buf = np.zeros(4)
    hs = [x]
    h = x
    for i in sg.checkpointed(range(n), snapshots=2):  # each snapshot is run from several times
        buf[i % 4] = np.sum(h)
        h = np.tanh(h * w + 0.1 * np.sum(buf) + 0.5 * hs[-1])
        hs.append(h)
    return np.sum(h) + np.sum(buf * buf)


def nested(x, w, n):
    h = x
    total = 0.0
    for e in range(n % 3 + 1):  # a marked loop inside a loop: its schedule goes on the tape
        for t in sg.checkpointed(range(n), snapshots=3):
            h = h + 0.2 * np.tanh(h * w)
        total = total + np.sum(h * h)
        h = h * 0.9
    k = 0
    while k < 2:
        for t in sg.checkpointed(range(n)):
            h = np.sin(h) * w
        k += 1
    return total + np.sum(h)


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
_UNMARKED = {}


def unmarked(f):
    """``f`` with its loops' markers taken off: its plain backward is the one to compare with."""
    if f not in _UNMARKED:
        text = re.sub(
            r"sg\.checkpointed\((range\(\w+\))(, snapshots=\d+)?\)", r"\1", inspect.getsource(f)
        )
        assert "sg.checkpointed" not in text
        _UNMARKED[f] = getattr(load("import numpy as np\n\n" + text), f.__name__)
    return _UNMARKED[f]


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


@pytest.mark.parametrize("f", [carried, marked, marked_few, rereads, nested])
@given(seed=SEEDS, trips=st.integers(1, 12), checkpoint=CHECKPOINTS)
@FEW
def test_marked_loops_and_carried_values_give_the_gradient_without_checkpointing(
    f, seed, trips, checkpoint
):
    """With the keyword too, except around loops already holding a marked one (refused, below)."""
    rng = np.random.default_rng(seed)
    x, w = rng.normal(size=3), rng.normal(size=3)
    checkpoint = None if f is nested else checkpoint
    plain = made(sg.value_and_grad, unmarked(f), None, wrt=(0, 1))(x, w, trips)
    kept = made(sg.value_and_grad, f, checkpoint, wrt=(0, 1))(x, w, trips)
    assert plain[0] == kept[0]
    for a, b in zip(plain[1], kept[1]):
        np.testing.assert_array_equal(a, b)
    for i, g in enumerate(kept[1]):
        assert_close(g, fd_grad(f, [x, w, trips], i), rtol=1e-5, atol=1e-6)


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
def test_a_long_loop_keeps_its_snapshots_and_one_iteration(steps):
    """Without checkpointing the forward keeps every state (steps of them); with it, at most the
    snapshots (``default_slots``: about sqrt(2 * steps); or as many as asked for) and what one
    iteration saves (two states here), however long the loop."""
    y0, k = np.linspace(-1.0, 1.0, 50), np.linspace(0.5, 2.0, 50)
    state = y0.nbytes + 64  # an array, and its share of a snapshot's tuple
    plain = sg.memory(sg.grad(euler, checkpoint=None), y0, k, steps)
    assert plain.peak >= (steps - 1) * y0.nbytes  # the y of every iteration but the first
    for checkpoint, slots in ((True, default_slots(steps)), (4, 4), (1, 1)):
        if slots == 1 and steps > 400:
            continue  # one snapshot: every iteration runs again from the start (steps**2 / 2)
        kept = sg.memory(sg.grad(euler, checkpoint=checkpoint), y0, k, steps)
        assert kept.peak <= (slots + 2) * state, (checkpoint, kept.peak, plain.peak)
        np.testing.assert_array_equal(kept.value[1], plain.value[1])


def test_the_generated_code_shows_the_schedule():
    src = sg.source(sg.grad(euler, checkpoint=10))
    forward, backward = src.split("check_scalar")
    assert "revolve(_r" in forward and ".forward():" in forward and ".keep((y,))" in forward
    assert "_tape.append" not in forward  # the first run keeps no tape
    assert ".turns():" in backward and "_tape.append" in backward
    assert "snapshots(None)" in sg.source(sg.grad(grow, checkpoint=True))  # while loops: periodic
    assert "revolve(" not in sg.source(sg.grad(euler))


def test_the_marker_checkpoints_its_loop_only():
    src = sg.source(sg.grad(marked))
    assert src.count("revolve(") == 1 and ".turns():" in src
    assert "_tape.append" in src.split("revolve(")[0]  # the unmarked loop keeps its tape
    assert list(sg.checkpointed(range(3), snapshots=2)) == [
        0,
        1,
        2,
    ]  # outside a gradient: the range
    x = np.array([0.1, 0.2, -0.3])
    assert marked(x, x, 4) == unmarked(marked)(x, x, 4)
    tangent = np.array([1.0, -2.0, 0.5])  # forward mode reads the marker as the range it marks
    assert sg.jvp(marked)(x, x, 4, tangent) == sg.jvp(unmarked(marked))(x, x, 4, tangent)


def test_a_list_the_loop_only_appends_to_is_kept_by_its_length():
    """A snapshot of ``marked_few`` keeps ``h`` and the length of ``hs``, not a copy of the list
    (a list as long as the loop per snapshot); the loop cuts it back and appends the same again."""
    x, w = np.array([0.3, -0.2, 0.5]), np.array([1.1, 0.9, -0.4])
    report = sg.memory(sg.grad(marked_few), x, w, 200)
    [(where, saved, count, size)] = [row for row in report.rows() if row[1].startswith("(")]
    assert "len(hs)" in saved and count >= 2
    assert size / count <= x.nbytes + 200
    assert "del hs[" in sg.source(sg.grad(marked_few))


@pytest.mark.parametrize("steps", [0, 1, 2, 3])
@pytest.mark.parametrize("checkpoint", [True, 1, 2])
def test_loops_of_few_iterations(steps, checkpoint):
    y0, k = np.array([0.3, -0.7]), np.array([1.5, 0.5])
    want = sg.grad(euler, wrt=(0, 1))(y0, k, steps)
    got = sg.grad(euler, wrt=(0, 1), checkpoint=checkpoint)(y0, k, steps)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def comprehension_sum(x):
    terms = [np.exp(r).sum() for r in x]
    return sum(terms)


def temporary_read_by_loop(x, w):
    total = 0.0
    for r in x * w:  # a temporary the loop reads and nothing after it
        total = total + np.sum(np.tanh(r * total + 0.1))
    return total


def comprehension_of_rows(x, w):
    rows = [np.sin(r * w) for r in x]
    return np.sum(np.stack(rows) ** 2)


@pytest.mark.parametrize("f", [comprehension_sum, temporary_read_by_loop, comprehension_of_rows])
@pytest.mark.parametrize("checkpoint", [True, 1, 2])
@given(seed=st.integers(0, 2**16), rows=st.integers(1, 6))
@hypothesis.settings(max_examples=8, deadline=None)
def test_what_a_checkpointed_loop_reads_is_kept_for_its_second_run(f, checkpoint, seed, rows):
    """A list a comprehension builds, and a temporary only the loop reads: the forward must not
    let go of them, since the backward runs the loop again from its snapshots."""
    rng = np.random.default_rng(seed)
    args = (rng.normal(size=(rows, 3)), rng.normal(size=3))[: f.__code__.co_argcount]
    got = sg.grad(f, checkpoint=checkpoint)(*args)
    np.testing.assert_array_equal(got, sg.grad(f)(*args))
    assert_close(got, fd_grad(f, args, 0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in all_cases()])
def test_every_corpus_function_gives_the_same_gradient_checkpointed(case):
    """Loops of every kind the corpus has (scans, solvers, RNNs, filters, ...), checkpointed: the
    same gradient to the bit."""
    args = case.make(np.random.default_rng(0))
    want = sg.grad(case.fn, wrt=case.wrt)(*copy.deepcopy(args))
    got = sg.grad(case.fn, wrt=case.wrt, checkpoint=True)(*copy.deepcopy(args))
    for a, b in zip(*(g if isinstance(g, tuple) else (g,) for g in (got, want))):
        for x, y in zip(leaves(a), leaves(b)):
            np.testing.assert_array_equal(x[1], y[1])


@pytest.mark.parametrize("bad", [0, -2, 1.5, "yes"])
def test_a_bad_checkpoint_is_refused(bad):
    with pytest.raises(sg.UsageError, match="checkpoint"):
        sg.grad(euler, checkpoint=bad)


def on_a_list(xs):
    h = 0.0
    for x in sg.checkpointed(xs):  # REFUSED
        h = h + np.sin(x)
    return h


def inside_another(x, n):
    for i in sg.checkpointed(range(n)):
        for j in sg.checkpointed(range(n)):  # REFUSED
            x = np.sin(x)
    return np.sum(x)


def ends_early(x, n):
    for i in sg.checkpointed(range(n)):  # REFUSED
        x = np.sin(x)
        if np.sum(x) > 1:
            break
    return np.sum(x)


def no_snapshots(x, n):
    for i in sg.checkpointed(range(n), snapshots=0):  # REFUSED
        x = np.sin(x)
    return np.sum(x)


def snapshots_of_an_argument(x, n):
    for i in sg.checkpointed(range(n), snapshots=n):  # REFUSED
        x = np.sin(x)
    return np.sum(x)


def another_keyword(x, n):
    for i in sg.checkpointed(range(n), slots=3):  # REFUSED
        x = np.sin(x)
    return np.sum(x)


def inner_marked(x, n):
    for e in range(n):
        for i in sg.checkpointed(range(n)):  # REFUSED (checkpoint=True marks the outer loop)
            x = np.sin(x)
    return np.sum(x)


RNG = np.random.default_rng(0)


def draws(x, n):
    for i in sg.checkpointed(range(n)):
        x = np.tanh(x + np.random.normal(size=2))  # REFUSED: run again, it would draw other numbers
    return np.sum(x)


def draws_from_a_generator(x, n):
    for i in range(n):
        x = np.tanh(x + RNG.normal(size=2))  # REFUSED with checkpoint=
    return np.sum(x)


def draws_from_the_standard_library(x, n):
    for i in sg.checkpointed(range(n)):
        x = x * (1.0 + random.random())  # REFUSED: a method of a hidden random.Random
    return np.sum(x)


@pytest.mark.parametrize(
    "f, checkpoint, message",
    [
        (draws, None, "np.random.normal in a checkpointed loop"),
        (draws_from_the_standard_library, None, "random.random in a checkpointed loop"),
        (draws_from_a_generator, 3, "RNG.normal in a checkpointed loop"),
        (on_a_list, None, "range"),
        (inside_another, None, "inside another checkpointed loop"),
        (ends_early, None, "cannot end early"),
        (no_snapshots, None, "snapshots= must be a positive int"),
        (snapshots_of_an_argument, None, "snapshots= must be a positive int"),
        (another_keyword, None, "takes a range and, optionally, snapshots=n"),
        (inner_marked, True, "inside another checkpointed loop"),
    ],
)
def test_what_cannot_be_checkpointed_is_refused_at_its_line(f, checkpoint, message):
    source, first = inspect.getsourcelines(f)
    line = first + next(k for k, text in enumerate(source) if "# REFUSED" in text)
    x = np.array([0.5, -0.2])
    with pytest.raises(sg.UnsupportedSyntaxError, match=message) as caught:
        sg.grad(f, checkpoint=checkpoint)(
            [0.1, 0.2] if f is on_a_list else x, *(() if f is on_a_list else (3,))
        )
    assert caught.value.lineno == line and caught.value.filename == __file__
    assert caught.value.offset >= 1 and "REFUSED" in caught.value.text


def noise_then_loop(x, n):
    noise = np.zeros((n, 2))
    for i in range(n):  # nothing to differentiate: not checkpointed, so its draws are not refused
        noise[i] = RNG.normal(size=2)
    for i in range(n):
        x = np.tanh(x + 0.1 * noise[i])
    return np.sum(x * x)


def test_a_loop_with_nothing_to_differentiate_is_left_alone():
    x = np.array([0.5, -0.2])
    global RNG
    saved = RNG
    try:
        RNG = np.random.default_rng(7)
        got = sg.grad(noise_then_loop, checkpoint=True)(x, 5)
        RNG = np.random.default_rng(7)
        want = sg.grad(noise_then_loop)(x, 5)
    finally:
        RNG = saved
    np.testing.assert_array_equal(got, want)
    assert sg.source(sg.grad(noise_then_loop, checkpoint=True)).count("revolve(") == 1


def test_a_marked_loop_inside_a_plain_loop_is_checkpointed():
    x = np.array([0.5, -0.2])
    got = sg.grad(inner_marked)(x, 4)
    assert ".turns():" in sg.source(sg.grad(inner_marked))
    np.testing.assert_array_equal(got, sg.grad(unmarked(inner_marked))(x, 4))
    assert_close(got, fd_grad(inner_marked, [x, 4], 0))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
