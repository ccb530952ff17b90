"""Helpers returning several values, unpacking, and star calls.

A helper (a module-level function, a local def or a lambda) that returns a tuple gives its caller
the tuple's values: bound (``a, b = f(x)``, nested, starred), indexed (``f(x)[1]``), passed on,
returned again, or held in a name like any tuple. Unpacking takes starred targets; ``f(*args)``
and ``f(**kw)`` pass what is known when the function is compiled; a helper takes ``*args`` and
``**kwargs``; ``zip`` is a value; ``del`` of a local; a swap through a local buffer. Each form is
checked against central finite differences in the specialized and the general code
(``corpus.harness.check``), and its value against plain Python (``check_value``); what cannot
be given a meaning is refused with a located error.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg
from sourcegrad.errors import (
    NonScalarOutputError,
    SourcegradError,
    UnsupportedSyntaxError,
    UnsupportedValueError,
    UsageError,
)

from .corpus.harness import check, check_value
from .oracle import assert_close, fd_grad

X = np.array([[0.3, 0.5, -0.4], [0.7, -0.2, 0.9]])
V = np.array([0.3, -0.5, 0.8, 0.2])
IMG = np.random.default_rng(0).standard_normal((5, 5))
KERN = np.random.default_rng(1).standard_normal((3, 3))


# ---- helpers returning tuples ----------------------------------------------------------------------
def _sin_cos(x):
    return np.sin(x), np.cos(x)


def _nested(x):
    return (x * 2.0, x + 1.0), np.exp(x)


def _scaled(x, big):
    if big:
        return x * 2.0, 1
    return x * 3.0, 2


def _by_sign(x):
    if np.sum(x) > 0.0:
        return np.tanh(x), 1.5
    return np.sin(x), -0.5


def _pad_widths(kernel):
    p = kernel // 2
    return (p, p, p, kernel - 1 - p)  # Python ints, for np.pad


def _im2col_indices(h, w, k):
    """Row and column index arrays that gather every k-by-k patch of an h-by-w image."""
    i0 = np.repeat(np.arange(k), k)
    j0 = np.tile(np.arange(k), k)
    i1 = np.repeat(np.arange(h - k + 1), w - k + 1)
    j1 = np.tile(np.arange(w - k + 1), h - k + 1)
    return i0[:, None] + i1[None, :], j0[:, None] + j1[None, :]


def _as_pair(X, Y=None):
    """A kernel helper: returns its own arguments (Y defaults to X)."""
    if Y is None:
        Y = X
    return X, Y


def _pass_on(x):
    return _sin_cos(x)


def _product(pair):
    a, b = pair
    return a * b


def _three(x):
    return x, x * 2.0, x * 3.0


class _Layer:
    def __init__(self, scale):
        self.scale = scale

    def split(self, z):
        return np.tanh(z), z * self.scale

    def forward(self, x):
        h, lin = self.split(x)
        return np.sum(h * lin)

    def scaled(self, x, *scales):
        return x * scales[0], x * scales[1]


LAYER = _Layer(0.5)


def returns_from_a_method_on_self(x):
    return LAYER.forward(x)


def returns_from_a_method(x):
    a, b = LAYER.split(x)
    c, d = LAYER.scaled(x, 2.0, 3.0)
    return np.sum(a + b * c * d)


def returns_looped_over(x):
    total = 0.0
    for v in _sin_cos(x):
        total = total + np.sum(v * v)
    return total


def returns_stacked_and_summed(x):
    return np.sum(np.stack(_sin_cos(x))) + np.sum(sum(_sin_cos(x) * 2)) + len(_sin_cos(x))


def returns_in_a_conditional_expression(x):
    a, b = _sin_cos(x) if np.sum(x) > 0.0 else (x, x * 2.0)
    return np.sum(a * b)


def returns_concatenated(x):
    t = _sin_cos(x) + (x,)
    return np.sum(t[2] * t[0])


def returns_in_a_list(x):
    ps = [_sin_cos(x), _sin_cos(x * 2.0)]
    return np.sum(ps[1][0] * ps[0][1])


def returns_pair(x):
    a, b = _sin_cos(x)
    return np.sum(a * b)


def returns_indexed(x):
    return np.sum(_sin_cos(x)[1] * 2.0)


def returns_nested(x):
    (a, b), c = _nested(x)
    return np.sum(a * b * c)


def returns_passed_on(x):
    return np.sum(_product(_sin_cos(x)))


def returns_through_a_chain(x):
    a, b = _pass_on(x)
    return np.sum(a - b * b)


def returns_in_branches(x):
    a, n = _scaled(x, True)
    b, m = _scaled(x, False)
    return np.sum(a * n + b * m)


def returns_chosen_when_it_runs(x):
    a, s = _by_sign(x)
    return np.sum(a * a) * s


def returns_held_in_a_name(x):
    p = _sin_cos(x)
    return np.sum(p[0] * p[1]) + len(p)


def returns_own_arguments(X):
    A, B = _as_pair(X)
    d = np.sum((A[:, None, :] - B[None, :, :]) ** 2, axis=-1)
    return np.sum(np.exp(-d / 2.0))


def returns_own_arguments_swapped(x):
    y = x * 2.0
    x, y = _as_pair(y, x)
    return np.sum(x * 3.0 + y * y)


def returns_to_chained_targets(x):
    p, q = r, s = _sin_cos(x)
    return np.sum(p * s + q * r)


def returns_from_a_local_def(x):
    def halves(t):
        return t * 0.5, t * t

    u, v = halves(x)
    return np.sum(u + v * u)


def returns_from_a_lambda(x):
    both = lambda t: (t * 2.0, np.tanh(t))  # noqa: E731
    u, v = both(x)
    return np.sum(u * v)


def conv_with_helpers(img, kern):
    top, bottom, left, right = _pad_widths(kern.shape[0])
    padded = np.pad(img, ((top, bottom), (left, right)))
    rows, cols = _im2col_indices(padded.shape[0], padded.shape[1], kern.shape[0])
    patches = padded[rows, cols]
    return np.sum(np.tanh(kern.ravel() @ patches))


def conv_indexing_the_tuple(img, kern):
    widths = _pad_widths(3)
    padded = np.pad(img, ((widths[0], widths[1]), (widths[2], widths[3])))
    idx = _im2col_indices(7, 7, 3)
    return np.sum(np.tanh(kern.ravel() @ padded[idx[0], idx[1]]))


# ---- unpacking ----------------------------------------------------------------------------------
def star_rest_of_a_literal(x):
    a, *rest = [x, x * 2.0, x * 3.0]
    return np.sum(a * rest[1]) + len(rest)


def star_init_of_a_helper(x):
    *init, last = _three(x)
    return np.sum(init[1] * last)


def star_discarded(x):
    first, *_ = _sin_cos(x)
    return np.sum(first)


def star_in_the_middle_of_an_array(x):
    a, *mid, z = x
    return np.sum(a * z) + len(mid)


def star_of_a_list_variable(x):
    xs = [x, np.tanh(x), x * 3.0]
    a, *rest = xs
    return np.sum(a * rest[0] + rest[1])


def lstsq_coefficients(A):
    coef, *_ = np.linalg.lstsq(A, np.array([1.0, 2.0, 0.5]), rcond=None)
    return np.sum(coef**2)


def shape_unpacked(x):
    n, t = x.shape
    *lead, last = x.shape
    return np.sum(x) * n * t + last * lead[0]


def names_swapped(x):
    a, b = x * 2.0, np.sin(x)
    a, b = b, a
    return np.sum(a * 3.0 + b)


def buffer_entries_swapped(v):
    y = v * 1.0
    y[0], y[1] = y[1], y[0]
    y[1], y[3] = y[3] * 2.0, y[1]
    return np.sum(y * np.arange(1.0, 5.0))


def deleted_name(x):
    a = x * 2.0
    b = np.tanh(a)
    del a
    return np.sum(b)


def deleted_then_bound_again(x):
    a = x * 2.0
    del a
    a = np.sin(x)
    return np.sum(a)


def deleted_dict_entry(x):
    d = {"a": x, "b": x * 2.0}
    del d["a"]
    d["a"] = np.cos(x)
    return np.sum(d["a"] * d["b"])


def deleted_on_one_branch(x):
    a = x * 2.0
    if np.sum(x) > 0.0:
        del a
        a = x * 4.0
    else:
        a = a * 3.0
    return np.sum(a * a)


# ---- star calls ---------------------------------------------------------------------------------
def _scale(x, y, scale=1.0):
    return x * y * scale


def _takes_any(x, *args, **kw):
    return x * args[0] * kw["scale"] + len(args)


def _forwards(x, *args, **kw):
    return _scale(x, *args, **kw)


def _options(x, **kw):
    return x * kw.get("scale", 1.0) + kw.get("shift", 0.5)


def star_kwargs_read_with_get(x):
    return np.sum(_options(x, scale=3.0) * _options(x))


def star_tuple_literal(x):
    return np.sum(_scale(*(x, x)))


def star_local_tuple_and_dict(x):
    args = (x, np.sin(x))
    kw = {"scale": 3.0}
    return np.sum(_scale(*args, **kw))


def star_dict_literal(x):
    return np.sum(_scale(x, x, **{"scale": 0.5}))


def star_to_numpy(x):
    pair = [x, np.cos(x)]
    return np.sum(np.multiply(*pair))


def star_helper_params(x):
    return np.sum(_takes_any(x, 2.0, np.sin(x), scale=3.0))


def star_params_forwarded(x):
    return np.sum(_forwards(x, x * 2.0, scale=0.5))


def star_local_def_params(x):
    def combine(a, *rest, **kw):
        return a * rest[1] + kw["b"]

    return np.sum(combine(x, 1.0, x * 3.0, b=2.0))


def star_shape_in_a_literal(x):
    return np.sum(x * np.ones((2, *x.shape))[1]) + np.sum(np.zeros((*x.shape, 2)))


def star_shape_to_random(x):
    noise = np.random.default_rng(0).random(x.shape) + 0.0 * np.random.rand(*x.shape)
    return np.sum(x * noise)


def star_reshape(x):
    shape = (3, 2)
    s = x.shape
    return np.sum(x.reshape(*shape) * np.arange(6.0).reshape(3, 2)) + np.sum(x.reshape(*s))


def star_splices_a_helpers_tuple(x):
    return np.sum(np.stack([*_sin_cos(x), x]) * 2.0)


def zip_of_pairs(x):
    pairs = [(x, 1.0), (np.sin(x), 2.0)]
    a, b = zip(*pairs)
    return np.sum(a[0] * b[1] + a[1] * b[0])


def zip_of_appended_pairs(x):
    pairs = []
    for i in range(4):
        pairs.append((x * (i + 1.0), i + 1.0))
    xs, ws = zip(*pairs)
    return np.sum(xs[3] * ws[0] + xs[1] * ws[2])


def zip_of_two_sequences(x):
    z = list(zip([x, np.sin(x)], (x * 3.0, x)))
    return np.sum(z[0][0] * z[1][1] + z[1][0])


def loop_with_a_starred_target(x):
    rows = [(x, 1.0, 2.0), (np.sin(x), 3.0, 4.0)]
    total = 0.0
    for a, *rest in rows:
        total = total + np.sum(a) * rest[1]
    return total


def loop_over_zip_of_pairs(x):
    pairs = [(x, 1.0), (x * 2.0, 2.0), (np.sin(x), 3.0)]
    total = 0.0
    for a, b, c in zip(*pairs):
        total = total + np.sum(a * b * c)
    return total


def loop_over_enumerate_zip_of_pairs(x):
    pairs = [(x, 1.0), (np.cos(x), 2.0)]
    total = 0.0
    for i, (a, b) in enumerate(zip(*pairs)):
        total = total + np.sum(a * b) * (i + 1)
    return total


def comprehension_with_a_starred_target(x):
    triples = [(x, 1.0, 5.0), (x * 2.0, 2.0, 6.0)]
    firsts = [a for a, *_ in triples]
    return np.sum(firsts[1] * np.tanh(firsts[0]))


def appended_tuple_literal(x):
    out = []
    out.append((np.tanh(x), 2.0))
    return np.sum(out[0][0] * out[0][1])


def tuple_literal_written_into_a_list(x):
    out = [x, x]
    out[0] = (x * 2.0, 1.0)
    return np.sum(out[0][0])


def get_of_a_dict_written(x):
    return np.sum(_get_written(x, a=2.0))


def _get_written(x, **kw):
    kw["b"] = x
    return kw.get("b", 1.0)


FORMS = [
    (returns_from_a_method_on_self, (X,)),
    (returns_from_a_method, (X,)),
    (returns_looped_over, (X,)),
    (returns_stacked_and_summed, (X,)),
    (returns_in_a_conditional_expression, (X,)),
    (returns_in_a_conditional_expression, (-X,)),
    (returns_concatenated, (X,)),
    (returns_in_a_list, (X,)),
    (returns_pair, (X,)),
    (returns_indexed, (X,)),
    (returns_nested, (X,)),
    (returns_passed_on, (X,)),
    (returns_through_a_chain, (X,)),
    (returns_in_branches, (X,)),
    (returns_chosen_when_it_runs, (X,)),
    (returns_chosen_when_it_runs, (-X,)),
    (returns_held_in_a_name, (X,)),
    (returns_own_arguments, (X,)),
    (returns_own_arguments_swapped, (X,)),
    (returns_to_chained_targets, (X,)),
    (returns_from_a_local_def, (X,)),
    (returns_from_a_lambda, (X,)),
    (conv_with_helpers, (IMG, KERN)),
    (conv_indexing_the_tuple, (IMG, KERN)),
    (star_rest_of_a_literal, (X,)),
    (star_init_of_a_helper, (X,)),
    (star_discarded, (X,)),
    (star_in_the_middle_of_an_array, (X,)),
    (star_of_a_list_variable, (X,)),
    (lstsq_coefficients, (np.array([[1.0, 0.5], [0.2, 2.0], [0.3, -0.7]]),)),
    (shape_unpacked, (X,)),
    (names_swapped, (X,)),
    (buffer_entries_swapped, (V,)),
    (deleted_name, (X,)),
    (deleted_then_bound_again, (X,)),
    (deleted_dict_entry, (X,)),
    (deleted_on_one_branch, (X,)),
    (deleted_on_one_branch, (-X,)),
    (star_kwargs_read_with_get, (X,)),
    (get_of_a_dict_written, (X,)),  # **kw is a local dict: an entry written, then read
    (star_tuple_literal, (X,)),
    (star_local_tuple_and_dict, (X,)),
    (star_dict_literal, (X,)),
    (star_to_numpy, (X,)),
    (star_helper_params, (X,)),
    (star_params_forwarded, (X,)),
    (star_local_def_params, (X,)),
    (star_shape_in_a_literal, (X,)),
    (star_shape_to_random, (X,)),
    (star_reshape, (X,)),
    (star_splices_a_helpers_tuple, (X,)),
    (zip_of_pairs, (X,)),
    (zip_of_appended_pairs, (X,)),
    (zip_of_two_sequences, (X,)),
    (loop_with_a_starred_target, (X,)),
    (loop_over_zip_of_pairs, (X,)),
    (loop_over_enumerate_zip_of_pairs, (X,)),
    (comprehension_with_a_starred_target, (X,)),
    (appended_tuple_literal, (X,)),
    (tuple_literal_written_into_a_list, (X,)),
]


@pytest.mark.parametrize(
    "f, args", [pytest.param(f, a, id=f"{f.__name__}-{k}") for k, (f, a) in enumerate(FORMS)]
)
def test_form_matches_finite_differences(f, args):
    check(f, args)
    check_value(f, args)


def test_conv_with_helpers_wrt_the_kernel():
    check(conv_with_helpers, (IMG, KERN), wrt=1)


# ---- the generated code ---------------------------------------------------------------------------
def test_unpacking_a_helpers_tuple_makes_no_tuple():
    src = sg.source(sg.grad(returns_pair))
    assert "check_unpack" not in src and "= (" not in src, src
    assert "a = np.sin(x)" in src and "b = np.cos(x)" in src, src


def test_returns_in_branches_get_one_variable_per_value():
    src = sg.source(sg.grad(returns_chosen_when_it_runs))
    assert "check_unpack" not in src and "= (_" not in src, src


# ---- has_aux and the outermost function's tuple ----------------------------------------------------
def _loss_and_state(w):
    h = np.tanh(w)
    return np.sum(h * h), (h, 3)


def aux_unpacked_then_returned(w):
    loss, state = _loss_and_state(w)
    return loss * 2.0, state


def aux_pair_through_a_name(w):
    pair = _loss_and_state(w * 0.5)
    return pair


@pytest.mark.parametrize("f", [aux_unpacked_then_returned, aux_pair_through_a_name])
@pytest.mark.parametrize("specialize", [False, True])
def test_has_aux_with_helpers_returning_tuples(f, specialize):
    g, aux = sg.grad(f, has_aux=True, specialize=specialize)(V)
    assert_close(g, fd_grad(lambda w: f(w)[0], (V,), 0))
    want = f(V.copy())[1]
    assert_close(aux[0], want[0]) and aux[1] == want[1]


def vector_pair(x):
    return np.sin(x) * 2.0, np.cos(x)


def vector_pair_from_helpers(x):
    if np.sum(x) > 0.0:
        return _sin_cos(x)
    return np.tanh(x), x * x


@pytest.mark.parametrize("f", [vector_pair, vector_pair_from_helpers])
@pytest.mark.parametrize("x", [V, -V])
def test_vjp_of_a_tuple_output(f, x):
    value, pullback = sg.vjp(f)(x)
    want = f(x.copy())
    assert isinstance(value, tuple) and len(value) == 2
    for v, w in zip(value, want):
        assert_close(v, w, what="value")
    ct = (np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.3, 0.1, -1.0, 2.0]))
    got = pullback(ct)
    fd = fd_grad(lambda t: sum(float(np.sum(v * c)) for v, c in zip(f(t), ct)), (x,), 0)
    assert_close(got, fd)


def test_vjp_of_a_tuple_output_needs_a_tuple_cotangent():
    with pytest.raises(UsageError, match="tuple of 2 cotangents"):
        sg.vjp(vector_pair)(V)[1](np.ones(4))
    with pytest.raises(UsageError, match=r"cotangent\[1\] has shape \(3,\)"):
        sg.vjp(vector_pair)(V)[1]((np.ones(4), np.ones(3)))


def test_grad_of_a_tuple_output_is_refused():
    with pytest.raises(UnsupportedSyntaxError, match="returns a tuple of 2 values") as e:
        sg.grad(vector_pair)(V)
    assert e.value.lineno == vector_pair.__code__.co_firstlineno + 1 and "has_aux" in e.value.hint
    with pytest.raises(NonScalarOutputError, match="tuple of 2 values.*has_aux"):
        sg.grad(aux_pair_through_a_name)(V)


# ---- refused, located ---------------------------------------------------------------------------
def star_of_unknown_length_to_a_rule(x):
    xs = list(x)
    return np.sum(np.add(*xs))  # E


def star_of_unknown_length_to_a_helper(x):
    return np.sum(_scale(*x))  # E


def star_star_of_a_parameter(x, options):
    return np.sum(_scale(x, x, **options))  # E


def unpack_count_known_now(x):
    a, b = _three(x)  # E
    return np.sum(a * b)


def starred_count_known_now(x):
    a, b, c, *rest = _sin_cos(x)  # E
    return np.sum(a)


def read_after_del(x):
    a = x * 2.0
    del a
    return np.sum(a)  # E


def del_in_a_loop(x):
    a = x * 1.0
    for _ in range(len(x)):
        del a  # E
        a = x
    return np.sum(a)


def del_list_entry(x):
    xs = [x, x * 2.0]
    del xs[0]  # E
    return np.sum(xs[0])


def zip_strict(x):
    a, b = zip([x, x], [x, x], strict=True)  # E
    return np.sum(a[0])


REFUSED = [
    (star_of_unknown_length_to_a_rule, (V,), "number of values it unpacks is not known", "*xs"),
    (star_of_unknown_length_to_a_helper, (V[:2],), "number of values it unpacks", "*x"),
    (star_star_of_a_parameter, (V, {"scale": 2.0}), "keys of this dict are not known", "**"),
    (unpack_count_known_now, (V,), "cannot unpack 3 values into 2 targets", "a, b"),
    (starred_count_known_now, (V,), "cannot unpack 2 values into at least 3", "a, b"),
    (read_after_del, (V,), "'a' is read after `del a`", "a)"),
    (del_in_a_loop, (V,), "del inside a loop", "del"),
    (del_list_entry, (V,), "cannot be deleted in place", "xs[0]"),
    (zip_strict, (V,), "no strict=", "zip("),
]


@pytest.mark.parametrize("f, args, msg, col", REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_refused_with_a_located_error(f, args, msg, col):
    with pytest.raises(UnsupportedSyntaxError) as e:
        sg.grad(f)(*args)
    err = e.value
    assert msg in err.message, err.message
    lines = open(__file__, encoding="utf-8").read().splitlines()
    start = f.__code__.co_firstlineno
    line = next(k for k in range(start, len(lines) + 1) if lines[k - 1].endswith("# E"))
    assert err.lineno == line and err.hint, (err.lineno, line)
    assert lines[line - 1][err.offset - 1 :].startswith(col), (err.offset, col)


def rows_swapped(x):
    y = x * 1.0
    y[0], y[1] = y[1], y[0]
    return np.sum(y * np.arange(6.0).reshape(2, 3))


def test_a_swap_of_rows_is_refused_when_it_runs():
    # numpy reads y[1] and y[0] as views: Python itself leaves both rows equal, not swapped
    with pytest.raises(UnsupportedValueError, match=r"test_lang_returns.py:\d+: .*y\[\[0, 1\]\]"):
        sg.grad(rows_swapped)(X)


def test_a_star_of_the_wrong_length_when_it_runs_is_refused():
    def grows(x):
        args = [x, x]
        more = _grow(args)  # (the helper appends to the list args names)
        return np.sum(_scale(*args)) + len(more)

    with pytest.raises(SourcegradError, match="'args' may share memory with 'xs'"):
        sg.grad(grows)(V)  # (refused where the helper grows the list another name reads)
    from sourcegrad.runtime import check_star_length

    check_star_length([1.0, 2.0], 2, "*args")
    with pytest.raises(UnsupportedValueError, match=r"\*args unpacks 3 values here"):
        check_star_length([1.0, 2.0, 3.0], 2, "*args")


def grows_through_a_helper(x):
    xs = [x * 2.0]
    ys = _grow(xs)
    return np.sum(ys[0] * ys[1])


def test_a_helper_growing_a_list_argument():
    # the helper appends to the caller's list, as Python does (once a NameError)
    check(grows_through_a_helper, (X,))


def _grow(xs):
    xs.append(1.0)
    return xs


# ---- properties ---------------------------------------------------------------------------------
@given(n=st.integers(2, 6), specialize=st.booleans())
def test_starred_unpacking_of_a_list_of_any_length(n, specialize):
    """``head, *mid, tail`` of a list of n differentiable values: the count checked when it
    runs, the middle a list."""

    def f(x):
        values = []
        for j in range(n):
            values.append(np.sin(x * (j + 1.0)))
        head, *mid, tail = values
        total = np.sum(head * tail)
        for m in mid:
            total = total + 0.5 * np.sum(m * m)
        return total + len(mid)

    g = sg.grad(f, specialize=specialize)(V)
    assert_close(g, fd_grad(f, (V,), 0))
