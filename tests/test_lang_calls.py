"""Names and calls as people write them: local aliases and imports of numpy, ``getattr`` with a
literal name, ``functools.partial``/``reduce``, ``map``, recursion of a depth known when
compiling, ``nonlocal`` in a local def, and ``grad`` of a numpy function itself. Each form is
checked against finite differences (specialized and general code) and for its value; what has
no meaning for a gradient is refused at its line.
"""

import functools
import operator

import numpy as np
import pytest
import scipy.special
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg
from sourcegrad.errors import UnsupportedSyntaxError

from .corpus.harness import check, check_value
from .oracle import assert_close, fd_grad

X = np.array([0.3, -0.7, 1.2, 0.5])
A = np.array([[2.0, 0.3, 0.1], [0.2, 1.5, -0.4], [0.0, 0.6, 1.8]])
B = np.array([0.5, -1.0, 0.25])


# ==== local aliases, imports and getattr =========================================================


def tuple_of_aliases(x):
    sqrt, tanh, pi = np.sqrt, np.tanh, np.pi
    return np.sum(sqrt(x * x + 1.0) * tanh(x) * pi)


def module_alias(a, b):
    la = np.linalg
    return np.sum(la.solve(a, b) ** 2)


def function_alias(x):
    exp = np.exp
    return np.sum(exp(x) * x)


def alias_in_local_def(x):
    exp = np.exp

    def h(t):
        return exp(t) * t

    return np.sum(h(x))


def import_as(x):
    import numpy as np2

    return np2.sum(np2.tanh(x) * x)


def from_import(x):
    from numpy import cos, tanh

    return np.sum(tanh(x) + cos(x))


def import_scipy(x):
    import scipy.special as sp

    return np.sum(sp.expit(x) * sp.log_ndtr(x))


def from_submodule(x):
    from numpy.linalg import norm

    return norm(x) + np.sum(x)


def import_dotted(x):
    import numpy.linalg

    return numpy.linalg.norm(x * 2.0)


def getattr_function(x):
    f = getattr(np, "tanh")
    return np.sum(f(x) + getattr(np, "sin")(x))


def getattr_chain(a, b):
    return np.sum(getattr(np.linalg, "solve")(a, b))


class Scale:
    factor = 2.0


SCALE = Scale()


def getattr_object(x):
    return np.sum(x * getattr(SCALE, "factor") * getattr(SCALE, "missing", 3.0))


ALIASES = [
    (tuple_of_aliases, (X,)),
    (module_alias, (A, B)),
    (function_alias, (X,)),
    (alias_in_local_def, (X,)),
    (import_as, (X,)),
    (from_import, (X,)),
    (import_scipy, (X,)),
    (from_submodule, (X,)),
    (import_dotted, (X,)),
    (getattr_function, (X,)),
    (getattr_chain, (A, B)),
    (getattr_object, (X,)),
]


@pytest.mark.parametrize("f, args", ALIASES, ids=[f.__name__ for f, _ in ALIASES])
def test_aliases_imports_and_getattr(f, args):
    check(f, args)
    check_value(f, args)
    if len(args) == 2:
        check(f, args, wrt=1)


def import_missing(x):
    import no_such_module_anywhere

    return no_such_module_anywhere.f(x)


def test_an_import_that_fails_is_refused_at_its_line():
    with pytest.raises(UnsupportedSyntaxError, match="cannot import") as e:
        sg.grad(import_missing)(X)
    assert e.value.lineno == import_missing.__code__.co_firstlineno + 1


# ==== functools.partial, functools.reduce, map ===================================================


def scaled_sin(x, a, b=1.0):
    return np.sin(x) * a + b


def partial_of_helper(x):
    h = functools.partial(scaled_sin, a=2.0)
    return np.sum(h(x) + h(x * x, b=0.5))


def partial_of_numpy(x):
    col_sums = functools.partial(np.sum, axis=0)
    return np.sum(col_sums(np.outer(x, x)) ** 2)


def partial_positional(x):
    h = functools.partial(scaled_sin, x)
    return np.sum(h(3.0) * h(0.5, b=-1.0))


def partial_snapshot(x):
    y = x * 2.0
    h = functools.partial(operator.mul, y)
    y = x * 10.0  # the partial holds the value y had
    return np.sum(h(x) + y)


def partial_of_a_list(x):
    y = x * 2.0
    stacked = functools.partial(np.stack, [x, y])
    y = x * 5.0  # the list holds the arrays as they were
    return np.sum(stacked() * 3.0) + np.sum(y)


def partial_of_lambda(x):
    h = functools.partial(lambda t, s: np.tanh(t) * s, s=1.5)
    return np.sum(h(x))


def partial_called_at_once(x):
    return np.sum(functools.partial(scaled_sin, a=0.5)(x))


HALF_SIN = functools.partial(scaled_sin, a=0.5, b=0.0)


def module_level_partial(x):
    return np.sum(HALF_SIN(x) * x)


def reduce_literal_lambda(x):
    return np.sum(functools.reduce(lambda a, b: a * b, [x, x + 1.0, np.sin(x)], 1.0))


def reduce_operator(x):
    return np.sum(functools.reduce(operator.add, (x, x * x, x**3)))


def reduce_built_list(x):
    parts = []
    for k in range(3):
        parts.append(np.cos(x * (k + 1)))
    return np.sum(functools.reduce(np.maximum, parts))


def reduce_helper(x):
    return np.sum(functools.reduce(scaled_sin, [x, x * 0.5], x * 0.1))


def map_numpy(x):
    ys = list(map(np.tanh, [x, x * 2.0]))
    return np.sum(ys[0] * ys[1])


def map_sum(x):
    return sum(map(np.sum, [x, x * x, np.sin(x)]))


def map_lambda_two_sequences(x):
    pairs = map(lambda a, b: a * b, [x, x + 1.0], [np.cos(x), x])
    return np.sum(np.stack(list(pairs)))


def map_in_for(x):
    total = 0.0
    for y in map(functools.partial(scaled_sin, a=2.0), [x, x * 3.0]):
        total = total + np.sum(y * y)
    return total


def map_called_lazily(x):
    k = 1.0
    s = 0.0
    for y in map(lambda t: t * k, [x, x, x]):  # each call reads k as the loop left it
        k = k + 1.0
        s = s + np.sum(np.sin(y))
    return s


def map_in_comprehension(x):
    return np.sum(np.stack([y * 2.0 for y in map(np.tanh, [x, x * 2.0])]))


def map_enumerated(x):
    s = 0.0
    for i, y in enumerate(map(np.sin, [x, x * 2.0])):
        s = s + np.sum(y) * (i + 1)
    return s


def map_over_rows(a):
    return sum(map(np.linalg.norm, a))


FUNCTIONAL = [
    (partial_of_helper, (X,)),
    (partial_of_numpy, (X,)),
    (partial_positional, (X,)),
    (partial_snapshot, (X,)),
    (partial_of_a_list, (X,)),
    (partial_of_lambda, (X,)),
    (partial_called_at_once, (X,)),
    (module_level_partial, (X,)),
    (reduce_literal_lambda, (X,)),
    (reduce_operator, (X,)),
    (reduce_built_list, (X,)),
    (reduce_helper, (X,)),
    (map_numpy, (X,)),
    (map_sum, (X,)),
    (map_lambda_two_sequences, (X,)),
    (map_in_for, (X,)),
    (map_over_rows, (A,)),
    (map_called_lazily, (X,)),
    (map_in_comprehension, (X,)),
    (map_enumerated, (X,)),
]


@pytest.mark.parametrize("f, args", FUNCTIONAL, ids=[f.__name__ for f, _ in FUNCTIONAL])
def test_partial_reduce_and_map(f, args):
    check(f, args)
    check_value(f, args)


@given(
    x=st.lists(st.floats(-2.0, 2.0), min_size=1, max_size=5).map(np.array),
    n=st.integers(1, 4),
)
def test_reduce_over_any_length_against_finite_differences(x, n):
    def loss(x):
        return np.sum(
            functools.reduce(lambda a, b: a * 0.5 + np.sin(b), [x * (k + 1) for k in range(n)])
        )

    # (a comprehension: a list whose length the compile does not know, reduced by a loop)
    assert_close(sg.grad(loss)(x), fd_grad(loss, [x], 0))


def partial_rebound(x):
    h = functools.partial(np.sum, axis=0)
    h = functools.partial(np.sum, axis=None)
    return h(x)


def partial_stored(x):
    h = functools.partial(np.sum, axis=0)
    fs = [h]
    return np.sum(x) + len(fs)


def map_of_array(x):
    f = x * 2.0
    return sum(map(f, [x]))


def map_read_before_the_loop_rebinds(x):
    k = 1.0
    s = 0.0
    for i, y in enumerate(map(lambda t: t * k, [x, x])):
        k = k + 1.0
        s = s + np.sum(y)
    return s


@pytest.mark.parametrize(
    "f, message",
    [
        (map_read_before_the_loop_rebinds, "reads a variable this loop rebinds"),
        (partial_rebound, "rebound"),
        (partial_stored, "can only be called"),
        (map_of_array, "not a function sourcegrad knows"),
    ],
)
def test_function_values_used_otherwise_are_refused(f, message):
    with pytest.raises(UnsupportedSyntaxError, match=message):
        sg.grad(f)(X)


# ==== recursion of a depth known when compiling ==================================================


def power(x, n):
    return x if n == 1 else x * power(x, n - 1)


def recursive_power(x):
    return np.sum(power(x, 3) + power(np.sin(x), 2))


def tree(x, depth):
    if depth == 0:
        return np.tanh(x)
    left = tree(x * 0.5, depth - 1)
    right = tree(np.sin(x), depth - 1)
    return left * right + x


def recursive_tree(x):
    return np.sum(tree(x, 3))


def local_recursion(x):
    def go(v, k):
        return v if k <= 1 else v * go(v + 1.0, k - 1)

    return np.sum(go(x, 4))


DEPTH = 3


def recursion_on_a_constant(x):
    return np.sum(tree(x, DEPTH))


RECURSIVE = [
    (recursive_power, (X,)),
    (recursive_tree, (X,)),
    (local_recursion, (X,)),
    (recursion_on_a_constant, (X,)),
]


@pytest.mark.parametrize("f, args", RECURSIVE, ids=[f.__name__ for f, _ in RECURSIVE])
def test_recursion_of_a_known_depth_is_unrolled(f, args):
    check(f, args)
    check_value(f, args)


@given(
    x=st.lists(st.floats(-1.5, 1.5), min_size=1, max_size=4).map(np.array),
    n=st.integers(1, 6),
)
def test_recursion_depth_from_a_closure_int_against_finite_differences(x, n):
    def loss(x):
        return np.sum(power(np.sin(x), n))  # n: an int the compile decides from (guarded)

    assert_close(sg.grad(loss)(x), fd_grad(loss, [x], 0))


def test_a_module_constant_depth_recompiles_when_it_changes():
    global DEPTH
    df = sg.grad(recursion_on_a_constant)
    first = df(X)
    DEPTH = 2
    try:
        assert_close(df(X), fd_grad(recursion_on_a_constant, [X], 0))
        assert not np.allclose(first, df(X))
    finally:
        DEPTH = 3


def data_depth(x):
    return np.sum(power(x, int(np.sum(x > 0)) + 1))


def argument_depth(x, n):
    return np.sum(power(x, n))


def never_stops(x):
    def go(v, k):
        return v if k <= 1 else v * go(v, k + 1)

    return np.sum(go(x, 2))


@pytest.mark.parametrize(
    "f, args, message",
    [
        (data_depth, (X,), "depth depends on values known only when it runs"),
        (argument_depth, (X, 3), "depth depends on values known only when it runs"),
        (never_stops, (X,), "still recursing 64 calls deep"),
    ],
)
def test_recursion_of_a_depth_known_only_at_run_time_is_refused(f, args, message):
    with pytest.raises(UnsupportedSyntaxError, match=message) as e:
        sg.grad(f)(*args)
    assert "power(x, n - 1)" in e.value.text or "go(v" in e.value.text


# ==== nonlocal in a local def ====================================================================


def nonlocal_accumulator(x):
    count = 0
    total = 0.0

    def add(v):
        nonlocal count, total
        count += 1
        total = total + np.sum(v * v)

    add(x)
    add(np.sin(x))
    return total / count


def nonlocal_in_loop(x):
    h = x

    def step(k):
        nonlocal h
        h = np.tanh(h * (k + 1.0))
        return np.sum(h)

    s = 0.0
    for k in range(4):
        s = s + step(k)
    return s + np.sum(h)


def nonlocal_read_after(x):
    best = x * 0.0

    def keep(v):
        nonlocal best
        best = np.maximum(best, v)

    for k in range(3):
        keep(np.cos(x * k))
    return np.sum(best**2)


NONLOCAL = [
    (nonlocal_accumulator, (X,)),
    (nonlocal_in_loop, (X,)),
    (nonlocal_read_after, (X,)),
]


@pytest.mark.parametrize("f, args", NONLOCAL, ids=[f.__name__ for f, _ in NONLOCAL])
def test_nonlocal_in_a_local_def_writes_the_enclosing_variable(f, args):
    check(f, args)
    check_value(f, args)


# ==== grad of a library function itself ==========================================================


@pytest.mark.parametrize(
    "fn, x",
    [
        (np.sqrt, 0.7),
        (np.tanh, 0.3),
        (np.sum, X),
        (np.mean, A),
        (scipy.special.expit, -0.4),
        (scipy.special.logsumexp, X),
        (np.linalg.norm, X),
        (np.linalg.det, A),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_grad_of_a_library_function(fn, x):
    want = fd_grad(fn, [x], 0)
    assert_close(sg.grad(fn)(x), want)
    value, g = sg.value_and_grad(fn)(x)
    assert_close(value, fn(x), 1e-12, 1e-12, what="value")
    assert_close(g, want)
    assert_close(sg.grad(fn, specialize=False)(x), want)


def test_grad_of_a_library_function_with_options_and_other_transformations():
    assert_close(sg.grad(np.sum)(A, axis=None), np.ones_like(A))
    assert_close(sg.grad(np.maximum, wrt=(0, 1))(0.7, 0.5), (1.0, 0.0))
    _, tangent = sg.jvp(np.tanh)(X, np.ones(4))
    assert_close(tangent, 1.0 - np.tanh(X) ** 2)
    _, pullback = sg.vjp(np.sin)(X)
    assert_close(pullback(np.ones(4)), np.cos(X))
    want = np.exp(X) / np.sum(np.exp(X))
    assert_close(sg.hessian(scipy.special.logsumexp)(X), np.diag(want) - np.outer(want, want))
    assert "np.sum(a, axis=axis)" in sg.source(sg.grad(np.sum))


def registered(x):
    return np.sin(x) * 0.0  # the registered rule, not this body, is differentiated


@sg.adjoint(registered)
def _registered_adjoint(result, x):
    d[x] += d[result] * 2.0  # noqa: F821


def test_grad_of_a_function_with_a_registered_rule_uses_the_rule():
    assert_close(sg.grad(registered)(0.25), 2.0)


# ==== a loss of one entry is a scalar ============================================================


def keepdims_loss(x):
    return np.sum(x * x, keepdims=True)


def one_by_one_loss(x, w):
    return (x @ w).reshape(1, 1) + np.sum(np.tanh(w))


def row_times_column(a, x):
    return a[:1] @ np.sin(x)  # shape (1,): a row of a matrix times a vector


ONE_ENTRY = [
    (keepdims_loss, (X,), 0),
    (one_by_one_loss, (X, np.array([0.2, 0.1, -0.4, 0.9])), (0, 1)),
    (row_times_column, (np.ones((2, 3)) * 0.5, B), (0, 1)),
]


@pytest.mark.parametrize("f, args, wrt", ONE_ENTRY, ids=[f.__name__ for f, _, _ in ONE_ENTRY])
def test_a_one_entry_array_loss_is_a_scalar_for_grad(f, args, wrt):
    positions = wrt if isinstance(wrt, tuple) else (wrt,)
    entry = lambda *a: np.sum(f(*a))  # (the oracle takes a scalar: the one entry)
    want = [fd_grad(entry, list(args), i) for i in positions]
    for specialize in (True, False):
        got = sg.grad(f, wrt=wrt, specialize=specialize)(*args)
        for g, w in zip(got if isinstance(wrt, tuple) else (got,), want):
            assert_close(g, w)
    value, _ = sg.value_and_grad(f, wrt=wrt)(*args)
    assert value.shape == f(*args).shape  # the value as the function returned it
    assert_close(value, f(*args), 1e-12, 1e-12, what="value")


def test_an_array_of_several_entries_is_still_refused_by_grad():
    with pytest.raises(sg.NonScalarOutputError, match="vjp"):
        sg.grad(lambda x: x[:2] * 2.0)(X)


# ==== what never runs is not refused =============================================================


def write_stats(x):
    with open("stats.txt", "w") as out:  # not compiled: refused where it runs
        out.write(str(x))


def verbose_flag(x, verbose=False):
    y = np.sum(np.tanh(x) ** 2)
    if verbose:
        write_stats(x)
    return y


def plotting_axis(x, ax=None):
    h = np.sin(x)
    if ax is not None:
        ax.plot(h)
        ax.set_title("h")
    return np.sum(h * h)


def plotting_if_ax(x, ax=None):
    h = np.sin(x) * x
    if ax:
        ax.plot(h)
    return np.sum(h)


def no_rule_on_a_debug_path(x, debug=False):
    h = np.sin(x)
    if debug:
        z = np.linalg.eigvals(np.outer(h, h))
        h = h + np.real(z[0])
    return np.sum(h * h)


def refused_arm_of_an_expression(x, ax=None):
    h = np.cos(x)
    shown = ax.imshow(h) if ax is not None else 0.0
    return np.sum(h**2) + shown


def elif_chain(x, mode=None):
    h = np.tanh(x)
    if mode is None:
        y = np.sum(h)
    elif mode:
        write_stats(h)
        y = np.sum(h * 2.0)
    else:
        y = np.sum(h**2)
    return y


class Fitted:
    def __init__(self):
        self.w = np.array([0.5, -0.3, 0.2])
        self.debug = False
        self.ax = None

    def loss(self, x):
        h = np.tanh(self.w * x)
        if self.debug:
            self.ax.plot(h)
        return np.sum(h**2)


DEBUG = False


def module_flag(x):
    h = np.exp(-x * x)
    if DEBUG:
        write_stats(h)
    return np.sum(h)


NEVER_TAKEN = [
    (verbose_flag, (B,)),
    (verbose_flag, (B, False)),
    (plotting_axis, (B,)),
    (plotting_if_ax, (B,)),
    (no_rule_on_a_debug_path, (B,)),
    (refused_arm_of_an_expression, (B,)),
    (elif_chain, (B,)),
    (elif_chain, (B, False)),
    (module_flag, (B,)),
]


@pytest.mark.parametrize(
    "f, args", NEVER_TAKEN, ids=[f"{f.__name__}-{len(a)}" for f, a in NEVER_TAKEN]
)
def test_code_on_a_path_the_call_does_not_take_is_not_refused(f, args):
    check(f, args)
    check_value(f, args)


@pytest.mark.parametrize("f", [plotting_axis, plotting_if_ax, refused_arm_of_an_expression])
def test_none_passed_explicitly(f):
    want = fd_grad(lambda x: f(x, None), [B], 0)
    for specialize in (True, False):
        assert_close(sg.grad(f, specialize=specialize)(B, None), want)
        assert_close(sg.grad(f, specialize=specialize)(B, ax=None), want)


def test_a_method_with_a_debug_attribute():
    model = Fitted()
    x = np.array([0.3, 0.7, 1.2])
    for specialize in (True, False):
        got = sg.grad(model.loss, specialize=specialize)(x)
        assert_close(got, fd_grad(model.loss, [x], 0))
    model.debug = True
    with pytest.raises(UnsupportedSyntaxError, match=r"\.plot\(\) is not supported") as e:
        sg.grad(model.loss, specialize=False)(x)
    assert e.value.text.strip() == "self.ax.plot(h)"


@pytest.mark.parametrize("specialize", [True, False])
@pytest.mark.parametrize(
    "f, args, error, line",
    [
        (verbose_flag, (B, True), UnsupportedSyntaxError, "with open"),
        (no_rule_on_a_debug_path, (B, True), sg.MissingAdjointError, "np.linalg.eigvals"),
        (elif_chain, (B, True), UnsupportedSyntaxError, "with open"),
    ],
)
def test_the_path_that_runs_is_refused_when_it_runs(f, args, error, line, specialize):
    """The general code has the branch as its refusal, raised when the branch runs (with a note
    saying so); code specialized to the flag refuses it when it compiles. Either way, located."""
    df = sg.grad(f, specialize=specialize)
    assert_close(df(B), fd_grad(f, [B], 0))  # the other path runs
    with pytest.raises(error) as e:
        df(*args)
    assert line in e.value.text
    deferred = "this call took it" in str(e.value)
    assert deferred == (not specialize)


def test_the_general_code_keeps_the_branch_as_its_refusal():
    src = sg.source(sg.grad(no_rule_on_a_debug_path, specialize=False))
    assert "if debug:" in src and "raise refused()" in src
    specialized = sg.source(sg.grad(no_rule_on_a_debug_path), B, False)
    assert "if debug" not in specialized and "refused" not in specialized  # the path is gone


def test_a_module_flag_is_decided_when_compiling_and_recompiles_when_it_changes():
    global DEBUG
    df = sg.grad(module_flag)
    assert_close(df(B), fd_grad(module_flag, [B], 0))
    DEBUG = True
    try:
        with pytest.raises(UnsupportedSyntaxError, match="with block"):
            df(B)
    finally:
        DEBUG = False
    assert_close(df(B), fd_grad(module_flag, [B], 0))


# ==== a generator consumed by a for loop =========================================================


def batches(X, n):
    for i in range(0, len(X), n):
        yield X[i : i + n]


def minibatch_sum(X):
    s = 0.0
    for xb in batches(X, 2):
        s = s + np.sum(np.tanh(xb))
    return s


def two_values(x):
    yield x
    yield np.sin(x) * 2.0


def straight_line_generator(x):
    out = []
    for v in two_values(x):
        out.append(v * v)
    return np.sum(np.stack(out))


def local_generator(x):
    def windows(v, k):
        for i in range(len(v) - k + 1):
            yield i, v[i : i + k]

    s = 0.0
    for i, w in windows(x, 2):
        s = s + np.sum(w * w) * (i + 1)
    return s


def generator_with_state(x):
    def running(v):
        total = 0.0
        for e in v:
            total = total + e
            yield total

    s = 0.0
    for t in running(np.tanh(x)):
        s = s + t * t
    return s


def return_inside_consumer(x):
    for xb in batches(x, 2):
        if np.sum(xb) > 0.5:
            return np.sum(xb * xb)
    return np.sum(x)


GENERATORS = [
    (minibatch_sum, (X,)),
    (straight_line_generator, (X,)),
    (local_generator, (X,)),
    (generator_with_state, (X,)),
    (return_inside_consumer, (X,)),
    (return_inside_consumer, (-X,)),
]


@pytest.mark.parametrize("f, args", GENERATORS, ids=[f.__name__ for f, _ in GENERATORS])
def test_a_generator_consumed_by_a_for_loop_is_inlined(f, args):
    check(f, args)
    check_value(f, args)


def break_over_generator(x):
    s = 0.0
    for v in two_values(x):
        if np.sum(v) > 1.0:
            break
        s = s + np.sum(v)
    return s


def generator_as_value(x):
    return np.sum(list(two_values(x))[0])


def returns_early(x):
    yield x
    return


def consumes_returning(x):
    s = 0.0
    for v in returns_early(x):
        s = s + np.sum(v)
    return s


@pytest.mark.parametrize(
    "f, message, text",
    [
        (break_over_generator, "break and continue of a loop over a generator", "break"),
        (generator_as_value, "generators", "yield x"),
        (consumes_returning, "return in a generator", "return"),
    ],
)
def test_other_uses_of_a_generator_are_refused(f, message, text):
    with pytest.raises(UnsupportedSyntaxError, match=message) as e:
        sg.grad(f)(X)
    assert text in e.value.text
