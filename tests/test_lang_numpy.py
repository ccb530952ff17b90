"""numpy as statistical and numerical code writes it: in-place idioms on buffers the function
allocated, predicates that carry no gradient, and scipy beyond ``scipy.special``.

- **In place**: ``np.fill_diagonal(a, v)`` is ``a = filled_diagonal(a, v)``; ``f(..., out=buf)``
  of a numpy function is ``buf[...] = f(...)`` whose value is ``buf``; a write through a view of
  a local array (``row = acc[i]; row += f``, ``for row in acc: row *= s``) is a write into the
  array (``transforms/views.py``). A write the gradient could not follow is refused at its line
  (``transforms/aliasing.py``), never silently wrong.
- **Predicates** (``np.isreal``, ``np.isscalar``, ``np.argpartition``, ...) run as constants,
  also on values that carry a gradient.
- **scipy**: ``scipy.stats`` distributions (``norm.logpdf(x, loc, scale)``, frozen
  ``norm(loc, scale).logpdf(x)``, ``multivariate_normal.logpdf``, ``t``, ``gamma``, ``beta``,
  ``expon``, ``laplace``, ``poisson``), ``scipy.linalg`` (``solve_triangular``, ``cholesky``,
  ``cho_factor``/``cho_solve``, ``expm``), ``scipy.signal.lfilter``; and ``np.cov``'s weights.

Every gradient is checked against central finite differences (``tests/oracle.py``), in the code
specialized to the arguments' shapes and in the general code. The rule table
(``tests/test_rules.py``, ``tests/systematic_specs.py``) checks each new rule over many shapes.
"""

import textwrap

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.transforms import ir
from sourcegrad.transforms import rules as R
from sourcegrad.transforms.normalize import Normalizer
from sourcegrad.transforms.source import get_source

from .oracle import assert_close, fd_grad

try:  # (imported at module level: a differentiated function reads them as globals)
    import scipy.stats
    from scipy import linalg as sla, signal as ssig, stats
except ImportError:  # the tests of scipy's functions skip (pytest.importorskip)
    scipy = sla = ssig = stats = None

RNG = np.random.default_rng(20240611)
W3 = RNG.normal(size=3)
W33 = RNG.normal(size=(3, 3))
W43 = RNG.normal(size=(4, 3))


def assert_gradients(f, *args, wrt=0, rtol=1e-6):
    """``f``'s value and gradients match ``f`` and finite differences, specialized and not."""
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    want = [fd_grad(f, list(args), i) for i in wrts]
    for specialize in (True, False):
        value, got = sg.value_and_grad(f, wrt=wrt, specialize=specialize)(*args)
        assert_close(value, f(*args), rtol=1e-12, atol=1e-12, what="value")
        got = got if isinstance(wrt, tuple) else (got,)
        for i, g, w in zip(wrts, got, want):
            scale = 1.0 + float(np.max(np.abs(w), initial=0.0))
            assert_close(g, w, rtol=rtol, atol=rtol * scale, what=f"d/d(argument {i})")


def refused(f, *args, fragments=(), line=None, wrt=0):
    """``f`` is refused at compile time, at ``line`` of its source, saying ``fragments``."""
    with pytest.raises(sg.SourcegradError) as err:
        sg.grad(f, wrt=wrt)(*args)
    text = str(err.value)
    for fragment in fragments:
        assert fragment in text, text
    if line is not None:
        assert err.value.text.strip() == line, text
    return text


X3 = np.array([0.3, -1.2, 0.8])
Y3 = np.array([1.1, 0.4, -0.7])


# ==== np.fill_diagonal ============================================================================
def fill_constant(x):
    a = np.outer(x, x)
    np.fill_diagonal(a, 0.0)
    return np.sum(a * W33)


def fill_active_vector(x, v):
    a = np.outer(x, x)
    np.fill_diagonal(a, v * 2.0)
    return np.sum(a**2 * W33)


def fill_active_scalar(x, v):
    a = np.zeros((3, 3))
    np.fill_diagonal(a, v)
    a = a + np.outer(x, x)
    return np.sum(a * W33)


def fill_tall_wrap(x, v):
    a = np.outer(np.concatenate([x, x[:1]]), x)
    np.fill_diagonal(a, v, wrap=True)
    return np.sum(a * W43)


def fill_cycles_the_values(x, v):
    a = np.outer(x, x)
    np.fill_diagonal(a, v[:2])  # v[0], v[1], v[0] down the diagonal
    return np.sum(a * W33)


def fill_cube(x, v):
    a = x[0] * np.ones((2, 2, 2))
    np.fill_diagonal(a, v[:2])
    return np.sum(a * W43[:2, :2, None])


@pytest.mark.parametrize(
    "f, args, wrt",
    [
        (fill_constant, (X3,), 0),
        (fill_active_vector, (X3, Y3), (0, 1)),
        (fill_active_scalar, (X3, 0.7), (0, 1)),
        (fill_tall_wrap, (X3, Y3[:2]), (0, 1)),
        (fill_cycles_the_values, (X3, Y3), (0, 1)),
        (fill_cube, (X3, Y3), (0, 1)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_fill_diagonal_on_a_local_buffer(f, args, wrt):
    assert_gradients(f, *args, wrt=wrt)


def fill_argument(a, v):
    np.fill_diagonal(a, v)
    return np.sum(a)


def fill_shared(x):
    a = np.outer(x, x)
    b = a
    np.fill_diagonal(a, 0.0)
    return np.sum(b * x)


def test_fill_diagonal_refuses_what_the_gradient_could_not_follow():
    refused(
        fill_argument,
        np.eye(3),
        1.0,
        fragments=("np.fill_diagonal writes into 'a', an argument", "a.copy()"),
        line="np.fill_diagonal(a, v)",
    )
    refused(
        fill_shared,
        X3,
        fragments=("'b' may share memory with 'a'",),
        line="np.fill_diagonal(a, 0.0)",
    )


# ==== out= ========================================================================================
def out_multiply(x, y):
    buf = np.zeros(3)
    np.multiply(x, y, out=buf)
    return np.sum(buf * W3)


def out_value_is_the_buffer(x, y):
    buf = np.empty(3)
    r = np.add(x, 2.0 * y, out=buf)
    return np.sum(r * buf)


def out_exp_in_place(x, y):
    buf = np.empty(3)
    np.add(x, y, out=(buf,))
    np.exp(buf, out=buf)
    return np.sum(buf * W3)


def out_reduction(x, y):
    buf = np.zeros(3)
    np.sum(np.outer(x, y), axis=0, out=buf)
    return np.sum(buf**2)


def out_method(x, y):
    z = x * y
    z.clip(-0.2, 0.2, out=z)
    return np.sum(z * W3)


def out_none(x, y):
    return np.sum(np.multiply(x, y, out=None) * W3)


def out_broadcasts_into_the_buffer(x, y):
    buf = np.zeros((2, 3))
    np.add(x, y[0], out=buf)
    return np.sum(buf * W43[:2])


def out_into_rows(x, y):
    acc = np.zeros((4, 3))
    for i in range(4):
        np.multiply(x, y * i, out=acc[i])
    return np.sum(acc * W43)


@pytest.mark.parametrize(
    "f",
    [
        out_multiply,
        out_value_is_the_buffer,
        out_exp_in_place,
        out_reduction,
        out_method,
        out_none,
        out_broadcasts_into_the_buffer,
        out_into_rows,
    ],
)
def test_out_writes_into_the_buffer(f):
    assert_gradients(f, X3, Y3, wrt=(0, 1))


def test_out_is_an_assignment_into_the_buffer():
    source = sg.source(sg.grad(out_multiply))
    assert "buf[...] = " in source


def out_into_argument(x, y):
    np.multiply(x, y, out=x)
    return np.sum(x)


def out_with_where(x, y):
    buf = np.zeros(3)
    np.multiply(x, y, out=buf, where=x > 0)
    return np.sum(buf)


def out_into_global(x, y):
    np.multiply(x, y, out=W3)
    return np.sum(W3)


def test_out_refuses_what_the_gradient_could_not_follow():
    refused(
        out_into_argument,
        X3.copy(),
        Y3,
        fragments=("'x' is an argument",),
        line="np.multiply(x, y, out=x)",
    )
    refused(
        out_with_where,
        X3,
        Y3,
        fragments=("out= with where=", "np.where"),
        line="np.multiply(x, y, out=buf, where=x > 0)",
    )
    refused(
        out_into_global,
        X3,
        Y3,
        fragments=("an array the function allocated",),
        line="np.multiply(x, y, out=W3)",
    )


# ==== writes through a view of a local array ======================================================
def row_augmented(x):
    acc = np.zeros((2, 3))
    for i in range(2):
        row = acc[i]
        row += x * (i + 1.0)
    return np.sum(acc * acc)


def row_in_a_loop_over_a_range(x, n):
    acc = np.ones((4, 3))
    for i in range(n):
        row = acc[i, 1:]
        row *= x[1:]
        row += x[0]
    return np.sum(acc * W43)


def rows_of_a_loop_over_the_array(x):
    acc = np.outer(x, x)
    for row in acc:
        row *= x
        row -= 1.0
    return np.sum(acc**2 * W33)


def row_entries_written(x):
    acc = np.zeros((3, 3))
    for i in range(3):
        row = acc[i]
        row[i] = x[i] * 2.0
        row[0:2] += x[:2]
    return np.sum(acc * W33)


def row_in_a_nested_loop(x, n):
    acc = np.zeros((n, 3))
    for i in range(n):
        row = acc[i]
        for j in range(3):
            row += x * j
    return np.sum(acc**2)


def slices_written(x):
    acc = np.zeros(6)
    head = acc[:3]
    head += x
    tail = acc[3:]
    tail += x * x
    return np.sum(acc * np.arange(1.0, 7.0))


def view_read_after_the_write(x):
    acc = np.zeros((2, 3))
    row = acc[0]
    row += x
    return np.sum(row * acc[0]) + np.sum(acc)


IDX3 = np.array([0, 2, 0])


def row_of_a_scattered_buffer(x):
    acc = np.zeros((3, 3))
    np.add.at(acc, IDX3, x)
    row = acc[0]
    row += x * 2.0
    return np.sum(acc**2 * W33)


def entry_of_a_vector_by_ellipsis(x):
    acc = np.zeros(3)
    s = acc[0, ...]  # a 0-d array: a view
    s += x[0]
    return np.sum(acc * x) + s


def rows_of_an_array_of_unknown_rank_by_slices(x):
    acc = np.zeros_like(np.outer(x, x))
    head = acc[0:1]
    head += x
    return np.sum(acc**2 * W33)


@pytest.mark.parametrize(
    "f, args",
    [
        (row_of_a_scattered_buffer, (X3,)),
        (entry_of_a_vector_by_ellipsis, (X3,)),
        (rows_of_an_array_of_unknown_rank_by_slices, (X3,)),
        (row_augmented, (X3,)),
        (row_in_a_loop_over_a_range, (X3, 3)),
        (rows_of_a_loop_over_the_array, (X3,)),
        (row_entries_written, (X3,)),
        (row_in_a_nested_loop, (X3, 2)),
        (slices_written, (X3,)),
        (view_read_after_the_write, (X3,)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_a_write_through_a_view_lands_in_the_array(f, args):
    assert_gradients(f, *args)


def view_by_an_argument(x, k):
    acc = np.zeros((3, 3))
    row = acc[k]
    row += x
    return np.sum(acc * acc)


def view_made_before_a_loop_that_rebinds_it(x, n):
    acc = np.zeros((3, 3))
    row = acc[0]
    for i in range(n):
        row += x
        row = row * 2.0
    return np.sum(acc * acc)


def entry_of_a_vector(x):
    acc = np.zeros(3)
    s = acc[0]  # a numpy scalar, a copy: s += ... leaves acc as it is
    s += x[0]
    return np.sum(acc * x) + s


def entry_of_an_array_of_unknown_rank(x):
    acc = np.zeros_like(x)
    s = acc[0]
    s += x[0]
    return np.sum(acc * x) + s


def view_of_a_transpose(x):
    acc = np.outer(x, x)
    for row in acc.T:
        row[0] = 0.0
    return np.sum(acc)


def test_a_write_through_a_view_not_followed_is_refused_at_its_line():
    # k may be an integer array: acc[k] would then be a copy, which a write must not reach acc
    # through; sourcegrad cannot tell, so it refuses, saying how to write it
    text = refused(
        view_by_an_argument,
        X3,
        1,
        fragments=("'acc' may share memory with 'row' (row = acc[k], maybe a view of it)",),
        line="row += x",
    )
    assert "acc[k] += ..." in text and "row = acc[k].copy()" in text
    refused(view_made_before_a_loop_that_rebinds_it, X3, 2, line="row += x")
    # an index of integers alone may pick a numpy scalar (a copy): never written into acc
    refused(entry_of_a_vector, X3, fragments=("maybe a view",), line="s += x[0]")
    refused(entry_of_an_array_of_unknown_rank, X3, fragments=("maybe a view",), line="s += x[0]")
    refused(view_of_a_transpose, X3, fragments=("memory",), line="row[0] = 0.0")


VIEWS_IR = {
    row_in_a_loop_over_a_range: """
        acc = np.ones((4, 3))  # nondiff
        for i in range(n):
            row = acc[i, 1:]
            _t0 = x[1:]
            _t4 = acc[i, 1:]
            _t5 = _t4 * _t0
            acc[i, 1:] = _t5
            row = acc[i, 1:]
            _t1 = x[0]
            _t6 = acc[i, 1:]
            _t7 = _t6 + _t1
            acc[i, 1:] = _t7
            row = acc[i, 1:]
        _t2 = acc * W43
        _t3 = np.sum(_t2)
        return _t3
    """,
    # k may be an integer array, whose acc[k] is a copy: left as written (aliasing refuses it)
    view_by_an_argument: """
        acc = np.zeros((3, 3))  # nondiff
        row = acc[k]
        row = row + x  # inplace
        _t0 = acc * acc
        _t1 = np.sum(_t0)
        return _t1
    """,
}


@pytest.mark.parametrize("f", list(VIEWS_IR), ids=lambda f: f.__name__)
def test_the_views_pass_as_a_table(f):
    """The IR after ``views.rewrite`` (``Normalizer.run``: normalize, exits, views)."""
    body = Normalizer(get_source(f), options={"unroll": 8}).run().body
    assert ir.dump(body) == textwrap.dedent(VIEWS_IR[f]).strip()


def test_a_write_through_a_view_is_a_write_into_the_array_in_the_generated_code():
    source = sg.source(sg.grad(row_augmented))
    assert "acc[i] = " in source.replace("acc[0] = ", "acc[i] = ")


# ==== np.insert and np.delete =====================================================================
def insert_several(x, v):
    y = np.insert(x, [2, 0], v)
    return np.sum(y * np.arange(1.0, 6.0))


def insert_scalar_broadcast(x, v):
    y = np.insert(x, [1, 1, 0], v, axis=0)
    return np.sum(y**2 * W43[0, 0])


def insert_a_column(x, v):
    y = np.insert(np.outer(x[:2], x), 1, v, axis=1)
    return np.sum(y * np.arange(8.0).reshape(2, 4))


def insert_a_list(x, v):
    y = np.insert(x, 2, [v, 2.0 * v])
    return np.sum(y**2)


def delete_then_insert(x, v):
    y = np.delete(x, 1)
    return np.sum(np.insert(y, 0, v * y[0]) ** 2)


@pytest.mark.parametrize(
    "f, args",
    [
        (insert_several, (X3, Y3[:2])),
        (insert_scalar_broadcast, (np.outer(X3, Y3), Y3)),
        (insert_a_column, (X3, Y3[:2])),
        (insert_a_list, (X3, 0.7)),
        (delete_then_insert, (X3, 0.7)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_insert_and_delete(f, args):
    assert_gradients(f, *args, wrt=(0, 1))


# ==== predicates ==================================================================================
PREDICATES = [
    np.isscalar,
    np.isreal,
    np.isposinf,
    np.isneginf,
    np.iscomplex,
    np.iscomplexobj,
    np.isrealobj,
    np.array_equiv,
    np.array_equal,
    np.argpartition,
]


def test_predicates_are_declared_without_gradient():
    for fn in PREDICATES:
        assert R.is_nondiff(fn), fn


def predicates_of_active_values(x):
    s = x[0] * 2.0
    flags = np.isreal(x * 2.0) & ~np.isposinf(x) & ~np.isneginf(x) & ~np.iscomplex(x)
    scale = 1.0 + np.isscalar(s) + np.isrealobj(x * 3.0) - np.iscomplexobj(x)
    same = np.array_equiv(x * 2.0, x) + np.array_equal(x, x * 1.0)
    return np.sum(x * flags) * scale + same * np.sum(x)


def smallest_two(x):
    i = np.argpartition(x * 2.0, 1)
    j = (x * 3.0).argpartition(0)
    return np.sum(x[i[:2]] ** 2) + x[j[0]]


def scalar_branch(x):
    s = np.sum(x)
    if np.isscalar(s * 1.0):
        return s * 2.0
    return s


@pytest.mark.parametrize("f", [predicates_of_active_values, smallest_two, scalar_branch])
def test_predicates_run_as_constants_with_active_arguments(f):
    assert_gradients(f, X3)


# ==== scipy.stats ==================================================================================
def _stats():
    return pytest.importorskip("scipy")


def norm_functions(x, loc, scale):
    return (
        np.sum(stats.norm.logpdf(x, loc, scale) * W3)
        + np.sum(stats.norm.pdf(x, loc, scale) * W3)
        + np.sum(stats.norm.cdf(x, loc, scale) * W3)
        + np.sum(stats.norm.logcdf(x, loc, scale) * W3)
        + np.sum(stats.norm.sf(x, loc, scale) * W3)
        + np.sum(stats.norm.logsf(x, loc, scale) * W3)
    )


def norm_keywords(x, loc, scale):
    return np.sum(scipy.stats.norm.logpdf(x, loc=loc, scale=scale) * W3)


def norm_far_left_tail(x, loc, scale):
    return np.sum(stats.norm.logcdf(x * 10.0 - 40.0, loc, scale)) + np.sum(
        stats.norm.logsf(40.0 - x, loc)
    )


def frozen_chained(x, loc, scale):
    return np.sum(stats.norm(loc, scale).logpdf(x) * W3) + np.sum(stats.norm(loc=loc).cdf(x))


def frozen_bound(x, loc, scale):
    d = stats.norm(loc, scale)
    loc = loc * 3.0  # the frozen distribution keeps the value it was given
    return np.sum(d.logpdf(x)) + np.sum(d.logsf(x * loc))


PRIOR = stats.norm(0.5, 2.0) if stats is not None else None
SPREAD_T = stats.t(3.0, scale=np.array([1.0, 2.0, 0.5])) if stats is not None else None


def frozen_at_module_level(x, loc, scale):
    return np.sum(PRIOR.logpdf(x * scale) * W3) + np.sum(SPREAD_T.logpdf(x - loc))


def test_a_module_level_frozen_distribution_calls_its_distribution():
    _stats()
    assert "norm.logpdf(" in sg.source(sg.grad(frozen_at_module_level))


def student_t(x, loc, scale):
    return np.sum(stats.t.logpdf(x, 3.5 + loc, loc, scale) * W3) + np.sum(
        stats.t(4.0, loc).logpdf(x)
    )


def gamma_beta_expon_laplace(x, loc, scale):
    z = np.abs(x) + 1.0
    u = 0.2 + 0.2 * np.abs(np.tanh(x))
    return (
        np.sum(stats.gamma.logpdf(z, 1.5 + scale, loc * 0.1, scale))
        + np.sum(stats.beta.logpdf(u, 2.0 + scale, 1.0 + scale**2, loc * 0.01, 1.1))
        + np.sum(stats.expon.logpdf(z, loc * 0.1, scale))
        + np.sum(stats.laplace.logpdf(x, loc, scale) * W3)
    )


def poisson_rate(x, loc, scale):
    return np.sum(stats.poisson.logpmf(np.array([0, 1, 4]), np.exp(x) * scale))


@pytest.mark.parametrize(
    "f",
    [
        norm_functions,
        norm_keywords,
        norm_far_left_tail,
        frozen_chained,
        frozen_bound,
        frozen_at_module_level,
        student_t,
        gamma_beta_expon_laplace,
        poisson_rate,
    ],
)
def test_distributions_in_the_point_and_their_parameters(f):
    _stats()
    assert_gradients(f, X3, 0.4, 1.3, wrt=(0, 1, 2), rtol=1e-5)


def norm_broadcast(x, loc, scale):
    return np.sum(stats.norm.logpdf(x[:, None], loc, scale) * W33)


def test_location_and_scale_broadcast():
    _stats()
    assert_gradients(norm_broadcast, X3, Y3, np.array([1.5, 0.7, 2.0]), wrt=(0, 1, 2))
    x32 = X3.astype(np.float32)
    g = sg.grad(norm_broadcast, wrt=(0, 1, 2))(x32, np.float32(0.2), 1.5)
    assert g[0].dtype == np.float32 and type(g[2]) is float


def mvn(x, mean, cov):
    return np.sum(stats.multivariate_normal.logpdf(x, mean, cov) * W43[:, 0])


def mvn_frozen(x, mean, cov):
    return np.sum(stats.multivariate_normal(mean, cov).logpdf(x) * W43[:, 0])


COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])


@pytest.mark.parametrize("f", [mvn, mvn_frozen])
@pytest.mark.parametrize(
    "cov", [COV, COV + np.triu(np.full((3, 3), 0.4), 1), np.array([1.0, 2.0, 0.5]), 1.3]
)
def test_multivariate_normal_in_x_mean_and_cov(f, cov):
    """scipy reads the covariance's lower triangle: an upper entry has no gradient, a lower one
    stands for its mirror too (and a vector or a scalar covariance is a diagonal)."""
    _stats()
    assert_gradients(f, RNG.normal(size=(4, 3)), Y3, cov, wrt=(0, 1, 2))


def mvn_singular_allowed(x, mean, cov):
    return stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)


def frozen_passed_on(x, loc, scale):
    d = stats.norm(loc, scale)
    return np.sum(d.logpdf(x)) + spread(d)


def spread(d):
    return d.std()


def no_rule_for_ppf(x, loc, scale):
    return stats.norm(loc, scale).ppf(0.9) * np.sum(x)


def test_distributions_refuse_what_they_do_not_differentiate():
    _stats()
    refused(
        mvn_singular_allowed,
        X3,
        Y3,
        COV,
        fragments=("allow_singular=True",),
        line="return stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)",
    )
    refused(
        frozen_passed_on,
        X3,
        0.4,
        1.3,
        fragments=("'d' holds a frozen distribution",),
        line="return np.sum(d.logpdf(x)) + spread(d)",
        wrt=(0, 1, 2),
    )
    refused(
        no_rule_for_ppf,
        X3,
        0.4,
        1.3,
        fragments=("no adjoint rule for stats.norm.ppf",),
        line="return stats.norm(loc, scale).ppf(0.9) * np.sum(x)",
        wrt=(0, 1, 2),
    )


# ==== scipy.linalg =================================================================================
L3 = np.tril(RNG.normal(size=(3, 3)), -1) * 0.3 + np.diag([2.0, 1.5, 2.5])
SPD = COV + np.triu(np.full((3, 3), 0.25), 1)  # not symmetric: LAPACK reads one triangle


def triangular_solves(a, b):
    return (
        np.sum(sla.solve_triangular(a, b, lower=True) * W3)
        + np.sum(sla.solve_triangular(a.T, b, trans="T") * W3)
        + np.sum(sla.solve_triangular(a, np.outer(b, b[:2]), trans=1, lower=True) * W33[:, :2])
        + np.sum(sla.solve_triangular(a, b, lower=True, unit_diagonal=True) ** 2)
    )


def cholesky_default_upper(a, b):
    return np.sum(sla.cholesky(a) * W33) + np.sum(sla.cholesky(a.T, lower=True) * W33.T) + np.sum(b)


def cholesky_solves(a, b):
    c, lower = sla.cho_factor(a, lower=True)
    return (
        np.sum(sla.cho_solve(sla.cho_factor(a), b) * W3)
        + np.sum(sla.cho_solve((c, lower), np.outer(b, b)) * W33)
        + np.sum(c * W33)
    )


def matrix_exponential(a, b):
    return (
        np.sum(sla.expm(a * 0.3) * W33)
        + np.sum(sla.expm(np.stack([a, a.T]) * 0.1) ** 2)
        + np.sum(b)
    )


@pytest.mark.parametrize(
    "f, a",
    [
        (triangular_solves, L3),
        (cholesky_default_upper, SPD),
        (cholesky_solves, SPD),
        (matrix_exponential, RNG.normal(size=(3, 3))),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_scipy_linalg(f, a):
    pytest.importorskip("scipy")
    assert_gradients(f, a, Y3, wrt=(0, 1), rtol=1e-5)


# ==== scipy.signal.lfilter ==========================================================================
def filtered(b, a, x):
    return np.sum(ssig.lfilter(b, a, x) * np.arange(1.0, 7.0))


def filtered_along_rows(b, a, x):
    return np.sum(ssig.lfilter(b, a, x, axis=0) ** 2)


def filtered_constant_coefficients(b, a, x):
    return np.sum(ssig.lfilter([1.0, 0.5], [1.0, -0.3], x * b[0] + a[1]) ** 2)


def filtered_from_a_state(b, a, x):
    y, _ = ssig.lfilter(b, a, x, zi=np.zeros(1))
    return np.sum(y)


@pytest.mark.parametrize(
    "f, x",
    [
        (filtered, RNG.normal(size=6)),
        (filtered_along_rows, RNG.normal(size=(5, 2))),
        (filtered_constant_coefficients, RNG.normal(size=6)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_lfilter_in_the_signal_and_both_coefficient_vectors(f, x):
    pytest.importorskip("scipy")
    b, a = np.array([1.0, 0.5, -0.2]), np.array([1.2, -0.3])
    assert_gradients(f, b, a, x, wrt=(0, 1, 2))


def test_lfilter_from_a_state_is_refused():
    pytest.importorskip("scipy")
    refused(
        filtered_from_a_state,
        np.array([1.0, 0.5]),
        np.array([1.0, -0.3]),
        RNG.normal(size=4),
        fragments=("zi",),
        line="y, _ = ssig.lfilter(b, a, x, zi=np.zeros(1))",
        wrt=(0, 1, 2),
    )


# ==== np.cov's weights =============================================================================
FW = np.array([1, 3, 2, 1])


def weighted_covariances(m, a):
    return (
        np.sum(np.cov(m, aweights=a) * W33[:2, :2])
        + np.sum(np.cov(m, fweights=FW, aweights=a, ddof=2) * W33[1:, 1:])
        + np.sum(np.cov(m.T, rowvar=False, aweights=a, bias=True) * W33[:2, :2])
        + np.sum(np.cov(m[0], m[1], fweights=FW) * W33[:2, :2])
    )


def test_cov_weights():
    assert_gradients(
        weighted_covariances, RNG.normal(size=(2, 4)), np.array([0.5, 2.0, 1.0, 1.5]), wrt=(0, 1)
    )


# ==== forward mode ==================================================================================
@pytest.mark.parametrize(
    "f, args",
    [
        (row_augmented, (X3,)),
        (rows_of_a_loop_over_the_array, (X3,)),
        (out_multiply, (X3, Y3)),
        (out_into_rows, (X3, Y3)),
        (fill_active_vector, (X3, Y3)),
        (insert_several, (X3, Y3[:2])),
        (norm_functions, (X3, 0.4, 1.3)),
        (gamma_beta_expon_laplace, (X3, 0.4, 1.3)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_forward_mode(f, args):
    """The same constructs' tangents (``sg.jvp``) match central differences."""
    if f in (norm_functions, gamma_beta_expon_laplace):
        _stats()
    tangent = np.array([0.5, 1.0, -2.0])
    value, got = sg.jvp(f, wrt=0)(*args, tangent)
    h = 1e-6
    want = (f(args[0] + h * tangent, *args[1:]) - f(args[0] - h * tangent, *args[1:])) / (2 * h)
    assert_close(value, f(*args), rtol=1e-12, atol=1e-12, what="value")
    assert_close(got, want, rtol=1e-5, atol=1e-5 * (1.0 + abs(want)), what="tangent")


def log_likelihood(x, loc, scale):
    return (
        np.sum(stats.norm.logpdf(x, loc, scale))
        + np.sum(stats.norm.logcdf(x, loc, scale))
        + np.sum(stats.norm.sf(x * 2.0, loc))
        + np.sum(stats.gamma.logpdf(np.abs(x) + 1.0, 1.0 + scale, loc * 0.1, scale))
        + np.sum(stats.laplace.logpdf(x, loc, scale))
    )


@pytest.mark.parametrize("wrt", [0, 1, 2])
def test_hessian_of_a_log_likelihood(wrt):
    """Second derivatives (the gradient of the forward-mode code) match finite differences of
    the gradient."""
    _stats()
    args = [np.array([0.1, 0.2, -0.7]), 0.3, 1.5]
    hessian = sg.hessian(log_likelihood, wrt=wrt)(*args)
    for k in np.ndindex(np.shape(args[wrt])):

        def entry(*a, k=k):
            return np.asarray(sg.grad(log_likelihood, wrt=wrt)(*a))[k]

        want = fd_grad(entry, args, wrt)
        got = np.asarray(hessian)[k] if np.ndim(hessian) else hessian
        assert_close(got, want, rtol=1e-5, atol=1e-5)
