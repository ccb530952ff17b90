"""``grad(f, has_aux=True)`` and ``value_and_grad(f, has_aux=True)``, as in JAX: ``f`` returns
``(loss, aux)``; the loss is differentiated, aux is returned as computed and has no gradient."""

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.errors import NonScalarOutputError, SourcegradError, UnsupportedSyntaxError

from .oracle import assert_close, fd_grad, fd_vjp

SPECIALIZE = [pytest.param(False, id="general"), pytest.param(True, id="specialized")]


def _loss_only(f):
    return lambda *args: f(*args)[0]


def _x(seed=0, shape=(4, 3)):
    return np.random.default_rng(seed).standard_normal(shape)


def simple(w, x):
    h = np.tanh(x @ w)
    loss = np.sum(h**2)
    return loss, h


def early(w, x):
    h = np.tanh(x @ w)
    loss = np.sum(h**2)
    if loss > 1.0:
        return 2.0 * loss, (h, 1)
    return loss, (h, 0)


def in_loop(w, x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc = acc + np.sum(np.sin(x[i] * w))
        if acc > 0.5:
            return acc, i
    return acc, -1


def in_unrolled_loop(w, x):
    s = 0.0
    for i in range(3):  # unrolled at compile time (unroll=8)
        s = s + np.sum(np.sin(w * x[i]))
        if s > 0.3:
            return s, i
    return s, -1


def through_variable(w, x):
    h = np.tanh(x @ w)
    out = (np.sum(h * h), np.mean(h))
    return out


def aux_of_loss(w, x):
    loss = np.sum(np.exp(x @ w))
    return loss, loss * 3.0 + w  # aux reads active values: still no gradient


def aux_const(w, x):
    return np.sum(np.cos(x @ w)), None


def aux_list(w, x):
    h = x @ w
    return np.sum(h**3), [h, np.max(h)]


def two_params(w, b, x):
    z = x @ w + b
    return np.sum(z * z), z


def mutating(w, x):
    h = x @ w
    h[0] = 2.0 * h[0]
    loss = np.sum(h**2)
    return loss, h


CASES = [
    simple,
    early,
    in_loop,
    in_unrolled_loop,
    through_variable,
    aux_of_loss,
    aux_const,
    aux_list,
    mutating,
]


def _expected_aux(f, args):
    return f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])[1]


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for p, q in zip(a, b):
            _same(p, q)
    elif a is None:
        assert b is None
    else:
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)


@pytest.mark.parametrize("specialize", SPECIALIZE)
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("scale", [0.2, 1.0])
def test_grad_and_value_and_grad_against_finite_differences(f, specialize, scale):
    w, x = scale * _x(1, (3,)), _x(2)
    args = (w, x)
    want_grad = fd_grad(_loss_only(f), args, 0)
    want_loss, want_aux = f(w.copy(), x.copy())
    g, aux = sg.grad(f, has_aux=True, specialize=specialize)(w, x)
    assert_close(g, want_grad)
    _same(aux, want_aux)
    (loss, aux2), g2 = sg.value_and_grad(f, has_aux=True, specialize=specialize)(w, x)
    assert_close(loss, want_loss, what="loss")
    _same(aux2, want_aux)
    assert_close(g2, want_grad)


@pytest.mark.parametrize("specialize", SPECIALIZE)
def test_wrt_tuple(specialize):
    w, b, x = _x(3, (3,)), _x(4, (4,)), _x(5)
    (gw, gb), z = sg.grad(two_params, wrt=(0, 1), has_aux=True, specialize=specialize)(w, b, x)
    assert_close(gw, fd_grad(_loss_only(two_params), (w, b, x), 0))
    assert_close(gb, fd_grad(_loss_only(two_params), (w, b, x), 1))
    _same(z, x @ w + b)
    (loss, z2), grads = sg.value_and_grad(
        two_params, wrt=("w",), has_aux=True, specialize=specialize
    )(w, b, x)
    assert isinstance(grads, tuple) and len(grads) == 1
    assert_close(grads[0], gw)
    _same(z2, z)


@pytest.mark.parametrize("specialize", SPECIALIZE)
def test_decorator_forms(specialize):
    @sg.grad(has_aux=True, specialize=specialize)
    def dg(w, x):
        return np.sum(np.tanh(x @ w)), x.shape[0]

    @sg.value_and_grad(wrt=1, has_aux=True, specialize=specialize)
    def vg(w, x):
        y = w * x
        return np.sum(y * y), y

    w, x = _x(6, (3,)), _x(7)
    g, n = dg(w, x)
    assert n == 4
    assert_close(g, fd_grad(lambda w, x: np.sum(np.tanh(x @ w)), (w, x), 0))
    (loss, y), gx = vg(w, x)
    _same(y, w * x)
    assert_close(gx, fd_grad(lambda w, x: np.sum((w * x) ** 2), (w, x), 1))


def test_check_finite():
    w, x = _x(11, (3,)), _x(12)
    g, aux = sg.grad(early, has_aux=True, check_finite=True)(w, x)
    assert_close(g, fd_grad(_loss_only(early), (w, x), 0))
    _same(aux, early(w, x)[1])


def test_aux_carries_no_gradient():
    # aux depends on w but is not an input to anything differentiated: the gradient is the loss's
    w = _x(8, (3,))

    def f(w):
        return np.sum(w), np.exp(w)

    g, aux = sg.grad(f, has_aux=True)(w)
    assert_close(g, np.ones(3))
    _same(aux, np.exp(w))


def test_without_has_aux_unchanged():
    w, x = _x(9, (3,)), _x(10)

    def plain(w, x):
        return np.sum(np.tanh(x @ w) ** 2)

    assert_close(sg.grad(plain)(w, x), fd_grad(_loss_only(simple), (w, x), 0))
    with pytest.raises(UnsupportedSyntaxError, match="returns a tuple of 2 values"):
        sg.grad(simple)(w, x)  # a pair is the value only with has_aux=True


def test_source_is_readable():
    src = sg.source(sg.value_and_grad(simple, has_aux=True))
    assert "aux = h" in src
    assert src.rstrip().splitlines()[-1].strip() == "return (loss, aux), finalize(w_bar, w)"
    assert "aux_bar" not in src and "h_bar" in src


def test_literal_return_not_a_pair():
    def three(w):
        return np.sum(w), w, w

    with pytest.raises(
        UnsupportedSyntaxError, match=r"three is differentiated with has_aux=True.*3 values"
    ):
        sg.grad(three, has_aux=True)(np.ones(3))

    def single(w):
        return 2.0

    with pytest.raises(UnsupportedSyntaxError, match=r"single is differentiated with has_aux=True"):
        sg.grad(single, has_aux=True)(np.ones(3))


@pytest.mark.parametrize("specialize", SPECIALIZE)
def test_runtime_value_not_a_pair(specialize):
    def lone(w):
        s = np.sum(w * w)
        return s

    with pytest.raises(
        SourcegradError, match=r"lone is differentiated with has_aux=True.*returned a"
    ):
        sg.grad(lone, has_aux=True, specialize=specialize)(np.ones(3))

    def triple(w):
        t = (np.sum(w * w), w, w)
        return t

    with pytest.raises(
        SourcegradError, match=r"triple is differentiated with has_aux=True.*tuple of 3"
    ):
        sg.value_and_grad(triple, has_aux=True, specialize=specialize)(np.ones(3))


def test_non_scalar_loss_refused():
    with pytest.raises(NonScalarOutputError):
        sg.grad(lambda w: (w * 2.0, w), has_aux=True)(np.ones(3))


# ---- the pair returned by a helper: ``return helper(...)`` ---------------------------------------


def _pair_helper(w, x):
    h = np.tanh(x @ w)
    if np.sum(h) > 0.0:
        return np.sum(h**2), (h, 1)
    return 3.0 * np.sum(h**2), (h, 0)


def _pair_in_variable(w, x):
    h = np.sin(x @ w)
    pair = (np.sum(h * h), h)
    return pair


def _pair_forwarded(w, x):
    return _pair_helper(w * 2.0, x)


def via_helper(w, x):
    return _pair_helper(w, x)


def via_helper_variable(w, x):
    return _pair_in_variable(w, x)


def via_two_helpers(w, x):
    return _pair_forwarded(w, x)


def via_local_def(w, x):
    def inner(v):
        z = np.cos(x @ v)
        return np.sum(z), z

    return inner(w * 1.5)


def helper_pair_variable_in_a_variable(w, x):
    out = _pair_in_variable(w, x)  # (a helper may return a variable holding a tuple)
    return out


def via_helper_after_branch(w, x):
    if np.sum(w) > 0.0:
        return np.sum(w * w), None
    return _pair_helper(w, x)


HELPER_CASES = [
    via_helper,
    via_helper_variable,
    via_two_helpers,
    via_local_def,
    via_helper_after_branch,
    helper_pair_variable_in_a_variable,
]


@pytest.mark.parametrize("specialize", SPECIALIZE)
@pytest.mark.parametrize("f", HELPER_CASES, ids=lambda f: f.__name__)
# both signs: both branches of _pair_helper and via_helper_after_branch
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_pair_returned_by_a_helper(f, specialize, sign):
    w, x = sign * np.abs(_x(21, (3,))), np.abs(_x(22))
    want_loss, want_aux = f(w.copy(), x.copy())
    g, aux = sg.grad(f, has_aux=True, specialize=specialize)(w, x)
    assert_close(g, fd_grad(_loss_only(f), (w, x), 0))
    _same(aux, want_aux)
    (loss, aux2), _ = sg.value_and_grad(f, has_aux=True, specialize=specialize)(w, x)
    assert_close(loss, want_loss, what="loss")
    _same(aux2, want_aux)


def _three_values(w):
    return np.sum(w), w, w


def _one_value(w):
    return np.sum(w)


def helper_gives_three(w):
    return _three_values(w)


def helper_gives_one(w):
    return _one_value(w * 2.0)


def helper_literal_pair_in_a_variable(w):
    out = _pair_helper(w, np.ones((2, 3)))  # a helper's pair held in a variable, then returned
    return out


def test_a_helper_that_does_not_give_a_pair_is_named():
    with pytest.raises(
        UnsupportedSyntaxError,
        match=r"_three_values gives the value of helper_gives_three, which "
        r"is differentiated with has_aux=True, so it must return a pair \(loss, aux\), but this "
        r"return gives 3 values",
    ):
        sg.grad(helper_gives_three, has_aux=True)(np.ones(3))
    with pytest.raises(
        SourcegradError,
        match=r"_one_value gives the value of helper_gives_one, which is "
        r"differentiated with has_aux=True, so it must return a pair \(loss, aux\), but it returned a",
    ):
        sg.grad(helper_gives_one, has_aux=True)(np.ones(3))


def test_a_helpers_pair_held_in_a_variable_is_the_pair():
    # the helper's tuple is a value like any other: held in a name, then returned as the pair
    w = np.abs(_x(25, (3,)))
    g, aux = sg.grad(helper_literal_pair_in_a_variable, has_aux=True)(w)
    assert_close(g, fd_grad(_loss_only(helper_literal_pair_in_a_variable), (w,), 0))
    _same(aux, helper_literal_pair_in_a_variable(w.copy())[1])


def test_a_helper_called_elsewhere_keeps_its_own_returns():
    # only the call in `return helper(...)` gives the pair; the same helper called for a value
    # in the same function returns its one value
    def f(w, x):
        s = _one_value(w * 3.0)
        return _pair_helper(w * s, x)

    w, x = 0.1 * np.abs(_x(23, (3,))), np.abs(_x(24))
    g, aux = sg.grad(f, has_aux=True)(w, x)
    assert_close(g, fd_grad(_loss_only(f), (w, x), 0))
    _same(aux, f(w, x)[1])


# ---- vjp(f, has_aux=True): (value, pullback, aux), as jax.vjp ------------------------------------


def vector_with_aux(w, x):
    h = np.tanh(x @ w)
    return h * h, (np.sum(h), h)


def vector_mutating(w, x):
    h = x @ w
    h[0] = 2.0 * h[0]
    return np.sin(h), (h, 1)


@pytest.mark.parametrize("specialize", SPECIALIZE)
@pytest.mark.parametrize(
    "f",
    [vector_with_aux, vector_mutating, simple, early, via_helper, mutating],
    ids=lambda f: f.__name__,
)
def test_vjp_with_aux(f, specialize):
    w, x = 0.5 * _x(31, (3,)), _x(32)
    want_value, want_aux = f(w.copy(), x.copy())
    value, pullback, aux = sg.vjp(f, has_aux=True, specialize=specialize)(w, x)
    assert_close(value, want_value, what="value")
    _same(aux, want_aux)
    ct = _x(33, np.shape(want_value))
    g = pullback(ct)
    assert_close(g, fd_vjp(_loss_only(f), (w, x), 0, ct))
    _same(aux, want_aux)  # the pullback (restoring what the forward overwrote) leaves aux as it was


def test_vjp_with_aux_wrt_tuple():
    w, b, x = _x(34, (3,)), _x(35, (4,)), _x(36)
    value, pullback, z = sg.vjp(two_params, wrt=(0, 1), has_aux=True)(w, b, x)
    _same(z, x @ w + b)
    gw, gb = pullback(1.0)
    assert_close(gw, fd_grad(_loss_only(two_params), (w, b, x), 0))
    assert_close(gb, fd_grad(_loss_only(two_params), (w, b, x), 1))


def test_vjp_without_has_aux_is_a_pair():
    out = sg.vjp(lambda w: np.sin(w))(np.ones(3))
    assert isinstance(out, tuple) and len(out) == 2


def test_aux_holding_an_array_the_backward_restores_is_not_changed():
    # mutating() writes h[0]; the backward restores it in place: an aux tuple holding h must not see it
    def f(w, x):
        h = x @ w
        h[0] = 2.0 * h[0]
        return np.sum(h**2), (h, [h, 1])

    w, x = _x(37, (3,)), _x(38)
    want = f(w.copy(), x.copy())[1]
    _, aux = sg.grad(f, has_aux=True)(w, x)
    _same(aux, want)
    (_, aux), _ = sg.value_and_grad(f, has_aux=True)(w, x)
    _same(aux, want)
