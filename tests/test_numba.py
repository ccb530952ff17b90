"""The numba backend: the same gradients as the numpy backend and as finite differences.

Each function runs through ``backend="numba"`` twice (the first call compiles and runs beside the
numpy code; the second runs the compiled kernel alone) and is checked against the numpy backend
and central finite differences (``tests/oracle.py``). Where the numba variant does not apply, the
function keeps numpy with exactly one ``BackendWarning``: the checks below assert that the warning
comes exactly when numpy runs, and that the kernel runs where it should (the seed's programs,
elementwise rules, loops and branches).

numba compiles each specialization in a second or more, so the default run takes a representative
part of the rule table, the control-flow suite and the corpus; ``-m slow`` runs all of them.
"""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import sourcegrad as sg
from sourcegrad import api
from sourcegrad.backends import BackendWarning, _Runner

from .flow import with_sum
from .test_branches import piecewise3
from .test_loops import grow_until, loop_n, newton_sqrt, triangular, while_break, while_counter
from .test_optimize import loop_energy, while_energy
from .corpus import all_cases
from .corpus.harness import assert_tree_close, fd_tree_grad
from .oracle import assert_close, fd_grad

numba = pytest.importorskip("numba")


def run(f, args, wrt, backend="numba"):
    """``(value, gradients, ran_on_numba)`` of the second call through ``backend``."""
    vg = sg.value_and_grad(f, wrt=wrt, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vg(*args)
        value, grads = vg(*args)
    warned = [w for w in caught if issubclass(w.category, BackendWarning)]
    signature = api.signature_of(args)
    runner = vg.compiled(signature).function if signature is not None else None
    used = isinstance(runner, _Runner) and runner.use_kernel
    if backend == "numba":
        assert len(warned) == (0 if used else 1), [str(w.message) for w in warned]
    return value, grads, used


def check(f, args, wrt=0, rtol=1e-5, atol=1e-6, backend="numba"):
    """The backend's value and gradients against the numpy backend's and finite differences."""
    value, grads, used = run(f, args, wrt, backend)
    want_value, want_grads = sg.value_and_grad(f, wrt=wrt)(*args)
    assert type(value) is type(want_value)
    single = any(getattr(a, "dtype", None) == np.float32 for a in args)
    # numba and numpy round differently (numba: float64 where numpy keeps float32)
    same = 1e-4 if single else 1e-7
    assert_close(value, want_value, rtol=same, atol=same * 1e-3, what="value")
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    grads = grads if isinstance(wrt, tuple) else (grads,)
    want_grads = want_grads if isinstance(wrt, tuple) else (want_grads,)
    for i, g, w in zip(positions, grads, want_grads):
        assert type(g) is type(w)
        if isinstance(w, np.ndarray):
            assert g.shape == w.shape and g.dtype == w.dtype
        assert_tree_close(g, fd_tree_grad(f, args, i), rtol, atol, what=f"d/d argument {i}")
        assert_tree_close(
            g, w, rtol=same, atol=same * 1e-3, what=f"d/d argument {i}: numba vs numpy"
        )
    return used


# ---- the benchmarks' programs: these must run on numba ---------------------------------------------


def tanh_steps(w, x, y):
    for i in range(50):
        y = np.tanh(w * y + x)
    return np.sum(y)


def doubling(x, c):
    y = x * 2
    while np.linalg.norm(y) < 100:
        y = y * 2
    return np.sum(y * c)


def two_layer(w1, w2, x, y):
    h = x.dot(w1)
    h_relu = np.maximum(h, 0)
    y_pred = h_relu.dot(w2)
    return np.square(y_pred - y).sum()


R = np.random.default_rng(0)


@pytest.mark.parametrize(
    "f, args, wrt",
    [
        (tanh_steps, tuple(R.normal(size=8) for _ in range(3)), (0, 1)),
        (doubling, (R.normal(size=3) * 1e-3, np.array([0.1, 1.0, 0.0001])), 0),
        (
            two_layer,
            (
                R.normal(size=(5, 4)),
                R.normal(size=(4, 3)),
                R.normal(size=(6, 5)),
                R.normal(size=(6, 3)),
            ),
            (0, 1),
        ),
    ],
    ids=["small_ops", "while_loop", "two_layer"],
)
def test_benchmark_programs_run_on_numba(f, args, wrt):
    assert check(f, args, wrt)


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.1, 2.0))
def test_tanh_steps_match_finite_differences(seed, scale):
    """Values drawn anew, one shape: one numba compile for every example."""
    rng = np.random.default_rng(seed)
    args = tuple(rng.normal(size=8) * scale for _ in range(3))
    assert check(tanh_steps, args, (0, 1, 2))


def test_float32_gradients_keep_their_dtype():
    """(numba computes ``1.0 - y * y`` of a float32 ``y`` in float64, unlike numpy: where that
    makes a loop's adjoint change type, it cannot type the loop, and numpy runs it.)"""
    args = tuple(R.normal(size=8).astype(np.float32) for _ in range(3))
    check(tanh_steps, args, (0, 1), rtol=2e-3, atol=2e-3)
    check(
        two_layer,
        tuple(
            a.astype(np.float32)
            for a in (
                R.normal(size=(5, 4)),
                R.normal(size=(4, 3)),
                R.normal(size=(6, 5)),
                R.normal(size=(6, 3)),
            )
        ),
        (0, 1),
        rtol=2e-3,
        atol=2e-3,
    )


def test_each_dtype_is_checked_on_its_first_call():
    """The specialization keys on shapes; numba compiles again for new dtypes, and each new
    combination runs beside numpy first (float32 here runs on numba too: the fused loops keep
    float32 arrays float32, where numba's own ``1.0 - y * y`` made the loop's adjoint float64)."""
    df = sg.grad(tanh_steps, wrt=(0, 1), backend="numba")
    args = tuple(R.normal(size=8) for _ in range(3))
    single = tuple(a.astype(np.float32) for a in args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BackendWarning)
        for call in (args, args, single, single, args):
            gw, gx = df(*call)
            assert gw.dtype == call[0].dtype
            assert_close(
                gw,
                fd_grad(tanh_steps, [a.astype(np.float64) for a in call], 0),
                rtol=2e-3,
                atol=2e-3,
            )
    runner = df.compiled(api.signature_of(args)).function
    assert not [w for w in caught if issubclass(w.category, BackendWarning)]
    assert runner.value_types[(np.dtype(np.float64),) * 3] is np.float64
    assert runner.value_types[(np.dtype(np.float32),) * 3] is np.float32


# ---- the rule table: a representative part -------------------------------------------------------

RULES = [
    "np.tanh",
    "np.exp",
    "np.sin",
    "np.log",
    "np.sqrt",
    "np.square",
    "np.multiply",
    "np.add",
    "np.subtract",
    "np.true_divide",
    "np.maximum",
    "np.sum",
    "np.dot",
    "np.power",
    "np.mean",
    "np.abs",
]
# must run on numba (the cases of np.add and np.subtract picked broadcast: their adjoints sum over
# axes, one at a time and reshaped where numpy would keep the dimensions)
ELEMENTWISE = {
    "np.tanh",
    "np.exp",
    "np.sin",
    "np.log",
    "np.sqrt",
    "np.multiply",
    "np.add",
    "np.subtract",
}


def _rule_cases(names, every=False):
    from . import test_systematic as ts

    out = []
    for key in ts.registered():
        name = ts.source_name(key)
        if key not in ts.S.SPECS or (names is not None and name not in names):
            continue
        cases = ts.cases_of(key)
        profile = ts.fast_profile(key, cases)
        for i, dtype in profile:
            c = cases[i]
            if c.refused or c.bug or c.seeded:
                continue  # refusals come before any backend; seeded draws reset numpy's random state
            if not every and not all(
                x.form not in ("py", "scalar") and x.shape for x in c.inputs.values()
            ):
                continue  # the default run: array arguments (numbers run on numpy)
            out.append(pytest.param(key, i, np.float64, id=f"{ts.key_id(key)}-{i}"))
            if not every:
                break
    return out


def _check_rule_case(key, index, dtype):
    from . import test_systematic as ts

    case = ts.cases_of(key)[index]
    built = ts.build(key, case, dtype)
    names = tuple(case.inputs)
    _, fd = ts.oracle(built, case)
    value, grads, used = run(built.f, built.args, names)
    want_value, want_grads = sg.value_and_grad(built.f, wrt=names)(*built.args)
    rtol = ts.tolerance(case, dtype)
    assert_close(value, want_value, rtol=1e-9, atol=1e-12, what="value")
    for name, a, g, want_g, numpy_g in zip(names, built.args, grads, fd, want_grads):
        ts.check_gradient(
            a, g, np.zeros_like(want_g) if case.stops else want_g, rtol, f"d/d{name}\n{built.shown}"
        )
        assert_close(
            g, numpy_g, rtol=1e-7, atol=1e-10, what=f"d/d{name}: numba vs numpy\n{built.shown}"
        )
    return ts.source_name(key), used


@pytest.mark.parametrize("key, index, dtype", _rule_cases(RULES))
def test_rule_table_part(key, index, dtype):
    name, used = _check_rule_case(key, index, dtype)
    assert used or name not in ELEMENTWISE, f"{name} should run on numba"


@pytest.mark.slow
@pytest.mark.parametrize("key, index, dtype", _rule_cases(None, every=True))
def test_rule_table_fast_profile(key, index, dtype):
    _check_rule_case(key, index, dtype)


# ---- control flow ---------------------------------------------------------------------------------

CONTROL_FLOW = [
    ("branch, first", piecewise3, lambda r: (with_sum(1, 4, 2.0, 3.0),), 0, True),
    ("branch, middle", piecewise3, lambda r: (with_sum(3, 4, -0.5, 0.5),), 0, True),
    ("branch, last", piecewise3, lambda r: (with_sum(2, 4, -3.0, -2.0),), 0, True),
    ("for range(n)", loop_n, lambda r: (r.normal(size=4), 5), 0, True),  # a tape per saved value
    ("for range(0)", loop_n, lambda r: (r.normal(size=4), 0), 0, True),
    ("while, data-dependent", grow_until, lambda r: (r.normal(size=3) * 0.5, 10.0), 0, True),
    ("while, counter", while_counter, lambda r: (r.normal(size=3), 4), 0, True),
    ("while, newton", newton_sqrt, lambda r: (r.uniform(0.1, 4.0, size=4),), 0, True),
    ("while, break", while_break, lambda r: (r.normal(size=3) * 0.3 + 0.1,), 0, None),
    ("nested, triangular", triangular, lambda r: (r.normal(size=4),), 0, None),
    # h * h, read for its shape alone, has no tape: the backward reads the last iteration's
    (
        "for, a shape read",
        loop_energy,
        lambda r: (r.normal(size=(4, 3)), r.normal(size=3)),
        (0, 1),
        True,
    ),
]


@pytest.mark.parametrize(
    "f, make, wrt, on_numba", [pytest.param(*c[1:], id=c[0]) for c in CONTROL_FLOW]
)
def test_control_flow(f, make, wrt, on_numba):
    used = check(f, make(np.random.default_rng(0)), wrt)
    assert on_numba is None or used == on_numba


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 6))
def test_loop_tapes_match_finite_differences(seed, n):
    """A loop saving an array and a number: each on a tape of its own (one compile: n is an int)."""
    assert check(loop_n, (np.random.default_rng(seed).normal(size=4), n), 0)


@pytest.mark.slow
@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 4))
def test_values_read_for_a_known_shape_need_no_tape(seed, n):
    """``t * t``, read for its shape alone, is not saved (``test_optimize``): the kernel reads the
    value the loop's last iteration left, which no iteration reads when there is none."""
    rng = np.random.default_rng(seed)
    assert check(while_energy, (rng.normal(size=3) * 0.5, rng.normal(size=3) * 0.5, n), (0, 1))


# ---- the corpus -----------------------------------------------------------------------------------

CORPUS_PART = [
    "rnn.elman_last_state",
    "attention.logsumexp_loop",
    "piecewise.huber_loop",
    "solvers.newton_cube_root",
    "polynomials.horner",
    "scans.exponential_moving_average",
    "filters.kalman_1d",
    "masked.masked_mse",
]


def _corpus(ids=None):
    return [pytest.param(c, id=c.id) for c in all_cases() if ids is None or c.id in ids]


def _check_corpus_case(case):
    args = case.make(np.random.default_rng(0))
    wrt = case.wrt if isinstance(case.wrt, tuple) else case.wrt
    check(case.fn, args, wrt, case.rtol, case.atol)


@pytest.mark.parametrize("case", _corpus(CORPUS_PART))
def test_corpus_part(case):
    _check_corpus_case(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", _corpus())
def test_corpus_whole(case):
    _check_corpus_case(case)


# ---- what keeps numpy, and says so once --------------------------------------------------------------

GAIN = 1.5


def reads_a_global(x):
    return np.sum(np.sin(x) * GAIN)


def test_a_captured_float_keeps_numpy_with_one_warning():
    df = sg.grad(reads_a_global, backend="numba")
    x = R.normal(size=3)
    with pytest.warns(BackendWarning, match="GAIN"):
        df(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendWarning)
        assert_close(df(x), fd_grad(reads_a_global, (x,), 0))
        df(R.normal(size=4))  # another signature: no second warning


def test_a_closure_float_keeps_numpy():
    def make(scale):
        def f(x):
            return np.sum(np.tanh(x) * scale)

        return f

    assert not check(make(2.0), (R.normal(size=3),))  # (check asserts the one warning)


TRIPS = 3


def repeated_sin(x):
    y = x
    for i in range(TRIPS):
        y = np.sin(y)
    return np.sum(y)


def test_an_integer_the_compile_decided_from_is_guarded():
    """numba freezes ``TRIPS``; the guard sees it rebound and compiles again."""
    global TRIPS
    df = sg.grad(repeated_sin, backend="numba")
    x = R.normal(size=3)
    df(x)
    df(x)
    try:
        TRIPS = 5
        assert_close(df(x), fd_grad(repeated_sin, (x,), 0))
        assert_close(df(x), fd_grad(repeated_sin, (x,), 0))
    finally:
        TRIPS = 3


def entry_times(x, i):
    return np.sum(x[i] * x)


def test_an_index_out_of_bounds_raises_as_in_numpy():
    df = sg.grad(entry_times, backend="numba")
    x = R.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendWarning)
        assert_close(df(x, 1), fd_grad(entry_times, (x, 1), 0))
        with pytest.raises(IndexError):
            df(x, 7)


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda f: sg.vjp(f, backend="numba"), "vjp"),
        (lambda f: sg.grad(f, specialize=False, backend="numba"), "specialized"),
    ],
)
def test_what_the_backend_does_not_compile_says_why(make, reason):
    g = make(tanh_steps)
    with pytest.warns(BackendWarning, match=reason):
        g(*(R.normal(size=3) for _ in range(3)))


# ---- forward mode ---------------------------------------------------------------------------------


def run_jvp(f, args, tangent, wrt=0, backend="numba"):
    """``(value, tangent, ran_on_numba, warnings)`` of the second call through ``backend``."""
    jf = sg.jvp(f, wrt=wrt, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jf(*args, tangent)
        value, t = jf(*args, tangent)
    warned = [str(w.message) for w in caught if issubclass(w.category, BackendWarning)]
    return value, t, jf.compiled().function.use_kernel, warned


def check_jvp(f, args, wrt=0, rtol=1e-5, atol=1e-6, backend="numba"):
    """The backend's value and tangent against numpy's and central finite differences (the
    gradient's dot with the tangent), the value's type kept."""
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    tangents = tuple(np.random.default_rng(1).normal(size=np.shape(args[i])) for i in positions)
    tangent = tangents if isinstance(wrt, tuple) else tangents[0]
    value, t, used, warned = run_jvp(f, args, tangent, wrt, backend)
    want_value, want_t = sg.jvp(f, wrt=wrt)(*args, tangent)
    assert type(value) is type(want_value) and type(t) is type(want_t)
    assert len(warned) == (0 if used or backend == "auto" else 1), warned
    assert_close(value, want_value, rtol=1e-7, atol=1e-10, what="value")
    assert_close(t, want_t, rtol=1e-7, atol=1e-10, what="tangent: numba vs numpy")
    assert_close(t, fd_directional(f, args, positions, tangents), rtol, atol, what="tangent")
    return used


def fd_directional(f, args, positions, tangents, h=1e-6):
    """The derivative of ``f`` at ``args`` along ``tangents`` by central differences."""

    def at(sign):
        moved = list(args)
        for i, d in zip(positions, tangents):
            x = np.asarray(args[i], dtype=np.float64) + sign * h * d
            moved[i] = float(x) if isinstance(args[i], float) else x
        return np.asarray(f(*moved), dtype=np.float64)

    return (at(1.0) - at(-1.0)) / (2 * h)


def tanh_of_bias(x, b):
    return np.tanh(x + b)  # an array value, and a tangent of b broadcast (expand)


@pytest.mark.parametrize(
    "f, args, wrt",
    [
        (tanh_steps, tuple(R.normal(size=8) for _ in range(3)), (0, 1)),
        (doubling, (R.normal(size=3) * 1e-3, np.array([0.1, 1.0, 0.0001])), 0),
        (tanh_of_bias, (R.normal(size=(3, 4)), R.normal(size=4)), (0, 1)),
        (tanh_of_bias, (R.normal(size=4), 0.5), 1),
    ],
    ids=["small_ops", "while_loop", "array value", "float bias"],
)
def test_jvp_runs_on_numba(f, args, wrt):
    assert check_jvp(f, args, wrt)


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.1, 2.0))
def test_jvp_matches_finite_differences(seed, scale):
    """Values drawn anew, one shape: one numba compile for every example."""
    rng = np.random.default_rng(seed)
    assert check_jvp(tanh_steps, tuple(rng.normal(size=8) * scale for _ in range(3)), (0, 1, 2))


def test_jvp_checks_each_new_shape_against_numpy():
    """Forward code is one code for every shape: each new shape and dtype runs beside numpy first."""
    jf = sg.jvp(tanh_of_bias, wrt=1, backend="numba")
    for n in (3, 5, 3):
        x, b = R.normal(size=(2, n)), R.normal(size=n)
        _, t = jf(x, b, np.ones(n))
        assert_close(t, 1.0 - np.tanh(x + b) ** 2)
    assert len(jf.compiled().function.output_types) == 2


def test_jvp_keeps_numpy_where_numba_cannot_type_it_and_says_why():
    args = tuple(R.normal(size=s) for s in ((5, 4), (4, 3), (6, 5), (6, 3)))
    assert not check_jvp(two_layer, args)  # (check_jvp asserts the one warning)
    _, _, _, warned = run_jvp(two_layer, args, np.ones((5, 4)))
    assert "extremum_tangent" in warned[0]


def test_jvp_of_a_list_argument_keeps_numpy_and_says_so():
    def f(xs, w):
        return np.tanh(xs[0] * w)

    jf = sg.jvp(f, wrt=1, backend="numba")
    with pytest.warns(BackendWarning, match="container"):
        _, t = jf([R.normal(size=3)], np.ones(3), np.ones(3))
    assert t.shape == (3,)


def test_jvp_auto_is_never_wrong():
    check_jvp(tanh_steps, tuple(R.normal(size=8) for _ in range(3)), (0, 1), backend="auto")


# ---- Python float arguments -----------------------------------------------------------------------


def scaled_tanh(s, x):
    return np.sum(np.tanh(s * x))


def scaled_loop(x, s):
    y = x
    for i in range(12):
        y = y * s + 0.1
    return np.sum(y * y)


@pytest.mark.slow
@settings(max_examples=5, deadline=None)
@given(st.floats(-1.5, 1.5), st.sampled_from([0, (0,), (0, 1), 1]))
@example(1.5, 0)
def test_a_float_argument_is_differentiated_on_numba(s, wrt):
    """A Python float's gradient is a Python float, computed by the kernel (no fallback). At
    ``x`` symmetric about 0, d/ds is a sum cancelling to zero: rounding noise in numpy and in
    numba alike, which the first-call check once judged a relative error of 1 and fell back."""
    x = np.linspace(-1.0, 1.0, 5)
    assert check(scaled_tanh, (s, x), wrt)
    assert check(
        scaled_loop,
        (x, 0.5 + s / 4),
        tuple(1 - w for w in wrt) if isinstance(wrt, tuple) else 1 - wrt,
    )


def test_a_container_argument_keeps_numpy():
    def f(p, x):
        return np.sum(np.tanh(p["w"] * x))

    with pytest.warns(BackendWarning, match="container"):
        g = sg.grad(f, backend="numba")({"w": R.normal(size=3)}, R.normal(size=3))
    assert set(g) == {"w"}


def test_an_unknown_backend_is_refused():
    with pytest.raises(sg.SourcegradError, match="backend"):
        sg.grad(tanh_steps, backend="jax")


def test_auto_is_never_wrong():
    for f, args, wrt in [
        (tanh_steps, tuple(R.normal(size=8) for _ in range(3)), (0, 1)),
        (
            two_layer,
            (
                R.normal(size=(5, 4)),
                R.normal(size=(4, 3)),
                R.normal(size=(6, 5)),
                R.normal(size=(6, 3)),
            ),
            (0, 1),
        ),
    ]:
        check(f, args, wrt, backend="auto")


def test_without_numba_the_backend_keeps_numpy_and_says_so():
    """``sourcegrad.runtime`` and ``sourcegrad`` import without numba; ``backend="numba"`` then
    warns once and runs numpy."""
    code = (
        "import sys, warnings; sys.modules['numba'] = None; import numpy as np; import sourcegrad as sg; "
        "from tests.test_call_path import scaled_sum; warnings.simplefilter('error'); "
        "df = sg.grad(scaled_sum, backend='numba')\n"
        "try:\n    df(np.ones(2), np.ones(2))\nexcept sg.backends.BackendWarning as w:\n    print(w)\n"
        "warnings.simplefilter('ignore'); print(df(np.zeros(2), np.ones(2)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    ).stdout
    assert "numba is not installed" in out and out.strip().endswith("[2. 2.]"), out


def tanh_mean(w, x):
    return np.mean(np.tanh(w * x) * x)


def test_a_mean_loss_folds_its_seed_on_numba():
    """The seed 1.0 folded into a mean's rule (``seed_like(x, mean=True)``) compiles with numba."""
    assert check(tanh_mean, (R.normal(size=(3, 4)), R.normal(size=(3, 4))), 0)


# ---- fused elementwise loops (transforms/fusion.py) ----------------------------------------------


def fused_loops(source):
    """How many fused loops the numba variant's source has."""
    return source.count("fused_empty(")


def chain(w, x, y):
    for i in range(10):
        y = np.sin(w * y) * 0.3 + np.exp(-x * x) * 0.5
    return np.sum(y * y)


def relu_square(x, w):
    a = np.maximum(x * w, 0.0)
    b = (a - x) ** 2
    return np.sum(np.cos(b) * w)


def grid(x, w):
    u = np.tanh(x * w + 1.0)
    v = u * u - np.square(x)
    return np.sum(v * w)


def sqrt_log(x, w):
    a = x * x + 1.0
    b = np.sqrt(a) * np.log(a) - w / 4.0
    return np.sum(np.sin(b) * w)


ELEMENTWISE = [
    (tanh_steps, ((8,), (8,), (8,)), (0, 1, 2)),
    (chain, ((5,), (5,), (5,)), (0, 1, 2)),
    (relu_square, ((7,), (7,)), (0, 1)),
    (grid, ((3, 4), (3, 4)), (0, 1)),
    (sqrt_log, ((2, 3, 2), (2, 3, 2)), (0, 1)),
]


def test_elementwise_statements_become_one_loop():
    """small_ops' forward step and its backward step: one loop each over the 8 entries."""
    args = tuple(R.normal(size=8) for _ in range(3))
    df = sg.grad(tanh_steps, wrt=(0, 1), backend="numba")
    df(*args)
    source = sg.source(df, *args)
    assert fused_loops(source) == 2, source
    assert "np.tanh(" in source and "range(8)" in source


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(st.sampled_from(range(len(ELEMENTWISE))), st.integers(0, 2**32 - 1), st.floats(0.1, 1.5))
def test_fused_programs_match_finite_differences(which, seed, scale):
    f, shapes, wrt = ELEMENTWISE[which]
    rng = np.random.default_rng(seed)
    args = tuple(rng.normal(size=s) * scale for s in shapes)
    assert check(f, args, wrt, rtol=1e-4, atol=1e-5)
    df = sg.grad(f, wrt=wrt, backend="numba")
    assert fused_loops(sg.source(df, *args)) >= 1


def reduced_between(x, w):
    a = x * w
    s = np.sum(a)
    b = a * s
    return np.sum(b)


def broadcast_between(x, b):
    a = x * 2.0
    c = a + b
    return np.sum(c * c)


@pytest.mark.parametrize(
    "f, args",
    [
        (reduced_between, (R.normal(size=6), R.normal(size=6))),
        (broadcast_between, (R.normal(size=(3, 4)), R.normal(size=4))),
    ],
    ids=["reduction", "broadcast"],
)
def test_a_reduction_or_broadcast_ends_a_run(f, args):
    df = sg.grad(f, wrt=(0, 1), backend="numba")
    df(*args)
    source = sg.source(df, *args)
    assert fused_loops(source) == 0, source
    assert check(f, args, (0, 1))


# ---- preallocated tapes and outputs written in place (reverse_tape.py, fusion.py) ----------------


def saved_steps(w, x, n):
    """An array and a number saved on each trip of a loop whose trips are known before it."""
    y = x
    s = 0.5
    for i in range(n):
        y = np.sin(w * y) + x
        s = s * np.cos(s) + np.sum(y) * 0.1
    return np.sum(y) * s


def nested_steps(w, x, n):
    """An inner loop's tape, one per trip of the outer loop (its trips vary)."""
    y = x
    for i in range(n):
        z = y * 1.0
        for j in range(i):
            z = np.tanh(w * z + x)
        y = y * 0.5 + z * 0.5
    return np.sum(y * y)


def branch_steps(w, x, n):
    """A branch's flag, and a variable saved on either side of it."""
    y = x
    for i in range(n):
        if np.sum(y) > 0.0:
            y = np.tanh(w * y)
        else:
            y = np.sin(y) * w
    return np.sum(y)


def loop_in_branch(w, x, n):
    """A loop's arrays allocated on one side of a branch, read back under the same test."""
    y = x
    if np.sum(x) > 0.0:
        for i in range(n):
            y = np.tanh(w * y + x)
    return np.sum(y)


def breaking_steps(w, x, n):
    """A loop that may stop early: rows for the trips that ran."""
    y = x
    for i in range(n):
        y = np.tanh(w * y + x)
        if np.sum(y * y) > 2.0:
            break
    return np.sum(y)


def for_in_while(w, x, n):
    """A loop with known trips inside a while loop, whose trips are not known before it."""
    y = x
    k = 0
    while k < 2:
        for i in range(n):
            y = np.sin(w * y) + x * 0.5
        k = k + 1
    return np.sum(y)


def kept_alias(w, x, n):
    """A loop's output kept under another name past the next trip: it gets no buffer."""
    y = x * 1.0
    prev = y
    for i in range(n):
        prev = y
        y = np.tanh(w * y + x)
    return np.sum(y * prev)


KNOWN_TRIPS = [
    saved_steps,
    nested_steps,
    branch_steps,
    loop_in_branch,
    breaking_steps,
    for_in_while,
    kept_alias,
]


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(
    st.sampled_from(range(len(KNOWN_TRIPS))),
    st.sampled_from([(5,), (2, 3)]),
    st.integers(0, 2**32 - 1),
    st.integers(0, 5),
)
@example(0, (5,), 0, 0)  # no trips
@example(0, (2, 3), 1, 3)  # rows of matrices
@example(4, (5,), 1, 5)  # break
def test_known_trips_match_finite_differences(which, shape, seed, n):
    f = KNOWN_TRIPS[which]
    rng = np.random.default_rng(seed)
    args = (rng.normal(size=shape) * 0.7, rng.normal(size=shape) * 0.7, n)
    assert check(f, args, (0, 1), rtol=1e-4, atol=1e-5)


def forward_of(source):
    return source[: source.index("check_scalar(")]


def test_small_ops_tape_is_an_array_and_its_steps_write_in_place():
    """small_ops' saved state goes into one array of 50 rows, and the forward and backward steps
    each write into a buffer allocated once."""
    args = tuple(R.normal(size=8) for _ in range(3))
    df = sg.grad(tanh_steps, wrt=(0, 1), backend="numba")
    df(*args)
    source = sg.source(df, *args)
    assert source.count("tape_array(") == 1 and ".append(" not in source, source
    assert source.count("fused_reuse(") == 2, source


@pytest.mark.parametrize(
    "f, arrays, lists, reused_forward",
    [
        (branch_steps, 3, 1, 0),  # the flag and y on either side (sin's operand: maybe None)
        (for_in_while, 1, 3, 1),  # sin's operand, the range and the array of each trip
        (kept_alias, 1, 0, 0),
    ],
    ids=["branch", "for in while", "kept alias"],
)
def test_what_goes_into_arrays(f, arrays, lists, reused_forward):
    args = (R.normal(size=5), R.normal(size=5), 3)
    df = sg.grad(f, wrt=(0, 1), backend="numba")
    df(*args)
    source = sg.source(df, *args)
    assert source.count("tape_array(") == arrays, source
    assert source.count(" = []") == lists, source
    assert forward_of(source).count("fused_reuse(") == reused_forward, source


def test_a_strided_argument_is_saved_entry_by_entry():
    """A transposed argument (numba's layout "A") is copied into its tape's rows by index."""
    rng = np.random.default_rng(3)
    args = (rng.normal(size=(2, 3)) * 0.7, rng.normal(size=(3, 2)).T * 0.7, 4)
    assert not args[1].flags.c_contiguous
    assert check(saved_steps, args, (0, 1), rtol=1e-4, atol=1e-5)


# ---- a buffer of integers: its writes carry no gradient, decided when numba types the code ------
def integer_buffer(v):
    buf = np.zeros(4, dtype=np.int64)
    buf[1] = v[1] * 10
    b = np.zeros(4)
    b[2] = v[2]
    return np.sum(buf * v) + np.sum(b * v)


def test_an_integer_buffer_matches_finite_differences_on_numba():
    assert check(integer_buffer, (np.array([0.537, 1.21, 0.734, 2.345]),))  # on numba


# ---- Python integers: numba's int64 is not Python's int -------------------------------------------


def scaled_by_power(x, k):
    return np.sum(np.sin(x)) * 2**k


def scaled_by_cube(x, k):
    return np.sum(x * x) * (k * k * k)


def jvp_by_power(x, k):
    return np.sin(x) * 2**k


@settings(max_examples=12, deadline=None)
@given(
    f=st.sampled_from([scaled_by_power, scaled_by_cube]),
    ks=st.lists(
        st.one_of(st.integers(-6, 6), st.integers(2**20, 2**40), st.integers(-(2**40), -(2**20))),
        min_size=2,
        max_size=4,
    ),
)
def test_each_python_integer_is_checked_before_numba_runs_it(f, ks):
    """A later call with another integer: ``2 ** -2`` is 0.25 in Python (0 in int64), a large
    ``k * k * k`` is exact in Python (wraps around in int64). Each value of every call is Python's,
    whichever integer the first call had."""
    x = np.array([0.3, -0.7, 1.1])
    vg = sg.value_and_grad(f, backend="numba")
    jf = sg.jvp(jvp_by_power, backend="numba")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BackendWarning)
        for k in ks:
            if f is scaled_by_power and abs(k) > 60:
                k = k % 61 - 30
            value, g = vg(x, k)
            assert value == pytest.approx(f(x, k), rel=1e-12)
            assert_close(g, fd_grad(f, (x, k), 0))
            if abs(k) <= 60:
                _, t = jf(x, k, np.ones(3))
                assert_close(t, np.cos(x) * 2.0**k)
