"""The corpus: every whole function in ``tests/corpus`` against finite differences.

Each case is checked on ``SEEDS`` random inputs drawn by its own generator (shapes and domain);
``sourcegrad.grad`` must match central differences, leave the arguments untouched, and
``sourcegrad.value_and_grad`` must return the function's own value.
"""

import copy

import numpy as np
import pytest

import sourcegrad as sg

from .corpus import all_cases
from .corpus.harness import check
from .oracle import assert_close

SEEDS = (0, 1, 2)
CASES = all_cases()


def _param(c):
    return pytest.param(c, id=c.id)


def test_corpus_is_large_enough():
    assert len(CASES) >= 100
    assert len({c.id for c in CASES}) == len(CASES), "two cases share a name"


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_gradient(case):
    for seed in SEEDS:
        args = case.make(np.random.default_rng(seed))
        check(case.fn, args, case.wrt, case.rtol, case.atol)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_value(case):
    args = case.make(np.random.default_rng(0))
    value, _ = sg.value_and_grad(case.fn, wrt=case.wrt)(*copy.deepcopy(args))
    assert_close(value, case.fn(*args), 1e-10, 1e-12, what="value")
