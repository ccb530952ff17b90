"""A binomial checkpointing schedule (Griewank's ``revolve``, as Tapenade uses it) for a loop
whose trip count is known when it starts.

The backward reverses the loop's iterations last first. Reversing iteration ``i`` needs the state
at its start: the schedule restores the last snapshot kept before ``i`` and runs the iterations
from there to ``i`` again, keeping snapshots on the way, then iteration ``i`` runs with its saves
and is reversed at once. With ``slots`` snapshots held at once (the loop's first state included)
and ``T`` iterations, the split points follow the binomial rule, so the iterations run again in
all are the fewest possible: about ``(r - 1) * T`` where ``r`` is the least number with
``C(slots + r, slots) >= T`` (Griewank and Walther, *Algorithm 799: revolve*, 2000).

``Revolve.forward`` gives the pieces of the loop's first run (a snapshot at each one's start),
``Revolve.turns`` the iterations last first, each with the snapshot to start from and the pieces
to run again (whether to keep a snapshot at each one's start). Imports nothing of numpy.
"""

from __future__ import annotations

from math import comb

__all__ = ["checkpointed", "revolve", "default_slots", "repetitions", "split", "recomputations"]


def _beta(slots, reps):
    """How many iterations ``slots`` snapshots reverse with each iteration run at most ``reps``
    times before its reversal: ``C(slots + reps, slots)`` (0 for ``reps < 0``)."""
    return comb(slots + reps, slots) if reps >= 0 else 0


def repetitions(trips, slots):
    """The least ``r`` with ``C(slots + r, slots) >= trips``: the most times any iteration runs
    without its saves (the first run included) before the run that reverses it."""
    r = 0
    while _beta(slots, r) < trips:
        r += 1
    return r


def split(trips, slots):
    """Where to keep the next snapshot, counted from a kept state, in a stretch of ``trips >= 2``
    iterations reversed with ``slots >= 2`` snapshots: the least offset ``m`` for which the
    iterations before it reverse with one repetition fewer and those after it with one snapshot
    fewer; every such ``m`` is optimal (Griewank's binomial rule)."""
    r, b = 0, 1  # b = C(slots + r, slots), the binomials by their ratios (exact in integers)
    while b < trips:
        r += 1
        b = b * (slots + r) // r
    below = b * r // (slots + r)  # C(slots + r - 1, slots)
    two_below = below * (r - 1) // (slots + r - 1)  # C(slots + r - 2, slots)
    fewer = b * slots // (slots + r)  # C(slots - 1 + r, slots - 1)
    return max(two_below, trips - fewer, 1)


def recomputations(trips, slots):
    """Iterations run in all to reach the start of every iteration, counted from a kept first
    state: ``r * trips - C(slots + r, slots - 1)`` (the least possible)."""
    if trips <= 1:
        return 0
    if slots == 1:
        return trips * (trips - 1) // 2
    r = repetitions(trips, slots)
    return r * trips - _beta(slots + 1, r - 1)


def default_slots(trips):
    """``checkpoint=True``: the fewest snapshots with which no iteration runs more than twice
    before its reversal (``C(slots + 2, 2) >= trips``, about ``sqrt(2 * trips)``)."""
    slots = 1
    while _beta(slots, 2) < trips:
        slots += 1
    return slots


class Revolve:
    """The schedule of one run of a checkpointed loop over ``iterations`` (a range or list).

    The generated code calls ``forward()`` in the forward sweep, ``keep(state)`` at the start of
    each piece it is told to, and ``turns()`` in the backward; ``advanced`` counts the iterations
    the backward ran again. ``dropped``: called with each snapshot let go of (a metered tape's
    ``release``)."""

    def __init__(self, iterations, slots=None, dropped=None):
        self.iterations = iterations
        self.trips = len(iterations)
        self.slots = max(1, int(slots)) if slots is not None else default_slots(self.trips)
        self.at = []  # where each kept snapshot is, first to last
        self.states = []  # the snapshots
        self.advanced = 0
        self.dropped = dropped

    def keep(self, state):
        """Keep ``state``, at the start of the piece just handed out."""
        self.states.append(state)

    def forward(self):
        """The pieces of the loop's first run: a snapshot is kept at each one's start."""
        if not self.trips:
            return []
        self.at = [0]
        cuts = self._cuts(0, self.trips)
        self.at += cuts
        bounds = [0] + cuts + [self.trips]
        return [self.iterations[a:b] for a, b in zip(bounds, bounds[1:])]

    def turns(self):
        """``(iteration, snapshot, pieces)`` for each iteration, last first: start from
        ``snapshot`` and run ``pieces`` ((iterations, keep a snapshot first?) pairs) to reach the
        iteration's start. The snapshot at an iteration's start goes once it is reversed."""
        iterations, at, states = self.iterations, self.at, self.states
        end = self.trips
        first = True  # the first run kept the first turn's snapshots already
        while end > 0:
            start, last = at[-1], end - 1
            cuts = [] if first else self._cuts(start, end)
            first = False
            if cuts:
                bounds = [start, *cuts, last]
                pieces = [
                    (iterations[a:b], k > 0) for k, (a, b) in enumerate(zip(bounds, bounds[1:]))
                ]
                at += cuts
            else:
                pieces = [(iterations[start:last], False)]
            self.advanced += last - start
            yield iterations[last], states[-1], pieces
            end = last
            if at[-1] == end:
                at.pop()
                state = states.pop()
                if self.dropped is not None:
                    self.dropped(state)

    def _cuts(self, start, end):
        """Where the snapshots go on the way from a kept state at ``start`` to the reversal of
        iteration ``end - 1`` (none at ``end - 1`` itself: it is reversed at once)."""
        cuts = []
        free = self.slots - len(self.at)  # beyond the one at ``start``
        while end - start > 1 and free > 0:
            m = start + split(end - start, free + 1)
            if m >= end - 1:
                break
            cuts.append(m)
            start, free = m, free - 1
        return cuts


def revolve(iterations, slots=None, dropped=None):
    return Revolve(iterations, slots, dropped)


def checkpointed(iterations, snapshots=None):
    """Mark one loop of a differentiated function for checkpointing::

        for t in sourcegrad.checkpointed(range(steps)):               # about sqrt(2 * steps) snapshots
        for t in sourcegrad.checkpointed(range(steps), snapshots=20):  # at most 20 snapshots

    Its backward keeps snapshots of the loop's state instead of what each iteration overwrites,
    and runs iterations again to reach the others (the binomial schedule, ``Revolve``), as
    ``grad(f, checkpoint=...)`` does for every loop outside other loops. The marker takes a
    ``range``. Outside a differentiated function it is ``iterations`` itself."""
    return iterations
