"""Branches (`if`/`elif`/`else`, conditional expressions), each against finite differences,
with a plain-Python mirror per branchy function proving that the drawn inputs drive every
branch.
"""

import numpy as np
import pytest
from hypothesis import given

import sourcegrad as sg

from .corpus.harness import check
from .flow import SEEDS, SIZES, rng_of, with_sum


# ==== branches ====================================================================================


def piecewise3(x):
    s = np.sum(x)
    if s > 1.0:
        y = np.sin(x) * s
    elif s > -1.0:
        y = x * x * 0.5
    else:
        y = np.tanh(x) - s
    return np.sum(y * x)


def piecewise3_branch(x):
    s = np.sum(x)
    return "hi" if s > 1.0 else "mid" if s > -1.0 else "lo"


def nested_if(x):
    s = np.sum(x)
    if s > 0:
        if x[0] > 0:
            y = x * s
        else:
            y = np.exp(x * 0.5)
    else:
        if x[0] > 0:
            y = np.sin(x) + s
        else:
            y = x**3
    return np.sum(y)


def nested_if_branch(x):
    return ("s+" if np.sum(x) > 0 else "s-") + ("x0+" if x[0] > 0 else "x0-")


def ternary(x):
    s = np.sum(x * x)
    y = np.sin(x) * s if s > 2.0 else np.cos(x) * x
    return np.sum(y)


def ternary_branch(x):
    return "then" if np.sum(x * x) > 2.0 else "else"


def bool_ops(x):
    s = np.sum(x)
    m = np.max(x)
    y = x
    if s > 0 and m < 1.0:
        y = y * 2.0
    if s < 0 or m > 1.0:
        y = np.tanh(y)
    if not s > 0:
        y = y + s * y
    return np.sum(y * y)


def bool_ops_branch(x):
    s, m = np.sum(x), np.max(x)
    return f"and={s > 0 and m < 1.0}, or={s < 0 or m > 1.0}, not={not s > 0}"


def one_armed(x):
    y = x * 2.0
    if np.sum(x) > 0:
        y = np.tanh(y) * x
    return np.sum(y)


def one_armed_branch(x):
    return "then" if np.sum(x) > 0 else "skip"


def scalar_branch(a, x):
    if a > 0.5:
        r = a * np.sum(x) + a * a
    else:
        r = np.sin(a) * np.sum(x * x)
    return r


def scalar_branch_branch(a, x):
    return "big" if a > 0.5 else "small"


def _sum_in(lo, hi):
    return lambda seed, n: (with_sum(seed, n, lo, hi),)


def _nested(s_sign, x0_sign):
    def make(seed, n):
        rng = rng_of(seed)
        n = max(n, 2)
        x0 = x0_sign * rng.uniform(0.5, 1.5)
        rest = rng.normal(size=n - 1)
        total = s_sign * rng.uniform(0.5, 2.0)
        rest = rest - rest.mean() + (total - x0) / (n - 1)
        return (np.concatenate([[x0], rest]),)

    return make


def _sumsq(lo, hi):
    def make(seed, n):
        rng = rng_of(seed)
        v = rng.normal(size=n)
        return (v / np.linalg.norm(v) * np.sqrt(rng.uniform(lo, hi)),)

    return make


def _bool_case(s_sign, m_big):
    def make(seed, n):
        rng = rng_of(seed)
        n = max(n, 3)
        while True:
            v = rng.uniform(-0.9, 0.9, size=n) if not m_big else rng.uniform(-2.0, 2.0, size=n)
            if m_big:
                v[0] = rng.uniform(1.3, 2.0)
            v = v - v.mean() + s_sign * rng.uniform(0.3, 1.0) / n
            m = v.max()
            if (m > 1.2) if m_big else (m < 0.9):
                return (v,)

    return make


def _scalar(lo, hi):
    return lambda seed, n: (float(rng_of(seed).uniform(lo, hi)), rng_of(seed + 1).normal(size=n))


# (function, mirror, {branch: make(seed, n) -> args})
BRANCHES = [
    (
        piecewise3,
        piecewise3_branch,
        {"hi": _sum_in(1.5, 3.0), "mid": _sum_in(-0.5, 0.5), "lo": _sum_in(-3.0, -1.5)},
    ),
    (
        nested_if,
        nested_if_branch,
        {
            "s+x0+": _nested(1, 1),
            "s+x0-": _nested(1, -1),
            "s-x0+": _nested(-1, 1),
            "s-x0-": _nested(-1, -1),
        },
    ),
    (ternary, ternary_branch, {"then": _sumsq(2.5, 5.0), "else": _sumsq(0.1, 1.5)}),
    (
        bool_ops,
        bool_ops_branch,
        {
            "and=True, or=False, not=False": _bool_case(1, False),
            "and=False, or=True, not=False": _bool_case(1, True),
            "and=False, or=True, not=True": _bool_case(-1, False),
        },
    ),
    (one_armed, one_armed_branch, {"then": _sum_in(0.5, 2.0), "skip": _sum_in(-2.0, -0.5)}),
    (scalar_branch, scalar_branch_branch, {"big": _scalar(0.7, 2.0), "small": _scalar(-1.0, 0.3)}),
]
BRANCH_PARAMS = [
    pytest.param(f, mirror, branch, make, id=f"{f.__name__}-{branch}")
    for f, mirror, makers in BRANCHES
    for branch, make in makers.items()
]


@pytest.mark.parametrize("f, mirror, branch, make", BRANCH_PARAMS)
@given(seed=SEEDS, n=SIZES)
def test_branch(f, mirror, branch, make, seed, n):
    args = make(seed, n)
    assert mirror(*args) == branch  # this parameter drives this branch
    check(f, args)


def test_every_branch_is_driven():
    """The parametrized inputs above reach every combination each mirror can report."""
    for f, mirror, makers in BRANCHES:
        seen = {mirror(*make(seed, 4)) for make in makers.values() for seed in range(5)}
        assert seen == set(makers), f.__name__


def test_branch_on_scalar_wrt_both():
    check(scalar_branch, (0.9, np.array([0.3, -0.2])), wrt=(0, 1))
    check(scalar_branch, (0.1, np.array([0.3, -0.2])), wrt=(0, 1))


# ==== raise: argument checks in the differentiated function ======================================


def _checked_sqrt(v, floor):
    if np.min(v) < floor:
        raise ValueError(f"values below {floor}: {np.min(v):.3f}")
    return np.sqrt(v - floor)


def validated(x, w):
    if x.ndim != 1:
        raise ValueError(f"expected a vector, got shape {x.shape}")
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > 100.0:
            raise OverflowError("an entry is too large") from None
        total = total + w * x[i] ** 2
    return total + np.sum(_checked_sqrt(x * x + 1.0, 0.5))


@given(seed=SEEDS, n=SIZES)
def test_raise_in_a_branch_runs_in_the_forward_and_has_no_backward(seed, n):
    rng = rng_of(seed)
    check(validated, (rng.uniform(-2.0, 2.0, n), float(rng.uniform(-1.0, 1.0))), wrt=(0, 1))


@pytest.mark.parametrize("specialize", [True, False])
def test_raise_reaches_the_caller_with_its_message(specialize):
    g = sg.grad(validated, wrt=(0, 1), specialize=specialize)
    with pytest.raises(ValueError, match=r"expected a vector, got shape \(2, 2\)"):
        g(np.ones((2, 2)), 0.5)
    with pytest.raises(OverflowError, match="too large") as info:
        g(np.array([1.0, 200.0]), 0.5)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    with pytest.raises(ValueError, match="values below 0.5"):  # raised by an inlined helper
        sg.grad(_checked_sqrt)(np.array([0.1, 0.9]), 0.5)
    with pytest.raises(ValueError, match="values below"):  # forward mode runs it too
        sg.jvp(_checked_sqrt)(np.array([0.1, 0.9]), 0.5, np.ones(2))
