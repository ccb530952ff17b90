"""The same gradient on dask arrays: lazily (the generated code on dask arrays) and data-parallel
(``sourcegrad.dask.data_parallel``: the numpy gradient per chunk of rows, on a dask.distributed
cluster).

Lazy mode, for the backend table of ``test_backend.py`` and a table of programs of its own: the
value and gradients come back as dask arrays, equal the numpy ones, and the gradient call computes
exactly as often as the user's function itself does on the same dask arrays (a data-dependent
``if``/``while`` test computes; nothing else may), each time after one ``dask.persist`` of the
values the rest reads, so that no chunk is computed twice. Data-parallel mode: equal to the numpy gradient
for sum and mean losses, lazy until ``dask.compute``, and a loss that mixes rows is refused with
the file and line that mixes them.

Skipped cleanly without dask (``pip install "sourcegrad[dask]"``).
"""

from __future__ import annotations

import contextlib
import os
from unittest import mock
import pickle
import re
import warnings

import numpy as np
import pytest
import hypothesis
from hypothesis import given
from hypothesis import strategies as st

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
from dask.callbacks import Callback  # noqa: E402

import sourcegrad as sg  # noqa: E402
import sourcegrad.testing  # noqa: E402,F401

from . import oracle  # noqa: E402
from . import test_backend as backend  # noqa: E402
from .oracle import assert_close  # noqa: E402
from .devicearray import HostSync  # noqa: E402

HERE = os.path.basename(__file__)


# ---- moving trees to dask and back, and counting computes -----------------------------------------


def _tree(fn, x):
    if isinstance(x, dict):
        return {k: _tree(fn, v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_tree(fn, v) for v in x)
    return fn(x)


def to_lazy(x):
    """Every numpy array in ``x`` as a dask array of (up to) two chunks per axis."""
    return _tree(
        lambda a: (
            da.from_array(a, chunks=tuple(max(1, (k + 1) // 2) for k in a.shape))
            if isinstance(a, np.ndarray)
            else a
        ),
        x,
    )


def to_host(x):
    return _tree(lambda a: a.compute() if isinstance(a, da.Array) else a, x)


def is_lazy(x):
    if isinstance(x, dict):
        return all(is_lazy(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return all(is_lazy(v) for v in x)
    return isinstance(x, da.Array)


_PERSISTING = []  # non-empty while dask.persist runs (track_computes counts it apart)


class _Computes(Callback):
    """Counts the graphs dask's local schedulers run (each ``compute``, ``bool()``, ``float()``);
    those run by ``dask.persist`` go to ``persists``."""

    def __init__(self, out, persists):
        super().__init__()
        self.out, self.persists = out, persists

    def _start(self, dsk):
        (self.persists if _PERSISTING else self.out).append(HostSync(("compute", "dask")))


@contextlib.contextmanager
def track_computes(persists=None):
    """The computes made inside, as a list; ``persists``: a list that gets the persists apart."""
    got, persists = [], ([] if persists is None else persists)
    real = dask.persist

    def persist(*args, **kwargs):
        _PERSISTING.append(True)
        try:
            return real(*args, **kwargs)
        finally:
            _PERSISTING.pop()

    with mock.patch.object(dask, "persist", persist), _Computes(got, persists):
        yield got


# ---- lazy mode: the backend table on dask arrays --------------------------------------------------

# Rows of test_backend's table that dask itself cannot run, each for the dask limit it hits (the
# failures are loud: an error, or a gradient that comes back as a numpy array where dask falls back
# to computing). Strict: a row that starts to pass must leave this list.
DASK_LIMITS = {
    "take": "np.add.at (scatter-add into a view) has no dask implementation",
    "repeat_tile": "np.add.at",
    "take_flat_sort_flat": "np.add.at",
    "pad": "np.add.at",
    "take_along_axis": "dask does not index with several integer arrays",
    "bool_mask": "a boolean mask gives dask rows of unknown length",
    "trace_diagonal": "dask assigns through at most one integer-array index",
    "diag_tri": "dask assigns through at most one integer-array index",
    "slices": "dask cannot assign through an index holding None",
    "shapes": "dask assigns through basic indices only in some forms",
    "tensordot": "dask's tensordot does not take array axes",
    "outer_inner_kron": "np.inner has no dask implementation",
    "linalg_dense": "dask's linear algebra needs square chunks",
    "item_astype": "dask arrays have no .item()",
    "sort": "np.argsort has no dask implementation (dask computes, the gradient comes back as numpy)",
    "split": "np.split has no dask implementation",
    "array_split": "np.array_split has no dask implementation",
}


def _lazy_param(case):
    marks = list(case.marks)
    if case.id in DASK_LIMITS:
        marks = [pytest.mark.xfail(strict=True, reason=f"dask: {DASK_LIMITS[case.id]}")]
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_lazy_param(c) for c in backend.CASES])
def test_backend_table_on_dask(case):
    with warnings.catch_warnings():
        # dask's "not implemented, computing" (the user's own calls)
        warnings.simplefilter("ignore", FutureWarning)
        backend.check_case(case, to_lazy, to_host, is_lazy, track_computes)


def test_dask_limits_name_rows_of_the_table():
    assert set(DASK_LIMITS) <= {c.id for c in backend.CASES}


@pytest.mark.slow
def test_every_rule_on_dask_is_right_or_fails_loudly():
    """The rule table's fast profile (test_systematic's cases, float64) on dask arrays: each case
    either raises (dask lacks the operation, or cannot assign that way) or gives numpy's value and
    gradients. Never a silent wrong gradient (a write through a view dask does not have, a numpy
    fallback that writes into a computed copy)."""
    import copy

    from . import test_systematic as systematic

    def lazy(a):
        if isinstance(a, np.ndarray):
            return (
                da.from_array(a, chunks=tuple(max(1, (k + 1) // 2) for k in a.shape))
                if a.ndim
                else da.from_array(a)
            )
        return a

    right, loud, wrong = 0, 0, []
    for p in systematic.params_for(systematic.fast_profile):
        key, i, dtype = p.values
        case = systematic.cases_of(key)[i]
        if dtype != np.float64 or case.refused or case.seeded:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                built = systematic.build(key, case, dtype)
                vg = sg.value_and_grad(built.f, wrt=tuple(case.inputs))
                want_value, want = vg(*copy.deepcopy(built.args))
            except Exception:
                continue  # numpy itself refuses this case: test_systematic's business
            try:
                value, grads = dask.compute(*vg(*[lazy(a) for a in copy.deepcopy(built.args)]))
            except Exception:
                loud += 1
                continue
        # (a float32 value sums in another order)
        rtol = 1e-9 if np.result_type(want_value) == np.float64 else 1e-5
        same = np.allclose(value, want_value, rtol=rtol, atol=1e-12) and all(
            np.allclose(
                np.asarray(g, dtype=complex), np.asarray(w, dtype=complex), rtol=1e-9, atol=1e-12
            )
            for g, w in zip(grads, want)
        )
        if same:
            right += 1
        else:
            wrong.append(f"{systematic.key_id(key)}[{i}]: {case.expr}")
    assert not wrong, "silently wrong on dask:\n  " + "\n  ".join(wrong)
    assert right >= 500, (right, loud)  # most rules run lazily (584 of 692 when this was written)


def _flat(x):
    if isinstance(x, dict):
        return [v for k in x for v in _flat(x[k])]
    if isinstance(x, (list, tuple)):
        return [v for e in x for v in _flat(e)]
    return [x]


@pytest.mark.slow
def test_the_corpus_on_dask_is_right_or_fails_loudly():
    """Every whole function of tests/corpus on dask arrays: numpy's value and gradients, or an
    error (113 of 116 ran lazily when this was written)."""
    import copy

    from .corpus import all_cases

    right, wrong = 0, []
    for case in all_cases():
        args = case.make(np.random.default_rng(0))
        vg = sg.value_and_grad(case.fn, wrt=case.wrt)
        want_value, want = vg(*copy.deepcopy(args))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                value, grads = dask.compute(*vg(*to_lazy(copy.deepcopy(args))))
            except Exception:
                continue
        if np.allclose(value, want_value, rtol=1e-9, atol=1e-12) and all(
            np.allclose(
                np.asarray(g, dtype=complex), np.asarray(w, dtype=complex), rtol=1e-8, atol=1e-11
            )
            for g, w in zip(_flat(grads), _flat(want))
        ):
            right += 1
        else:
            wrong.append(case.id)
    assert not wrong, f"silently wrong on dask: {wrong}"
    assert right >= 100, right


# ---- lazy mode: programs ---------------------------------------------------------------------------


def mlp(w1, b1, w2, x, y):
    h = np.maximum(x @ w1 + b1, 0.0)
    out = np.tanh(h @ w2)
    return np.mean((out - y) ** 2)


def control_flow(w1, b1, w2, x, y):
    h = np.tanh(x @ w1 + b1)
    if np.sum(h) > 0:  # computes (a data-dependent test)
        h = h * 2.0
    else:
        h = -h
    k = 0
    while np.max(np.abs(h)) < 4.0 and k < 3:  # computes once per test
        h = h * 1.5
        k += 1
    for _ in range(3):
        h = np.sin(h) + h
    return np.sum(h @ w2 * y)


def reductions(w1, b1, w2, x, y):
    z = x @ w1
    a = np.sum(z, axis=0) + np.mean(z, axis=1).sum()
    m = np.max(z, axis=1, keepdims=True)
    v = np.var(z, axis=0) + np.std(z)
    s = z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))
    return (
        np.sum(a * b1)
        + np.sum(v)
        + np.mean(s)
        + np.prod(np.tanh(z[:3, :2]) + 2.0)
        + np.linalg.norm(z)
    )


def shapes_and_selection(w1, b1, w2, x, y):
    z = (x @ w1)[:, 1:3]
    z2 = np.where(z > 0, z, 0.1 * z)
    c = np.clip(x, -1.0, 1.0) * 2.0
    t = np.concatenate([z2, c[:, :2]], axis=1)
    return np.sum(t.T @ t) + np.sum(np.abs(x[0]) * w1[:, 0]) + np.average(z2)


def softmax_xent(w1, b1, w2, x, y):
    logits = np.tanh(x @ w1 + b1) @ w2
    logits = logits - np.max(logits, axis=1, keepdims=True)
    logp = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    return -np.mean(np.sum(logp * y, axis=1))


def list_max(w1, b1, w2, x, y):
    h = np.tanh(x @ w1 + b1)
    s = np.mean(h)
    # max of a list compares its entries (computes, in the function too); the adjoint finds the
    # ties lazily; a tie (s twice) shares the gradient
    return max([s, np.mean(h * h) + 2.0, np.mean(h @ w2 * y), s]) + min([s, s])


PROGRAMS = [mlp, control_flow, reductions, shapes_and_selection, softmax_xent, list_max]
N_ROWS = 400


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return dict(
        w1=rng.normal(size=(5, 4)),
        b1=rng.normal(size=4),
        w2=rng.normal(size=(4, 3)),
        x=rng.normal(size=(N_ROWS, 5)),
        y=rng.normal(size=(N_ROWS, 3)),
    )


def _lazy(data):
    return {
        k: da.from_array(v, chunks=(N_ROWS // 4,) + v.shape[1:])
        if k in ("x", "y")
        else da.from_array(v)
        for k, v in data.items()
    }


def _close(got, want, rtol=1e-12):
    scale = max(1.0, float(np.max(np.abs(want))))
    return float(np.max(np.abs(np.asarray(got) - want))) <= rtol * scale


@pytest.mark.parametrize("specialize", [True, False], ids=["specialized", "general"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_lazy_gradient_equals_numpy_and_computes_nothing(f, specialize):
    data = _data()
    vg = sg.value_and_grad(f, wrt=(0, 1, 2, 3), specialize=specialize)
    want_value, want = vg(*data.values())  # (by position: a keyword call runs the general code)
    lazy = _lazy(data)
    with track_computes() as own:
        f(*lazy.values())  # what the user's own code computes (its data-dependent tests)
    lazy = _lazy(data)
    persists = []
    with track_computes(persists) as computes:
        value, grads = vg(*lazy.values())
    assert len(persists) <= len(own)  # at most one before each test, none without tests
    assert len(computes) == len(own), (
        f"the gradient call computed {len(computes)} times, the function {len(own)}"
    )
    assert isinstance(value, da.Array) and all(isinstance(g, da.Array) for g in grads)
    value, grads = dask.compute(value, grads)
    assert _close(value, want_value)
    for g, w, arg in zip(grads, want, ("w1", "b1", "w2", "x")):
        assert g.shape == data[arg].shape and g.dtype == data[arg].dtype
        assert _close(g, w), arg


def test_control_flow_computes_only_its_tests():
    lazy = _lazy(_data())
    with track_computes() as computes:
        sg.grad(control_flow)(*lazy.values())
    assert 2 <= len(computes) <= 5  # the if, and each while test (at most 4)


# ---- lazy mode: persisting the live values before a data-dependent test ---------------------------


_TANH_RUNS = []  # one entry per array (a numpy one, or a dask chunk) counted_tanh ran on


def _tanh_chunk(block):
    if block.size:  # (not dask's look at an empty block for the result's type)
        _TANH_RUNS.append(block.shape)
    return np.tanh(block)


def counted_tanh(z):
    """``np.tanh`` that counts the arrays it runs on: a dask array's chunks each time they are
    computed, so a chunk computed twice is counted twice."""
    if isinstance(z, da.Array):
        return z.map_blocks(_tanh_chunk, dtype=z.dtype, meta=np.array((), dtype=z.dtype))
    return _tanh_chunk(z)


@sg.adjoint(counted_tanh)
def _(y, z):
    d[z] += d[y] * (1.0 - y * y)  # noqa: F821  (a template: ``d`` is the adjoint)


@contextlib.contextmanager
def tanh_runs():
    del _TANH_RUNS[:]
    yield _TANH_RUNS


def branchy(w, x, t):
    h = counted_tanh(x @ w)
    if np.sum(h) > t:  # computes
        h = h * 2.0
    else:
        h = h - 1.0
    s = np.sum(h * h)
    k = 0
    while s > 2.0 * t and k < 3:  # computes once per trip
        h = np.sin(h) * 0.5
        s = np.sum(h * h)
        k += 1
    if np.max(h) > t:  # computes
        s = s + np.sum(h * x[:, :1])
    return s + np.sum(w * w)


def taped(w, x, t):
    h = x @ w
    k = 0
    while np.max(np.abs(h)) < t and k < 4:  # computes; each trip saves h on the tape
        h = counted_tanh(h) * 3.0 + h
        k += 1
    return np.sum(h * h)


def _branchy_args(seed, rows=40):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(3, 2)) * 0.5, rng.normal(size=(rows, 3))


@pytest.mark.parametrize(
    "f, t",
    [(branchy, 0.3), (branchy, -0.5), (taped, 4.0)],
    ids=["branchy", "branchy-else", "taped"],
)
def test_each_chunk_is_computed_once_across_the_tests_and_the_final_compute(f, t):
    """The tests compute the graph up to them, the final ``dask.compute`` the rest: with the live
    values persisted before each test, each tanh runs once on each of the 4 chunks. Without (the
    numpy code run on dask arrays), the final compute runs them again: the count sees the
    difference."""
    w, x = _branchy_args(1)
    vg = sg.value_and_grad(f, wrt=(0, 1))
    with tanh_runs() as runs:
        want_value, want = vg(w, x, t)
    applied = len(runs)  # how many tanh the forward applies (one numpy array each)
    lazy = (da.from_array(w), da.from_array(x, chunks=(10, 3)), t)
    with tanh_runs() as runs:
        value, grads = dask.compute(*vg(*lazy))
    assert applied and len(runs) == 4 * applied, (applied, len(runs))
    assert _close(value, want_value) and all(_close(g, h) for g, h in zip(grads, want))

    plain = vg._current(sg.api.signature_of(lazy))  # the numpy code: persists nothing
    assert "persist_live" not in plain.source
    with tanh_runs() as runs:
        dask.compute(*plain.function(*lazy))
    assert len(runs) > 4 * applied, (applied, len(runs))


def test_the_numpy_code_is_untouched_and_the_lazy_code_persists_no_argument():
    w, x = _branchy_args(2)
    vg = sg.value_and_grad(branchy, wrt=(0, 1))
    assert "persist" not in sg.source(vg, w, x, 0.3)
    lazy_code = sg.source(vg, da.from_array(w), da.from_array(x, chunks=(10, 3)), 0.3)
    persists = [line for line in lazy_code.splitlines() if "persist_live(" in line]
    assert len(persists) == 4  # the two ifs, the while before its first test and at its body's end
    for line in persists:
        targets = line.split("=")[0].replace(",", " ").split()
        assert targets and not {"w", "x", "t"} & set(targets), line


@given(
    seed=st.integers(0, 2**16),
    t=st.floats(-2.0, 2.0),
    chunk=st.sampled_from([7, 10, 40]),
    f=st.sampled_from([branchy, taped]),
)
@hypothesis.settings(sg.testing.settings, max_examples=15)
def test_persisted_lazy_gradients_match_finite_differences(seed, t, chunk, f):
    """Whatever branch and trip count the data pick, the lazy gradient (persisting before each
    test) equals central finite differences of the plain function on numpy arrays."""
    w, x = _branchy_args(seed)
    t = t + 3.0 if f is taped else t
    vg = sg.value_and_grad(f, wrt=(0, 1))
    value, grads = dask.compute(*vg(da.from_array(w), da.from_array(x, chunks=(chunk, 3)), t))
    assert _close(value, f(w, x, t))
    for i, g in enumerate(grads):
        fd = oracle.fd_grad(f, (w, x, t), i)
        assert_close(g, fd, rtol=1e-5, atol=1e-6)


def test_the_seed_is_no_host_array_the_size_of_the_data():
    """The gradient's graph holds no host array as large as the data: the loss seed is a 0-d
    array of the data's type, broadcast lazily."""
    import cloudpickle

    x = da.random.default_rng(0).normal(size=(100_000, 8), chunks=(25_000, 8))
    g = sg.grad(lambda w, x: np.mean(np.tanh(x @ w) ** 2), wrt=1)(np.full((8, 2), 0.1), x)
    assert isinstance(g, da.Array) and g.chunks == x.chunks
    assert len(cloudpickle.dumps(dict(g.__dask_graph__()))) < x.nbytes / 100


def test_creation_helpers_follow_the_array_type():
    from sourcegrad.runtime import LikeModule, array_module, zeros_like

    x = da.ones((4, 3), chunks=2)
    xp = array_module(x)
    assert isinstance(xp, LikeModule)
    assert isinstance(xp.asarray(1.0), da.Array) and isinstance(xp.zeros(3), da.Array)
    assert isinstance(zeros_like(x), da.Array)
    assert array_module(np.ones(3)) is np


def scaled(x, s):
    return np.sum(np.tanh(x * s))


def test_a_float_arguments_gradient_stays_lazy():
    """A Python float's gradient is a float on numpy; on dask a 0-d dask array (float() computes)."""
    x = np.linspace(0.1, 1.0, 6)
    want = sg.grad(scaled, wrt=(0, 1))(x, 0.7)
    with track_computes() as computes:
        got = sg.grad(scaled, wrt=(0, 1))(da.from_array(x, chunks=3), 0.7)
    assert not computes and isinstance(got[1], da.Array) and got[1].shape == ()
    assert (
        isinstance(want[1], float)
        and _close(got[1].compute(), want[1])
        and _close(got[0].compute(), want[0])
    )


def test_unknown_chunk_sizes_are_refused_not_guessed():
    x = da.random.default_rng(0).normal(size=(200, 3), chunks=(50, 3))
    x = x[x[:, 0] > 0]  # rows of unknown count
    for loss in (lambda w, x: np.mean(x @ w), lambda w, x: np.sum(np.tanh(x @ w))):
        with pytest.raises(sg.errors.UnsupportedValueError, match="compute_chunk_sizes"):
            sg.grad(loss)(np.ones((3, 2)), x)


def test_permutation_adjoints_gather_on_lazy_arrays():
    """np.partition's adjoint scatters into a fresh array on numpy; on dask, whose fallback for
    np.put_along_axis would write into a computed copy, it gathers instead (never a zero gradient)."""
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    f = lambda x, w: np.sum(np.partition(x, 2, axis=1) * w)  # noqa: E731
    want = sg.grad(f)(x, w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        got = sg.grad(f)(da.from_array(x, chunks=2), da.from_array(w, chunks=2))
    assert np.allclose(to_host(got), want, rtol=1e-12, atol=0)


# ---- data-parallel mode ------------------------------------------------------------------------------


def sum_loss(w, b, x, y):
    h = np.tanh(x @ w + b)
    return 0.5 * np.sum((h - y) ** 2)


def mean_loss(params, x, y):
    h = np.maximum(x @ params["w1"] + params["b1"], 0.0)
    out = h @ params["w2"]
    return np.mean((out - y) ** 2) + 1e-3 * np.sum(params["w1"] ** 2)  # a mean plus a regularizer


def xent_loss(w, x, labels):
    z = x @ w
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    n = x.shape[0]
    return -np.sum(logp[np.arange(n), labels]) / n  # a mean written by hand


def _dp_data(seed=0, n=1000):
    rng = np.random.default_rng(seed)
    return dict(
        x=rng.normal(size=(n, 5)),
        y=rng.normal(size=(n, 3)),
        labels=rng.integers(0, 3, size=n),
        w=rng.normal(size=(5, 3)),
        b=rng.normal(size=3),
        params={
            "w1": rng.normal(size=(5, 4)),
            "b1": rng.normal(size=4),
            "w2": rng.normal(size=(4, 3)),
        },
    )


def _tree_close(got, want):
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(_tree_close(got[k], want[k]) for k in want)
    if isinstance(want, tuple):
        return all(_tree_close(g, w) for g, w in zip(got, want))
    return np.shape(got) == np.shape(want) and _close(got, want)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with (
            distributed.LocalCluster(
                processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as c,
        ):
            yield c


CHUNKED = [
    (sum_loss, ("w", "b", "x", "y"), (0, 1)),
    (mean_loss, ("params", "x", "y"), 0),
    (xent_loss, ("w", "x", "labels"), 0),
]


@pytest.mark.parametrize("f, names, wrt", CHUNKED, ids=[c[0].__name__ for c in CHUNKED])
def test_data_parallel_equals_numpy_on_a_cluster(client, f, names, wrt):
    from sourcegrad.dask import data_parallel

    data = _dp_data()
    args = [data[k] for k in names]
    vg = sg.value_and_grad(f, wrt=wrt)
    want_value, want = vg(*args)
    over = tuple(k for k in names if k in ("x", "y", "labels"))
    lazy = [
        da.from_array(a, chunks=(130,) + a.shape[1:]) if k in over else a
        for k, a in zip(names, args)
    ]
    value, grads = data_parallel(vg, over=over)(*lazy)
    assert isinstance(value, da.Array)  # lazy until computed
    value, grads = dask.compute(value, grads)
    assert _close(value, want_value)
    assert _tree_close(grads, want)


def test_data_parallel_on_two_worker_processes_compiles_once_per_worker():
    """The tasks pickle the gradient as its recipe (the function, by reference, and the options):
    each worker process compiles it once, from the function's source, and the results add up."""
    distributed = pytest.importorskip("distributed")
    from sourcegrad.dask import data_parallel

    data = _dp_data()
    vg = sg.value_and_grad(sum_loss, wrt=(0, 1))
    want_value, want = vg(data["w"], data["b"], data["x"], data["y"])
    x, y = (da.from_array(data[k], chunks=(130,) + data[k].shape[1:]) for k in ("x", "y"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with (
            distributed.LocalCluster(
                processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as c,
        ):
            value, grads = dask.compute(
                *data_parallel(vg, over=("x", "y"))(data["w"], data["b"], x, y)
            )
            compiled = c.run(_compiled_in_this_process)
    assert _close(value, want_value) and _tree_close(grads, want)
    assert sorted(compiled.values()) == [1, 1]


def _compiled_in_this_process():
    from sourcegrad import dask as sgdask

    return len(sgdask._COMPILED)


def test_data_parallel_grad_keeps_the_signature_and_the_structure():
    from sourcegrad.dask import data_parallel

    data = _dp_data(n=300)
    g = sg.grad(mean_loss)
    dp = data_parallel(g, over=("x", "y"))
    assert list(__import__("inspect").signature(dp).parameters) == ["params", "x", "y"]
    x, y = (da.from_array(data[k], chunks=(70,) + data[k].shape[1:]) for k in ("x", "y"))
    with track_computes() as computes:
        lazy = dp(data["params"], x=x, y=y)
    assert not computes
    assert set(lazy) == {"w1", "b1", "w2"} and all(isinstance(v, da.Array) for v in lazy.values())
    (got,) = dask.compute(lazy, scheduler="sync")
    assert _tree_close(got, g(data["params"], data["x"], data["y"]))


def test_rows_split_differently_are_rechunked_together():
    from sourcegrad.dask import data_parallel

    data = _dp_data(n=300)
    x = da.from_array(data["x"], chunks=(100, 2))  # columns split too
    y = da.from_array(data["y"], chunks=(60, 3))
    g = data_parallel(sg.grad(sum_loss, wrt=(0, 1)), over=("x", "y"))(data["w"], data["b"], x, y)
    want = sg.grad(sum_loss, wrt=(0, 1))(data["w"], data["b"], data["x"], data["y"])
    assert _tree_close(dask.compute(g, scheduler="sync")[0], want)


def test_a_python_float_argument_is_passed_whole_to_every_chunk():
    """A float argument (a bias ``b``) goes to each task as it is, and its gradient adds up."""
    from sourcegrad.dask import data_parallel

    data = _dp_data(n=300)
    x, y = da.from_array(data["x"], chunks=(70, 5)), da.from_array(data["y"], chunks=(70, 3))
    vg = data_parallel(sg.value_and_grad(sum_loss, wrt=(0, 1)), over=("x", "y"))
    got = dask.compute(*vg(data["w"], 0.3, x, y), scheduler="sync")
    want = sg.value_and_grad(sum_loss, wrt=(0, 1))(data["w"], 0.3, data["x"], data["y"])
    assert _close(got[0], want[0]) and _tree_close(got[1], want[1])


def test_the_recipe_pickles_and_compiles_once_per_process():
    from sourcegrad import dask as sgdask

    recipe = sgdask._Recipe(sum_loss, (0, 1), 8, False, True)
    again = pickle.loads(pickle.dumps(recipe))
    assert again.key() == recipe.key()
    assert sgdask._compiled(again) is sgdask._compiled(recipe)


# ---- what the batch-axis analysis accepts: per-row work in its forms --------------------------------


def per_row_indexing(w, x, y):
    a = x[:, 0] * w[0, 0]
    b = x[:, None, :] * w[:, 0]
    c = x[..., 1]
    d = (x @ w)[:, 1:3]
    e = (x @ w).T[0]  # a column of x @ w: one entry per row
    return np.sum(a) + np.sum(b) + np.sum(c) + np.sum(d * y[:, :2]) + np.sum(e)


def masked_and_looped(w, x, y):
    h = (x @ w).copy()
    h[h < 0] = 0.0
    total = 0.0
    for i in range(2):
        total = total + np.sum(h[:, i] * y[:, i])
    k = 0
    while k < 2:
        h = np.sin(h)
        k += 1
    return total + np.sum(h)


def reduced_per_row(w, x, y):
    z = np.tanh(x @ w)
    s = np.sum(z, axis=1)
    m = np.mean(z, axis=-1, keepdims=True)
    return np.mean((s[:, None] - m) ** 2 + y) + 0.01 * np.sum(w**2)


def gathers(w, x, y):
    ids = np.argmax(y, axis=1)
    picked = np.take_along_axis(x @ w, ids[:, None], axis=1)
    emb = w[ids]  # an embedding lookup: a row of w per row of x
    return np.sum(picked) + np.sum(emb * x) + np.sum(w @ x.T)


ACCEPTED = [per_row_indexing, masked_and_looped, reduced_per_row, gathers]


@pytest.mark.parametrize("f", ACCEPTED, ids=lambda f: f.__name__)
def test_per_row_work_is_split_exactly(f):
    from sourcegrad.dask import data_parallel

    data = _dp_data(n=200)
    w, x, y = data["w"][:3], data["x"][:, :3], data["y"]  # w square: rows of x @ w index w again
    lazy = [da.from_array(a, chunks=(45,) + a.shape[1:]) for a in (x, y)]
    (got,) = dask.compute(data_parallel(sg.grad(f), over=("x", "y"))(w, *lazy), scheduler="sync")
    assert _tree_close(got, sg.grad(f)(w, x, y))


# ---- refusals: losses that mix rows ----------------------------------------------------------------


def batch_norm(w, x, y):
    z = x @ w
    z = (z - np.mean(z, axis=0)) / np.std(z, axis=0)  # REFUSED: batch statistics
    return np.sum((z - y) ** 2)


def gram(w, x, y):
    g = x.T @ x  # REFUSED: rows with rows
    return np.sum(g * (w @ w.T)) + np.sum(y)


def sorted_rows(w, x, y):
    z = np.sort(x @ w, axis=0)  # REFUSED: sorts along the rows
    return np.sum(z * y)


def cumulative(w, x, y):
    z = np.cumsum(x @ w, axis=0)  # REFUSED: runs along the rows
    return np.sum(z * y)


def branch_on_rows(w, x, y):
    z = x @ w
    if np.sum(z) > 0:  # REFUSED: each chunk could branch differently
        z = z * 2.0
    return np.sum((z - y) ** 2)


def sum_plus_regularizer(w, x, y):
    return np.sum((x @ w - y) ** 2) + np.sum(w**2)  # REFUSED: each chunk would add the regularizer


def first_row(w, x, y):
    return np.sum((x[0] @ w - y[0]) ** 2)  # REFUSED: picks a row


def per_row_value(w, x, y):
    return (x @ w - y) ** 2  # REFUSED: not reduced over the rows


REFUSED = [
    batch_norm,
    gram,
    sorted_rows,
    cumulative,
    branch_on_rows,
    sum_plus_regularizer,
    first_row,
]


def _line_of(f, marker="REFUSED"):
    import inspect

    lines, start = inspect.getsourcelines(f)
    return start + next(i for i, line in enumerate(lines) if marker in line)


@pytest.mark.parametrize("f", REFUSED, ids=lambda f: f.__name__)
def test_a_loss_that_mixes_rows_is_refused_at_its_line(f):
    from sourcegrad.dask import RowMixingError, data_parallel

    data = _dp_data(n=200)
    x, y = (da.from_array(data[k], chunks=(50,) + data[k].shape[1:]) for k in ("x", "y"))
    dp = data_parallel(sg.grad(f), over=("x", "y"))
    with pytest.raises(RowMixingError) as info:
        dp(data["w"], x, y)
    assert isinstance(info.value, sg.SourcegradError)
    assert re.search(rf"{re.escape(HERE)}\", line {_line_of(f)}\b", str(info.value)), str(
        info.value
    )


def test_a_loss_left_per_row_is_refused():
    from sourcegrad.dask import RowMixingError, data_parallel

    data = _dp_data(n=200)
    x, y = (da.from_array(data[k], chunks=(50,) + data[k].shape[1:]) for k in ("x", "y"))
    with pytest.raises(RowMixingError, match="value per row"):
        data_parallel(sg.grad(per_row_value), over=("x", "y"))(data["w"], x, y)


def test_data_parallel_refuses_what_it_cannot_split():
    from sourcegrad.dask import data_parallel

    data = _dp_data(n=100)
    with pytest.raises(sg.errors.UsageError, match="not parameters"):
        data_parallel(sg.grad(sum_loss), over=("rows",))
    with pytest.raises(sg.errors.UsageError, match="grad or sourcegrad.value_and_grad"):
        data_parallel(sg.vjp(sum_loss), over=("x",))
    with pytest.raises(sg.errors.UsageError, match="dask array"):
        data_parallel(sg.grad(sum_loss), over=("x", "y"))(
            data["w"], data["b"], data["x"], data["y"]
        )


# ---- lazy mode: persisting values bound in one branch -------------------------------------------


def looped(w, x, t):
    h = x @ w
    for _ in range(5):
        if np.sum(h) > t:  # computes; the branch taken binds its own temporaries and saves
            h = np.sin(h) * 1.1
        else:
            h = counted_tanh(h) + h
    return np.sum(h * h)


@pytest.mark.parametrize("t", [0.0, 100.0], ids=["mixed branches", "tanh branch"])
@pytest.mark.parametrize("unroll", [8, 0], ids=["unrolled", "taped"])
def test_values_bound_in_a_branch_are_persisted_too(t, unroll):
    """A tanh result the backward reads, bound in one branch only (it may be unbound at the next
    test: the lazy code binds it to None first), is persisted at the next test like the rest."""
    w, x = _branchy_args(3)
    vg = sg.value_and_grad(looped, wrt=(0, 1), unroll=unroll)
    with tanh_runs() as runs:
        want_value, want = vg(w, x, t)
    applied = len(runs)
    with tanh_runs() as runs:
        value, grads = dask.compute(*vg(da.from_array(w), da.from_array(x, chunks=(10, 3)), t))
    assert applied and len(runs) == 4 * applied, (applied, len(runs))
    assert _close(value, want_value) and all(_close(g, h) for g, h in zip(grads, want))
    for i, g in enumerate(grads):
        assert_close(g, oracle.fd_grad(looped, (w, x, t), i), rtol=1e-5, atol=1e-6)


# ---- data_parallel over no rows, or with empty chunks ---------------------------------------------


def squared_error_mean(w, x, y):
    return np.mean((x @ w - y) ** 2)


def squared_error_sum(w, x, y):
    return np.sum((x @ w - y) ** 2)


@pytest.mark.parametrize("f", [squared_error_mean, squared_error_sum])
@pytest.mark.parametrize("rows, chunks", [(0, (0,)), (5, (2, 0, 3)), (4, (0, 4))])
def test_data_parallel_over_no_rows_or_empty_chunks_gives_numpys_result(f, rows, chunks):
    """No rows at all: numpy's value (NaN for a mean, 0 for a sum) and gradient, never a
    ZeroDivisionError; an empty chunk among others adds nothing."""
    from sourcegrad.dask import data_parallel

    rng = np.random.default_rng(rows)
    w, x, y = rng.normal(size=3), rng.normal(size=(rows, 3)), rng.normal(size=rows)
    lazy_x = da.from_array(x, chunks=(chunks, 3))
    lazy_y = da.from_array(y, chunks=(chunks,))
    vg = data_parallel(sg.value_and_grad(f), over=("x", "y"))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value, grad = dask.compute(*vg(w, lazy_x, lazy_y), scheduler="synchronous")
        want_value, want_grad = sg.value_and_grad(f)(w, x, y)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)  # (NaN equals NaN here)
    assert_close(grad, want_grad, rtol=1e-10, atol=1e-12)
