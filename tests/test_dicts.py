"""Dicts as people use them: a dict parameter iterated by key, its keys/values/items views as
values, ``sorted(params)``, and a local dict literal with string-constant keys (lowered to one
local variable per key). Each gradient is checked against central finite differences, leaf by
leaf, in both code paths (``specialize=False`` and the default)."""

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.errors import UnsupportedSyntaxError

from .oracle import assert_close, fd_grad


def _fd(f, args, i):
    """Finite differences of ``f`` in ``args[i]``, leaf by leaf through dicts and lists."""
    return _fd_leaves(lambda a: f(*args[:i], a, *args[i + 1 :]), args[i])


def _fd_leaves(g, a):
    if isinstance(a, dict):
        return {k: _fd_leaves(lambda v, k=k: g({**a, k: v}), a[k]) for k in a}
    if isinstance(a, list):
        return [_fd_leaves(lambda v, j=j: g(a[:j] + [v] + a[j + 1 :]), a[j]) for j in range(len(a))]
    return fd_grad(g, (a,), 0)


def _assert_tree(got, want, what):
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), what
        for k in want:
            _assert_tree(got[k], want[k], f"{what}[{k!r}]")
    elif isinstance(want, list):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), what
        for j, (g, w) in enumerate(zip(got, want)):
            _assert_tree(g, w, f"{what}[{j}]")
    else:
        assert_close(got, want, what=what)


def check(f, args, wrt=0):
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    for specialize in (False, True):
        g = sg.grad(f, wrt=wrt, specialize=specialize)
        got = g(*args)
        got = got if isinstance(wrt, tuple) else (got,)
        for i, gi in zip(wrts, got):
            _assert_tree(gi, _fd(f, args, i), f"{f.__name__} d/d{i} (specialize={specialize})")


# ---- a dict parameter ---------------------------------------------------------------------------
def for_keys(params, x):
    total = 0.0
    for k in params:
        total = total + np.sum(params[k] * x)
    return total


def keys_method(params, x):
    total = 0.0
    for k in params.keys():
        total = total + np.sum(params[k] ** 2) * x[0]
    return total


def sum_values(params):
    return np.sum(sum(params.values()) ** 2)


def list_values(params):
    vs = list(params.values())
    return np.sum(np.stack(vs) ** 2)


def stack_values(params):
    return np.sum(np.stack(list(params.values())) * np.array([[1.0], [2.0]]))


def values_loop(params):
    total = 0.0
    for v in params.values():
        total = total + np.sum(np.sin(v))
    return total


def items_list(params):
    total = 0.0
    for k, v in list(params.items()):
        total = total + np.sum(v * params[k])
    return total


def keys_list(params):
    ks = list(params.keys())
    return np.sum(params[ks[0]] * params[ks[-1]])


def sorted_keys(params):
    total = 0.0
    for k in sorted(params):
        total = total * 0.5 + np.sum(params[k] ** 3)
    return total


def for_name_over_a_list(xs):  # the same form over a list of arrays indexes it by position
    total = 0.0
    for k in xs:
        total = total + np.sum(k**2)
    return total


def sgd_step(params, x, y):
    pred = x @ params["w"] + params["b"]
    loss = np.mean((pred - y) ** 2)
    reg = 0.0
    for name in params:
        reg = reg + 1e-2 * np.sum(params[name] ** 2)
    return loss + reg


def comprehension_over_keys(params):
    return np.sum(np.stack([params[k] for k in params]) ** 2)


def generator_over_keys(params):
    return sum(np.sum(params[k] ** 2) for k in params)


def comprehension_over_values(params):
    return np.sum(np.stack([v * 2.0 for v in params.values()]) ** 2)


def enumerate_values(params):
    t = 0.0
    for i, v in enumerate(params.values()):
        t = t + (i + 1.0) * np.sum(v**2)
    return t


def zip_values(params, xs):
    t = 0.0
    for v, x in zip(params.values(), xs):
        t = t + np.sum(v * x)
    return t


def list_of_a_dict(params):
    ks = list(params)
    return np.sum(params[ks[0]] ** 2) * len(params)


def list_of_dicts(layers, x):
    for layer in layers:
        for k in layer:
            x = np.tanh(x * layer[k])
    return np.sum(x)


# ---- a local dict literal -------------------------------------------------------------------------
def cache_dict(x):
    cache = {}
    h = np.tanh(x)
    cache["h"] = h
    cache["h2"] = cache["h"] * 2.0
    cache["h2"] += x
    return np.sum(cache["h"] * cache["h2"])


def literal_dict(x, y):
    d = {"a": x, "b": y * 2.0}
    return np.sum(d["a"] * d["b"])


def dict_in_loop(x):
    acts = {"h": x}
    for _ in range(3):
        acts["h"] = np.tanh(acts["h"] * 1.5)
    return np.sum(acts["h"])


def dict_in_branch(x):
    out = {"y": x * 1.0}
    if np.sum(x) > 0:
        out["y"] = out["y"] ** 2
    else:
        out["y"] = -out["y"]
    return np.sum(out["y"])


def dict_unpack_into(x):
    d = {}
    d["a"], d["b"] = x[0], x[1:]
    return d["a"] * np.sum(d["b"])


rng = np.random.default_rng(0)
P = {"w": rng.normal(size=3), "b": rng.normal(size=3)}
X, Y = rng.normal(size=3), rng.normal(size=3)


@pytest.mark.parametrize(
    "f,args,wrt",
    [
        (for_keys, (P, X), (0, 1)),
        (keys_method, (P, X), (0, 1)),
        (sum_values, (P,), 0),
        (list_values, (P,), 0),
        (stack_values, (P,), 0),
        (values_loop, (P,), 0),
        (items_list, (P,), 0),
        (keys_list, (P,), 0),
        (sorted_keys, (P,), 0),
        (
            sgd_step,
            (
                {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)},
                rng.normal(size=(4, 3)),
                rng.normal(size=(4, 2)),
            ),
            (0, 1),
        ),
        (comprehension_over_keys, (P,), 0),
        (generator_over_keys, (P,), 0),
        (comprehension_over_values, (P,), 0),
        (enumerate_values, (P,), 0),
        (zip_values, (P, [X, Y]), 0),
        (list_of_a_dict, (P,), 0),
        (list_of_dicts, ([P, {"u": Y}], X), (0, 1)),
        (cache_dict, (X,), 0),
        (literal_dict, (X, Y), (0, 1)),
        (dict_in_loop, (X,), 0),
        (dict_in_branch, (X,), 0),
        (dict_in_branch, (-np.abs(X),), 0),
        (dict_unpack_into, (X,), 0),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_dict_gradients(f, args, wrt):
    check(f, args, wrt)


def test_for_name_over_a_list_still_indexes_by_position():
    check(for_name_over_a_list, ([X, 2.0 * Y],), 0)


def test_sorted_keys_order_matters():
    # the running total halves: the gradient of each leaf depends on its place in sorted order
    g = sg.grad(sorted_keys)({"z": X, "a": Y})
    assert_close(g["a"], 0.5 * 3 * Y**2)
    assert_close(g["z"], 3 * X**2)


# ---- what stays refused, with a located message ----------------------------------------------------
def returns_dict(x):
    d = {"a": x}
    return d


def passes_dict(x):
    d = {"a": x}
    return np.sum(helper(d))


def helper(d):
    return d["a"]


def non_constant_key(x, k):
    d = {}
    d[k] = x
    return np.sum(x)


def int_key(x):
    d = {0: x}
    return np.sum(d[0])


def missing_key(x):
    d = {"a": x}
    return np.sum(d["b"])


def loops_over_local_dict(x):
    d = {"a": x}
    total = 0.0
    for k in d:
        total = total + np.sum(d[k])
    return total


def local_dict_method(x):
    d = {"a": x}
    return np.sum(d.get("a"))


def rebound_dict(x):
    d = {"a": x}
    d = x
    return np.sum(d)


def dict_in_condition(x):
    d = {"a": x}
    if "a" in d:
        return np.sum(x)
    return np.sum(x * 2.0)


def dict_argument_literal(x):
    return np.sum(helper({"a": x}))


def test_a_dict_literal_passed_as_a_value_gives_each_entry_its_gradient():
    for specialize in (False, True):
        assert_close(
            sg.grad(dict_argument_literal, specialize=specialize)(X),
            fd_grad(dict_argument_literal, (X,), 0),
        )


@pytest.mark.parametrize(
    "f,fragment,line_text",
    [
        (returns_dict, "local dict 'd'", "return d"),
        (passes_dict, "local dict 'd'", "helper(d)"),
        (non_constant_key, "string constants", "d[k] = x"),
        (int_key, "string constants", "d = {0: x}"),
        (missing_key, "no entry 'b'", 'd["b"]'),
        (rebound_dict, "local dict literal must be the only value", 'd = {"a": x}'),
    ],
    ids=lambda v: getattr(v, "__name__", None) if callable(v) else None,
)
def test_refused_forms(f, fragment, line_text):
    with pytest.raises(UnsupportedSyntaxError) as info:
        sg.grad(f)(X)
    e = info.value
    assert fragment in str(e)
    assert e.filename.endswith("test_dicts.py")
    assert line_text in e.text
    assert "hint" in str(e).lower() or getattr(e, "hint", None)


@pytest.mark.parametrize("f", [loops_over_local_dict, local_dict_method, dict_in_condition])
def test_local_dict_used_as_a_whole_where_its_keys_are_known(f):
    # once refused: what the dict holds is known when the function is compiled (more in
    # test_lang_statements.py)
    value, _ = sg.value_and_grad(f)(X)
    assert_close(value, f(X))
    check(f, (X,))


def sorted_ints(x, order):
    t = 0.0
    for i in sorted(order):
        t = t * 0.5 + x[i]
    return t


def sorted_floats(x, vals):
    t = 0.0
    for v in sorted(vals):
        t = t + x * v
    return np.sum(t)


def test_sorted_of_integers_still_works():
    for specialize in (False, True):
        got = sg.grad(sorted_ints, specialize=specialize)(X, [2, 0, 1])
        assert_close(got, fd_grad(lambda x: sorted_ints(x, [2, 0, 1]), (X,), 0))


def test_sorted_of_floats_is_refused_not_silently_undifferentiated():
    from sourcegrad.errors import UnsupportedValueError

    with pytest.raises(UnsupportedValueError, match="np.sort"):
        sg.grad(sorted_floats)(X, [2.0, 0.5])


# ---- the dict a loop reads is the one it started with ---------------------------------------------
def items_target_rebinds_the_dict(p, x):
    s = 0.0
    for k, p in p.items():
        s = s + np.sum(p**2 * x)
    return s + np.sum(p)


def values_body_rebinds_the_dict(p, x, q):
    s = 0.0
    for v in p.values():
        p = q
        s = s + np.sum(v * np.sin(x))
    return s + np.sum(p["u"])


def keys_body_rebinds_the_dict(p, x, q):
    s = 0.0
    for k in p:
        s = s + np.sum(p[k] * x)
        p = q
    return s + np.sum(p["u"] * x)


@pytest.mark.parametrize(
    "f", [items_target_rebinds_the_dict, values_body_rebinds_the_dict, keys_body_rebinds_the_dict]
)
def test_a_loop_reads_the_dict_it_started_with(f):
    args = (P, X, {"u": Y, "w": 2.0 * Y, "b": -Y})[: f.__code__.co_argcount]
    value, _ = sg.value_and_grad(f)(*args)
    assert_close(value, f(*args), 1e-12, 1e-12, what="value")
    check(f, args, tuple(range(len(args))))


# ---- entries by position are not what iterating a dict or a set gives ------------------------------
def enumerate_dict_argument(x, counts):
    s = 0.0
    for i, k in enumerate(counts):
        s = s + (i + 1) * x[k] ** 2
    return s


def zip_dict_argument(x, counts):
    s = 0.0
    for k, xi in zip(counts, x):
        s = s + x[k] * xi
    return s


def reversed_dict_argument(x, counts):
    s = 0.0
    for k in reversed(counts):
        s = s * 0.5 + x[k]
    return s


def loop_over_set_argument(x, counts):
    s = 0.0
    for k in counts:
        s = s + x[k]
    return s


@pytest.mark.parametrize(
    "f, counts",
    [
        (enumerate_dict_argument, {0: 1, 1: 1, 2: 0}),
        (zip_dict_argument, {0: 1, 1: 1, 2: 0}),
        (reversed_dict_argument, {0: 1, 1: 1, 2: 0}),
        (loop_over_set_argument, {2, 0}),
        (enumerate_dict_argument, {2: 1, 0: 1}.keys()),
    ],
    ids=["enumerate", "zip", "reversed", "set", "keys-view"],
)
def test_a_dict_set_or_view_argument_read_by_position_is_refused(f, counts):
    """Read by position, {0: 1, 1: 1, 2: 0} would give its values for its keys: refused when the
    loop starts, never a silently wrong gradient."""
    from sourcegrad.errors import UnsupportedValueError

    with pytest.raises(UnsupportedValueError, match="loop"):
        sg.grad(f)(X, counts)
