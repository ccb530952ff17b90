"""Reverse mode: the forward sweep and the backward sweep of a normalized function.

Expects: an ``ir.Function`` and an ``Analysis``. Guarantees: a ``Reversed`` record of two lists
of ``code.Stmt`` s. The forward is the user's code, one operation per line, plus saves of the
values that it overwrites and the backward reads. The backward visits the statements in reverse;
at each one every variable the backward reads holds the value it had at that point of the
forward (values are restored as the backward passes their definitions), so each statement is
replaced by its adjoint template. Every statement says what it reads and writes (``code.py``);
``optimize`` works from that.

The pass runs in steps, one module each: ``reverse_saves`` plans what the forward saves,
``reverse_forward`` builds the forward sweep, ``reverse_backward`` the backward sweep (with
``reverse_adjoints``, one assignment's adjoint); ``reverse_checkpointed`` has both sweeps' part
of a checkpointed loop, and ``reverse_tape`` the tape the two sweeps share. Adjoints are tracked
statically (``states``).

Every name of sourcegrad's own the code uses (``acc``, ``unbroadcast``, ``np`` in a template)
is asked of ``bind``, which picks a name that means that object in the generated code: the
user's text is never rewritten to make room.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import ir, reverse_backward, reverse_forward, reverse_saves
from .reverse_tape import Tape


@dataclass
class Reversed:
    """What the reverse pass makes of a function: the record ``optimize`` and ``emit`` take."""

    forward: list  # code.Stmt
    backward: list  # code.Stmt
    outputs: list  # (param, Code) of the gradient, in wrt order
    restored: set  # primal names the backward assigns to
    tape: str  # the tape's name
    result: object  # the returned atom
    seed: str = None  # the adjoint of the result: the backward's input
    mutates: bool = False  # does the function write into arrays (``a[i] = v``)?
    params: tuple = ()
    sites: list = field(default_factory=list)  # metered saves: (ir.Pos, the value's code)


def reverse(
    fn,
    analysis,
    naming,
    wrt,
    bind,
    check_finite=False,
    meter=False,
    checkpoints=None,
    lazy=False,
    seed_one=False,
    jit=False,
):
    """The forward and backward sweeps of ``fn`` for the parameters ``wrt`` (a ``Reversed``).
    ``meter``: number every save of the forward for ``sourcegrad.memory`` (``runtime/meter.py``);
    the sites, (user position, the value saved), are ``Reversed.sites``. ``checkpoints``: the
    loops that keep snapshots instead of a tape (``checkpoints.plan``: id(loop) -> True or a
    number of snapshots; ``reverse_checkpointed``). ``seed_one``: the result's adjoint is the
    constant 1.0 (``value_and_grad``, not a pullback's argument), so a rule may take it as that
    constant (``reverse_adjoints``); ``Reversed.seed`` is then None where no statement reads the
    seed any more. ``lazy``: for lazy arrays (dask): before each data-dependent test, the values
    the rest of the computation reads are persisted (``reverse_forward``, ``runtime/lazy.py``).
    ``jit``: the variant numba compiles: one tape per saved variable and kind (``Tape.of``), and
    known broadcast sums without ``keepdims`` (``reverse_adjoints``)."""
    checkpoints = checkpoints or {}
    tape = Tape(naming, typed=jit, meter=meter, bind=bind)
    plan = reverse_saves.plan(fn, analysis, naming, wrt, checkpoints)
    swept = reverse_forward.sweep(fn, analysis, naming, bind, plan, tape, checkpoints, lazy)
    result = fn.body[-1].value
    active = isinstance(result, ir.Name) and result.id in analysis.active
    seed = naming.adjoint(result.id) if active else None
    backward = reverse_backward.sweep(
        fn,
        analysis,
        naming,
        bind,
        plan,
        swept,
        tape,
        result,
        seed=seed,
        seed_one=seed_one,
        check_finite=check_finite,
        jit=jit,
    )
    if (
        seed_one
        and seed is not None
        and not any(seed in st.names() for st in backward.body)
        and not any(seed in e.names() for _, e in backward.outputs)
    ):
        seed = None  # folded into its only reader
    mutates = any(isinstance(s, ir.SetItem) for s in ir.walk(fn.body))
    return Reversed(
        swept.body,
        backward.body,
        backward.outputs,
        set(backward.restored),
        tape.name,
        result,
        seed,
        mutates,
        tuple(fn.params),
        tape.sites,
    )
