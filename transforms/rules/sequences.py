"""Python lists and tuples: concatenation, repetition, ``max``/``min`` of a sequence, and a
sequence made an array where numpy differentiates one (``transforms/sequences.py`` chooses
these primitives where an operand is known to be a list or tuple)."""

from sourcegrad.runtime import (
    concat_sequences,
    dict_from,
    max_of_sequence,
    min_of_sequence,
    repeat_sequence,
    stack_entries,
)

from . import rule

rule(
    concat_sequences,
    "z, a, b",
    "d[a] += sequence_head(d[z], a, b)\nd[b] += sequence_tail(d[z], a, b)",
)
rule(
    repeat_sequence,
    "z, x, y",
    "d[x] += unrepeat_sequence(d[z], x, y, 0)\nd[y] += unrepeat_sequence(d[z], x, y, 1)",
)
rule([max_of_sequence, min_of_sequence], "y, xs", "d[xs] += extremum_entries(d[y], xs, y)")
rule(stack_entries, "y, xs", "d[xs] += unstack_entries(d[y], xs)")
rule([list, tuple], "y, iterable=()", "d[iterable] += sequence_copy_adjoint(d[y], iterable)")
rule(
    dict_from,
    "y, keys, values",
    "d[values] += dict_entries(d[y], keys, values)",
    nondiff={"keys": "the keys of a dict"},
)
