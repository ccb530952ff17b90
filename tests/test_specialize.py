"""Shape specialization and broadcasting: minimal reproducers of what random programs found.

Each function runs through the code specialized to its arguments' shapes and the general code,
both against central finite differences (``tests/oracle.py``). The seams: a temporary made by a
broadcasting rule keeps its adjoint in the broadcast shape until that rule sums it
(``Analysis._lazy``); specialization then drops or plans each operand's ``unbroadcast`` from the
shape the adjoint has (``Analysis.adjoint_shape``). A rule whose operand's adjoint reads the
operand itself (``maximum``: ``unbroadcast(g * extremum_share(x > y, ...), x)``) was taken for one
whose ``unbroadcast`` stays, so the adjoint's shape was taken for the operand's: summed over too
few axes (a wrong gradient), or over none (a crash in ``finalize``, ``unindex`` or ``+``).
"""

import threading

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad import api

from .oracle import assert_close, fd_grad

R = np.random.default_rng(0)
ROW, MAT, COL = R.normal(size=(1, 4)), R.normal(size=(3, 4)), R.normal(size=(3, 1))


def check_both(f, args, wrt=0):
    """The specialized and the general gradient of ``f`` against finite differences."""
    want = fd_grad(f, args, wrt)
    for specialize in (True, False):
        got = sg.grad(f, wrt=wrt, specialize=specialize)(*args)
        what = f"{f.__name__} wrt {wrt} ({'specialized' if specialize else 'general'} code)"
        assert type(got) is type(want), (
            f"{what}: a {type(got).__name__} for a {type(want).__name__}"
        )
        assert_close(got, want, what=what)


# ---- a broadcast operand made by a broadcasting rule, read by a rule that reads it ----------------
# (one per broadcasting rule whose operand's adjoint reads that operand)


def through_maximum(a, m, c):
    return np.sum(np.maximum(a * c, m) ** 2)


def through_minimum(a, m, c):
    return np.sum(np.minimum(m, a + c) ** 2)


def through_fmax(a, m, c):
    return np.sum(np.fmax(a - c, m) * m)


def through_fmin(a, m, c):
    return np.sum(np.fmin(m, a * c) * m)


def through_divide(a, m, c):
    return np.sum(m / (c + a * a))  # c > 0


def through_hypot(a, m, c):
    return np.sum(np.hypot(a * c, m))


def through_logaddexp(a, m, c):
    return np.sum(np.logaddexp(a + c, m) * m)


def through_logaddexp2(a, m, c):
    return np.sum(np.logaddexp2(m, a * c) * m)


def through_arctan2(a, m, c):
    return np.sum(np.arctan2(a * c, 1.5 + m * m))


RULES = [
    through_maximum,
    through_minimum,
    through_fmax,
    through_fmin,
    through_divide,
    through_hypot,
    through_logaddexp,
    through_logaddexp2,
    through_arctan2,
]


@pytest.mark.parametrize("wrt", [0, 1, 2])
@pytest.mark.parametrize("f", RULES, ids=lambda f: f.__name__)
def test_broadcast_operand_from_a_broadcasting_rule(f, wrt):
    check_both(f, (ROW, MAT, ROW * 0.5 + 1.0), wrt)


# ---- keepdims reductions feeding maximum/minimum --------------------------------------------------


def keepdims_row_into_maximum(a, m):
    k = np.sum(m, axis=0, keepdims=True)  # (1, 4)
    z = np.maximum(k * a, m)
    return np.sum(z**2)


def keepdims_col_into_fmax(m, s):
    z = np.fmax(np.mean(m, axis=1, keepdims=True) * s, m)  # (3, 1) against (3, 4)
    return np.sum(z**2)


def keepdims_plus_float_into_maximum(m, s):
    z = np.maximum(s + np.sum(m, axis=0, keepdims=True), m)
    return np.sum(z**2)


@pytest.mark.parametrize("wrt", [0, 1])
def test_keepdims_row_into_maximum(wrt):
    check_both(keepdims_row_into_maximum, (ROW, MAT), wrt)


@pytest.mark.parametrize(
    "f", [keepdims_col_into_fmax, keepdims_plus_float_into_maximum], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("wrt", [0, 1])
def test_keepdims_reduction_into_extremum(f, wrt):
    check_both(f, (MAT, 0.3), wrt)


# ---- crashes: a float parameter's gradient, indexing and slicing adjoints -------------------------


def float_times_entry_into_maximum(s, m, r):
    return np.sum(np.maximum(s * r[0], m) ** 2)  # s * r[0]: (4,), broadcast against (3, 4)


def entry_through_fmax_into_maximum(m, s, y):
    v = m * 1.0
    z = np.maximum(np.fmax(v[-1, 0], s), y)  # fmax(...): (), broadcast against y (4,)
    return np.sum(z * y)


def slice_of_column_into_maximum(a, m, c):
    z = np.maximum(np.mean(m, axis=1, keepdims=True) * c[:1, :1], m)
    return np.sum(z * m)


@pytest.mark.parametrize("wrt", [0, 1, 2])
def test_float_parameter_gradient_is_a_float(wrt):
    check_both(float_times_entry_into_maximum, (0.3, MAT, ROW), wrt)


@pytest.mark.parametrize("wrt", [0, 1, 2])
def test_entry_adjoint_through_nested_extrema(wrt):
    check_both(entry_through_fmax_into_maximum, (MAT, 0.2, ROW[0]), wrt)


@pytest.mark.parametrize("wrt", [0, 1, 2])
def test_slice_adjoint_of_a_broadcast_operand(wrt):
    check_both(slice_of_column_into_maximum, (ROW, MAT, ROW), wrt)


# ---- np.where: a mask broadcast over a branch (both codes) -----------------------------------------


def where_mask_over_branch(a, m):
    return np.sum(np.where(m > 0, a, 0.0) * m)  # the mask (3, 4) broadcasts a (4,)


def where_mask_over_other_branch(a, m):
    return np.sum(np.where(m > 0, 0.5, a) * m)


@pytest.mark.parametrize(
    "f", [where_mask_over_branch, where_mask_over_other_branch], ids=lambda f: f.__name__
)
def test_where_mask_broadcasts_a_branch(f):
    check_both(f, (ROW[0], MAT))


# ---- the cache of specializations under threads --------------------------------------------------


def cached(x):
    return np.sum(np.tanh(x) * x)


def test_specialization_cap_holds_under_threads():
    """Threads that pass the cap test together must not each add a specialization past it."""
    for _ in range(3):
        df = sg.grad(cached)
        for n in range(1, api.MAX_SPECIALIZATIONS):  # one place left
            df(np.ones(n))
        start = threading.Barrier(8)
        results, errors = {}, []

        def work(k):
            x = np.linspace(-1.0, 1.0, 20 + k)
            start.wait()
            try:
                results[k] = (x, df(x))
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(df._specialized) <= api.MAX_SPECIALIZATIONS, len(df._specialized)
        for x, g in results.values():
            assert_close(g, np.tanh(x) + x * (1.0 - np.tanh(x) ** 2))


# ---- early exits and in-place writes (aliasing.py follows the exit flags) ------------------------


def fill_until(x):
    out = np.zeros(3)
    for i in range(3):
        out[i] = np.tanh(x[i]) * 2.0
        if out[i] > 1.5:
            return out  # never written again: the loop is left
    out[0] = 0.5 * out[0]
    return out


def returns_filled_buffer(x):
    return np.sum(fill_until(x) * x)


def first_over(x, s):
    for i in range(3):
        b = np.zeros(3)  # a fresh buffer in every iteration
        j = 0
        while j < 2:
            j += 1
            b[[0, 2, 2]] += x[:1] * s
            if np.sum(b) > 0.5:
                return b
    return x * s


def early_return_from_nested_loops(x, s):
    return np.sum(first_over(x * 1.0, s) * x)


def kept_after_break(x):
    out = np.zeros(3)
    res = x * 0.0
    for i in range(3):
        out[i] = np.tanh(x[i]) * 2.0
        if out[i] > 1.5:
            res = out
            break
    return np.sum(res * x) + np.sum(out)


@pytest.mark.parametrize(
    "f, args",
    [
        (returns_filled_buffer, (np.array([0.3, 1.2, 0.5]),)),
        (returns_filled_buffer, (np.array([0.3, 0.2, 0.5]),)),
        (early_return_from_nested_loops, (np.array([0.3, 0.4, 0.5]), 0.7)),
        (early_return_from_nested_loops, (np.array([0.3, 0.4, 0.5]), 0.1)),
        (kept_after_break, (np.array([0.3, 1.2, 0.5]),)),
    ],
    ids=["returned", "not-returned", "nested-returned", "nested-not-returned", "break"],
)
def test_buffer_left_by_an_exit_is_not_written_again(f, args):
    for wrt in range(len(args)):
        check_both(f, args, wrt)


def kept_after_continue(x):
    out = np.zeros(3)
    res = x * 0.0
    for i in range(3):
        out[i] = np.tanh(x[i]) * 2.0  # the next iteration writes what res holds
        if out[i] > 1.5:
            res = out
            continue
    return np.sum(res * x) + np.sum(out)


def written_after_break(x):
    out = np.zeros(3)
    res = x * 0.0
    for i in range(3):
        out[i] = np.tanh(x[i]) * 2.0
        if out[i] > 1.5:
            res = out
            break
    out[0] = 1.0  # after the loop, on the path that broke too
    return np.sum(res * x) + np.sum(out)


@pytest.mark.parametrize("f", [kept_after_continue, written_after_break], ids=lambda f: f.__name__)
def test_buffer_written_after_an_exit_is_refused(f):
    with pytest.raises(sg.UnsupportedSyntaxError, match="may share memory with 'out'"):
        sg.grad(f)(np.array([0.3, 1.2, 0.5]))
