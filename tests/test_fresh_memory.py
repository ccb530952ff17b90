"""What a primitive may return, checked against numpy: the aliasing analysis takes a primitive
declared fresh (``rules.FRESH``, every ufunc) to return new memory, never an operand or a view of
one (``transforms/aliasing.py``). Each such primitive is run on the rule table's inputs
(``tests/systematic_specs.py``) and its result must share no memory with them; and the calls that
numpy lets return their operand itself (``x.conj()`` of a real array, a ``Function`` whose forward
returns its input) are refused when written through, never differentiated as a copy.
"""

import copy

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.transforms import rules as R

from .test_systematic import _rng, _value_function, cases_of, draw, key_id, registered


def _declared_fresh(key):
    try:
        return key in R.FRESH or isinstance(key, np.ufunc)
    except TypeError:
        return False


def _leaves(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, np.ndarray):
        yield value


FRESH_CASES = [
    pytest.param(key, i, id=f"{key_id(key)}-{i}")
    for key in registered()
    if _declared_fresh(key)
    for i in [j for j, c in enumerate(cases_of(key)) if not c.refused][:3]
]


@pytest.mark.parametrize("key, index", FRESH_CASES)
def test_a_primitive_declared_fresh_returns_new_memory(key, index):
    case = cases_of(key)[index]
    rng = _rng("fresh", key_id(key), index)
    args = [draw(rng, x, case.dtypes[0]) for x in case.inputs.values()]
    out = _value_function(case)(*copy.deepcopy(args) if case.seeded else args)
    for leaf in _leaves(out):
        for a in args:
            if isinstance(a, np.ndarray):
                assert not np.shares_memory(leaf, a), (
                    f"{key_id(key)} is declared fresh but returned memory of an operand:\n"
                    f"{case.expr}"
                )


def test_the_fresh_primitives_are_checked():
    assert len(FRESH_CASES) > 100


class Straight(sg.Function):
    """A straight-through estimator: its forward returns its input itself."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def through_conj(x):
    h = np.sin(x)
    y = h.conj()  # a real array: h itself
    y[0] = 0.0
    return np.sum(h * x)


def through_function(x):
    h = np.sin(x)
    y = Straight.apply(h)  # h itself
    y[0] = 0.0
    return np.sum(h * x)


@pytest.mark.parametrize("f", [through_conj, through_function])
def test_a_call_that_may_return_its_operand_is_not_taken_for_a_copy(f):
    """Python writes through ``y`` into ``h``: the gradient read h as a copy (d/dx0 = 0.287 for 0)."""
    with pytest.raises(sg.UnsupportedSyntaxError, match="may share memory") as e:
        sg.grad(f)(np.array([0.3, -0.5, 0.7]))
    assert e.value.text.strip() == "y[0] = 0.0"
