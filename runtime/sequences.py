"""Python lists and tuples as values: the primitives sequence operations compile to, and their
adjoints. A sequence's adjoint is a ``SeqAdjoint`` (one entry per element, ``ZERO`` where none
came); an array rule never receives one.
"""

from __future__ import annotations

import builtins

import numpy as np

from .backend import LikeModule, _shape, array_module
from .errors import UnsupportedValueError
from .zeros import SeqAdjoint, ZERO, zeros_like
from .broadcast import unbroadcast

__all__ = [
    "concat_sequences",
    "repeat_sequence",
    "max_of_sequence",
    "min_of_sequence",
    "stack_entries",
    "sequence_head",
    "sequence_tail",
    "unrepeat_sequence",
    "extremum_entries",
    "unstack_entries",
    "sequence_copy_adjoint",
    "shortest_entry",
    "dict_from",
    "dict_entries",
]


def concat_sequences(a, b):
    """``a + b`` of two lists or tuples (concatenation)."""
    return a + b


def shortest_entry(seqs):
    """The length of the shortest sequence in ``seqs`` (0 for none): how many tuples
    ``zip(*seqs)`` makes."""
    return builtins.min((len(q) for q in seqs), default=0)


def repeat_sequence(a, b):
    """``a * n`` or ``n * a`` of a list or tuple and an integer (repetition)."""
    return a * b


def max_of_sequence(xs):
    """``max(xs)``: the largest entry of a list or tuple."""
    return builtins.max(xs)


def min_of_sequence(xs):
    """``min(xs)``: the smallest entry of a list or tuple."""
    return builtins.min(xs)


def stack_entries(xs):
    """A list or tuple passed where numpy differentiates an array: ``np.asarray(xs)``."""
    return np.asarray(xs)


def _entries(g, what, n):
    """The adjoint ``g`` of a sequence of ``n`` entries, entry by entry (None: all zero). An
    array ``g`` is one numpy made of the sequence (``np.array(a + b)``): its rows."""
    if g is ZERO:
        return None
    if hasattr(g, "shape") and g.ndim and g.shape[0] == n:
        return list(g)
    if not isinstance(g, (list, tuple)):
        raise UnsupportedValueError(
            f"{what}: the adjoint of a Python sequence is not a sequence "
            f"(a {type(g).__name__}); an array was concatenated with a list?"
        )
    return g


def _dense(gs, xs):
    """Entry by entry, ``ZERO`` made a zero of the entry's shape (a literal's entries each get
    a value)."""
    return SeqAdjoint(zeros_like(x) if g is ZERO else g for g, x in zip(gs, xs))


def _is_sequence(v):
    return isinstance(v, (list, tuple))


def _is_count(v):
    """Does ``seq * v`` repeat ``seq``? For a Python int or bool and a numpy integer scalar; an
    array (even a 0-d one) makes numpy multiply the entries."""
    return isinstance(v, (int, np.integer))


def _array_operand_adjoint(g, operand):
    """The adjoint of one operand of numpy's elementwise ``+`` or ``*`` (after the other's
    factor): summed over the axes broadcasting added; a list or tuple operand, which numpy made
    an array, gets it entry by entry."""
    if g is ZERO:
        return ZERO
    if _is_sequence(operand):
        return unstack_entries(unbroadcast(g, np.empty(_shape(operand))), operand)
    return unbroadcast(g, operand)


def sequence_head(g, a, b):
    """Adjoint of ``a`` in ``a + b``: where both are lists or tuples (concatenation), the first
    ``len(a)`` entries; otherwise numpy added them (a list and an array), and ``a`` gets its
    share of the sum. Which it was is decided here, from the values: the compiler chose this
    primitive where it could not tell."""
    if not (_is_sequence(a) and _is_sequence(b)):
        return _array_operand_adjoint(g, a)
    g = _entries(g, "a + b", len(a) + len(b))
    return _dense([ZERO] * len(a) if g is None else g[: len(a)], a)


def sequence_tail(g, a, b):
    """Adjoint of ``b`` in ``a + b``: the entries after ``len(a)`` of a concatenation, or its
    share of numpy's sum (``sequence_head``)."""
    if not (_is_sequence(a) and _is_sequence(b)):
        return _array_operand_adjoint(g, b)
    g = _entries(g, "a + b", len(a) + len(b))
    return _dense([ZERO] * len(b) if g is None else g[len(a) :], b)


def unrepeat_sequence(g, x, y, which):
    """Adjoint of operand ``which`` of ``x * y``. A list or tuple times a Python int repeats it:
    each entry appears once per copy, so its adjoint is the sum over the copies (the count's is
    zero). Any other operands numpy multiplied elementwise (``x * [2.0, 3.0]`` of an array ``x``),
    and each gets ``g`` times the other."""
    mine, other = (x, y) if which == 0 else (y, x)
    if not (_is_sequence(x) and _is_count(y) or _is_count(x) and _is_sequence(y)):
        if g is ZERO:
            return ZERO
        return _array_operand_adjoint(g * np.asarray(other), mine)
    if not _is_sequence(mine):
        return ZERO  # the count
    seq, n = mine, len(mine)
    g = _entries(g, "seq * n", n * max(int(other), 0))
    if g is None or n == 0:
        return _dense([ZERO] * n, seq)
    total = SeqAdjoint(g[:n])
    for k in range(n, len(g), n):
        total = total + SeqAdjoint(g[k : k + n])
    return _dense(total, seq)


def extremum_entries(g, xs, y):
    """Adjoint of ``max(xs)``/``min(xs)``: the entries equal to the result share it evenly (as
    ties of ``np.maximum`` do)."""
    if isinstance(array_module(y), LikeModule):
        return _lazy_extremum_entries(g, xs, y)
    hits = [bool(np.all(x == y)) for x in xs]
    share = sum(hits)
    return SeqAdjoint([g / share if hit else zeros_like(x) for hit, x in zip(hits, xs)])


def _lazy_extremum_entries(g, xs, y):
    """The same for lazy arrays (dask): which entries tie stays lazy, as ``bool()`` would compute."""
    hits = [np.all(x == y) for x in xs]
    share = builtins.sum(hits)
    return SeqAdjoint(
        [np.reshape(np.where(hit, g / share, 0.0), _shape(x)) for hit, x in zip(hits, xs)]
    )


def unstack_entries(g, xs):
    """Adjoint of ``np.asarray(xs)`` of a list or tuple: entry k gets ``g[k]`` in its own shape."""
    return SeqAdjoint(np.reshape(g[k], _shape(x)) for k, x in enumerate(xs))


def sequence_copy_adjoint(g, xs):
    """Adjoint of ``list(xs)`` / ``tuple(xs)``: entry by entry; for an array ``xs`` (iterated
    along its first axis) the entries' adjoints stacked back."""
    if isinstance(xs, (list, tuple)):
        return ZERO if g is ZERO else _dense(g, xs)
    if g is ZERO:
        return ZERO
    return np.stack([zeros_like(xs[k]) if gk is ZERO else gk for k, gk in enumerate(g)])


def dict_from(keys, values):
    """The dict of a dict comprehension: ``values[k]`` at ``keys[k]``, a later entry replacing an
    earlier one with an equal key, as ``{k: v for ...}`` does."""
    return dict(zip(keys, values))


def dict_entries(g, keys, values):
    """Adjoint of ``dict_from(keys, values)`` for ``values``: each value gets its key's entry of
    ``g`` (a dict's adjoint), none where a later entry with an equal key replaced it."""
    if g is ZERO:
        return ZERO
    last = {k: i for i, k in enumerate(keys)}
    return SeqAdjoint(g.get(k, ZERO) if last[k] == i else ZERO for i, k in enumerate(keys))
