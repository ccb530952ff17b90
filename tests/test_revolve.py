"""The binomial checkpointing schedule (``runtime/revolve.py``), run on a loop whose state is its
own position.

A reversal is correct when every iteration is reversed once, last first, each from its own
start; it respects the memory bound when no more than ``slots`` snapshots are held at once; it is
optimal when it runs as few iterations again as the best of all schedules, which a brute-force
dynamic program over every split point gives here (independently of the binomial formulas).
"""

import sys
from functools import lru_cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg
from sourcegrad.runtime.revolve import default_slots, recomputations, revolve


@lru_cache(maxsize=None)
def fewest(trips, slots):
    """The fewest iterations run to reach the start of each of ``trips`` iterations, last first,
    from a kept first state, holding at most ``slots`` states: try every place for the next
    snapshot."""
    if trips <= 1:
        return 0
    if slots == 1:
        return trips * (trips - 1) // 2
    return min(m + fewest(trips - m, slots - 1) + fewest(m, slots) for m in range(1, trips))


def run(trips, slots):
    """Follow the schedule; returns (iterations run by the backward, most snapshots held, the
    last snapshot the first run kept)."""
    schedule = revolve(range(trips), slots)
    state, held = 0, 0
    for piece in schedule.forward():
        assert piece.start == state
        schedule.keep(state)
        held = max(held, len(schedule.states))
        state = piece.stop
    assert state == trips
    last_kept = schedule.at[-1] if trips else 0
    reversed_ = []
    for i, snapshot, pieces in schedule.turns():
        state = snapshot
        for piece, keep in pieces:
            assert piece.start == state
            if keep:
                schedule.keep(state)
                held = max(held, len(schedule.states))
            state = piece.stop
        assert state == i  # the iteration's own start
        reversed_.append(i)
    assert reversed_ == list(range(trips))[::-1]
    assert schedule.states == []  # every snapshot let go of
    return schedule.advanced, held, last_kept


@given(trips=st.integers(0, 90), slots=st.integers(1, 8))
@sg.testing.settings
def test_the_schedule_reverses_every_iteration_with_the_fewest_runs(trips, slots):
    advanced, held, last_kept = run(trips, slots)
    assert held <= max(1, slots) if trips else held == 0
    if trips:
        # the first run reached the last iteration's start and went on to the end; the backward
        # runs again from the last snapshot it kept to there (a few iterations), then the rest
        first_turn = trips - 1 - last_kept
        assert advanced - first_turn == fewest(trips, slots) - (trips - 1)
        assert recomputations(trips, slots) == fewest(trips, slots)


@pytest.mark.parametrize("trips", [1, 2, 10, 1000, 100_000])
def test_the_default_runs_no_iteration_more_than_twice_again(trips):
    slots = default_slots(trips)
    assert recomputations(trips, slots) <= 2 * trips
    assert slots == 1 or recomputations(trips, slots - 1) > recomputations(trips, slots)


def test_a_long_loop_with_few_snapshots():
    advanced, held, _ = run(20_000, 10)
    assert held == 10 and advanced <= recomputations(20_000, 10)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
