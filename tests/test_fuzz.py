"""Random programs against finite differences.

``tests/fuzz/generate.py`` writes random programs (safe numpy ops on bounded values of five
shapes that broadcast against each other, branches on data, bounded ``for``/``while`` loops with
``break``/``continue``, early returns, helpers with default and keyword arguments, in-place
writes to local buffers); each is written to a module file, imported, differentiated with
``sourcegrad.value_and_grad`` in the code specialized to the arguments' shapes and in the
general code, and the two are compared with each other and with central differences
(``tests/fuzz/check.py``). Hypothesis draws the programs, so a failure shrinks to a small one,
printed with the test's output.

CI runs ``SOURCEGRAD_FUZZ_PROGRAMS`` programs (30 by default); for long runs that count every
outcome instead of stopping at the first failure, use ``python -m tests.fuzz --programs N``.
"""

import collections
import os

import numpy as np
from hypothesis import given, note, settings
from hypothesis import strategies as st

from .fuzz.check import check_program
from .fuzz.generate import HypothesisChooser, RandomChooser, generate

PROGRAMS = int(os.environ.get("SOURCEGRAD_FUZZ_PROGRAMS", "30"))
OUTCOMES = collections.Counter()


@settings(max_examples=PROGRAMS)
@given(st.data())
def test_random_programs(data):
    program = generate(HypothesisChooser(data))
    note(program.source)
    seed = data.draw(st.integers(0, 2**16), label="input seed")
    outcome = check_program(program, seed)
    OUTCOMES[outcome.status] += 1
    assert outcome.status not in ("fail", "invalid"), (
        f"{outcome.category}\n{outcome.detail}\n{program.source}"
    )


def test_generator_covers_every_construct():
    features = set()
    for seed in range(1000):
        features |= generate(RandomChooser(seed)).features
    wanted = {
        "if",
        "else",
        "bool_op",
        "for_range",
        "for_range2",
        "for_reversed",
        "for_range_k",
        "for_array",
        "for_enumerate",
        "while",
        "while_data",
        "nested_loop",
        "break",
        "continue",
        "early_return",
        "helper_early_return",
        "call",
        "call_default",
        "call_keyword",
        "helper_calls_helper",
        "buffer_zeros",
        "buffer_copy",
        "write_set",
        "write_set_loop",
        "write_slice_add",
        "write_mul",
        "write_blend",
        "write_mask",
        "update_aug_add",
        "update_aug_sub",
        "update_aug_mul",
        "update_aug_div",
        "update_blend",
        "update_tanh",
        "index",
        "index_by_loop_var",
        "sum",
        "mean",
        "exp",
        "sin",
        "cos",
        "tanh",
        "arctan",
        "square",
        "where",
        "op+",
        "op-",
        "op*",
        "op/",
        "swap",
        "list_append",
        "list_stack",
        "list_sum",
        "list_concat",
        "list_tuple_concat",
        "list_extend",
        "list_repeat",
        "list_slice",
        "list_mean",
        "list_reduce",
        "for_range_global",
        "module_scale",
        # shapes and broadcasting: every kind against every kind it broadcasts with, every
        # broadcasting rule, operands computed by broadcasting rules and keepdims reductions,
        # slices of broadcast results, a matrix buffer, rows of a matrix, Python float arguments
        "broadcast_scal_vec",
        "broadcast_vec_row",
        "broadcast_row_col",
        "broadcast_col_row",
        "broadcast_vec_col",
        "broadcast_mat_row",
        "broadcast_col_mat",
        "broadcast_vec_mat",
        "broadcast_mat_scal",
        "broadcast_computed_operand",
        "keepdims",
        "reduce_axis",
        "max",
        "min",
        "maximum",
        "minimum",
        "fmax",
        "fmin",
        "where_select",
        "where_mask_of_a",
        "where_mask_of_b",
        "clip",
        "logaddexp",
        "hypot",
        "arctan2",
        "power",
        "slice_of_result",
        "slice_col",
        "new_axis",
        "row_of_matrix",
        "update_broadcast",
        "buffer_matrix",
        "write_fancy_add",
        "for_rows",
        "call_float_literal",
        "nested_exit",
        "helper_nested_exit",
        "return_buffer",
        # a helper returning a tuple, unpacked where it is called
        "helper_returns_tuple_plain",
        "helper_returns_tuple_starred",
        "helper_returns_tuple_indexed",
        "helper_returns_tuple_branches",
        # forms lowered to the others: for/else, the walrus, try/except, or as a value
        "for_else",
        "walrus_if",
        "try_except",
        "or_value",
    }
    assert wanted <= features, sorted(wanted - features)


def test_generated_programs_run_and_stay_bounded():
    """The generator's promise, checked under plain numpy: no error, no overflow, finite values."""
    from .fuzz.check import load

    for seed in range(60):
        program = generate(RandomChooser(10_000 + seed))
        f = load(program.source).f
        with np.errstate(all="raise", under="ignore"):
            value = f(*program.args(seed))
        assert np.isfinite(value) and abs(value) < 1e4, program.source


def test_standalone_runs_write_to_a_temporary_folder(tmp_path, monkeypatch, capsys):
    """``python -m tests.fuzz`` without ``--out`` leaves the working tree alone."""
    import shutil

    from .fuzz.__main__ import main

    monkeypatch.chdir(tmp_path)
    main(["--programs", "1", "--seed", "1"])
    assert not list(tmp_path.iterdir())
    out = capsys.readouterr().out.split("results in ")[-1].strip()
    assert os.path.isfile(os.path.join(out, "summary.json")) and not out.startswith(os.getcwd())
    shutil.rmtree(out)
