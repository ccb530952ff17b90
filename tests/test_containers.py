"""Containers: dict, list and tuple arguments and results, lists built with `append`,
comprehensions, unpacking, `zip` over lists. Each against finite differences.
"""

import logging
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sourcegrad as sg

from .corpus.harness import check
from .flow import SEEDS, SIZES, rng_of


# ==== containers ==================================================================================


def mlp(params, x):
    h = np.tanh(x @ params["W1"] + params["b1"])
    out = h @ params["W2"] + params["b2"]
    return np.mean(out * out)


def deep_mlp(layers, x):
    h = x
    for layer in layers:
        h = np.tanh(h @ layer["W"] + layer["b"])
    return np.sum(h * h)


def tuple_arg(t, x):
    a, b = t
    return np.sum(np.sin(a * x) * b)


def stack_appended(x, n):
    hs = []
    h = x
    for i in range(n):
        h = np.tanh(h * 1.1 + i * 0.1)
        hs.append(h)
    hs.append(x * 2.0)
    return np.sum(np.stack(hs) ** 2)


def concat_appended(x, n):
    parts = []
    for i in range(n):
        parts.append(x[i:] * (i + 1.0))
    parts.append(np.sin(x))
    return np.sum(np.concatenate(parts) * 0.5)


def sum_appended(x, n):
    terms = []
    for i in range(n):
        terms.append(np.sum(x ** (i + 1)))
    terms.append(np.sum(x) * 0.0)
    return sum(terms)


def unpacking(x):
    a, b, c = x[0], x[1], x[2]
    lo, hi = np.min(x), np.max(x)
    a, b = b * c, a
    return a * b + np.sin(c) * lo * hi


def unpacking_nested(x):
    a, b, c = x[0], x[1], x[2]
    (p, q), r = (a * b, b * c), np.sin(c)
    return p + q * r


def index_tuple_literal(x):
    p = (x[0] * x[1], x[2])[0]  # the other entry gets no gradient
    return p * x[3]


def chained_unpacking(x):
    p, q = r, s = (x[0] * x[1], x[2])
    return p * s + q * np.sin(r)


def unpacking_tuple_variable(x):
    t = (x[0] * 2.0, x[1])
    p, q = t
    return p * q + x[2]


def list_comprehension(x):
    ys = [np.sin(e) * e for e in x]
    return sum(ys)


def comprehension_range(x):
    ys = [x[i] * x[i + 1] for i in range(x.shape[0] - 1)]
    return np.sum(np.stack(ys))


def list_literal(x):
    outs = [x * 1.0, np.sin(x)]
    return np.sum(outs[0] * outs[1])


def appended_list_used_twice(x):
    outs = []
    for i in range(3):
        outs.append(np.sin(x * (i + 1)))
    return np.sum(sum(outs)) + np.sum(np.stack(outs) ** 2)


def generator_expression(x):
    return sum(e * e for e in x)


def _mlp_params(rng, d, h, o):
    return {
        "W1": rng.normal(size=(d, h)),
        "b1": rng.normal(size=h),
        "W2": rng.normal(size=(h, o)),
        "b2": rng.normal(size=o),
    }


@given(seed=SEEDS, d=SIZES, h=SIZES, o=st.integers(1, 3))
def test_dict_params(seed, d, h, o):
    rng = rng_of(seed)
    check(mlp, (_mlp_params(rng, d, h, o), rng.normal(size=(4, d))), wrt=(0, 1))


@given(seed=SEEDS, depth=st.integers(1, 4), d=SIZES)
def test_list_of_dicts(seed, depth, d):
    rng = rng_of(seed)
    layers = [
        {"W": rng.normal(size=(d, d)) / np.sqrt(d), "b": rng.normal(size=d)} for _ in range(depth)
    ]
    check(deep_mlp, (layers, rng.normal(size=d)))


@given(seed=SEEDS, n=SIZES)
def test_tuple_wrt(seed, n):
    rng = rng_of(seed)
    check(tuple_arg, ((rng.normal(size=n), rng.normal(size=n)), rng.normal(size=n)), wrt=("t", "x"))


@pytest.mark.parametrize("f", [stack_appended, concat_appended, sum_appended])
@given(seed=SEEDS, n=st.integers(0, 4))
def test_lists_built_with_append(f, seed, n):
    x = rng_of(seed).uniform(0.2, 1.0, size=4)
    check(f, (x, n))


@given(seed=SEEDS)
def test_tuple_unpacking(seed):
    x = rng_of(seed).normal(size=3)
    x[np.argsort(x)] += np.array([0.0, 0.1, 0.2])  # no ties for min/max
    check(unpacking, (x,))


@pytest.mark.parametrize("f", [list_comprehension, comprehension_range, generator_expression])
@given(seed=SEEDS, n=st.integers(2, 5))
def test_comprehensions(f, seed, n):
    check(f, (rng_of(seed).normal(size=n),))


# Container forms that once crashed: fixed inputs.


@pytest.mark.parametrize(
    "f",
    [
        pytest.param(unpacking_nested),
        pytest.param(index_tuple_literal),
        pytest.param(chained_unpacking),
        pytest.param(unpacking_tuple_variable),
        pytest.param(list_literal),
        pytest.param(appended_list_used_twice),
    ],
)
def test_container_forms(f):
    check(f, (np.array([0.7, -0.4, 1.3, 0.2]),))


def items_loop(p, x):
    s = 0.0
    for name, w in p.items():
        s = s + np.sum(np.tanh(w * x))
    for w in p.values():
        s = s + np.sum(np.sin(w) * x)
    return s


def nested_params(p, x):
    h = x
    for layer in p["layers"]:
        h = np.tanh(h @ layer)
    return np.sum(h * p["out"])


def zip_lists(xs, ys):
    s = 0.0
    for a, b in zip(xs, ys):
        s = s + np.sum(a * b)
    return s


def with_print(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(x * i)
        print("step", i, s)
    return s


@given(seed=SEEDS, n=SIZES)
def test_dict_items_and_values_loops(seed, n):
    rng = rng_of(seed)
    check(
        items_loop,
        ({"a": rng.normal(size=n), "b": rng.normal(size=n)}, rng.normal(size=n)),
        wrt=(0, 1),
    )


@given(seed=SEEDS, depth=st.integers(1, 3), d=SIZES)
def test_nested_containers(seed, depth, d):
    rng = rng_of(seed)
    p = {
        "layers": [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(depth)],
        "out": rng.normal(size=d),
    }
    check(nested_params, (p, rng.normal(size=d)), wrt=(0, 1))


def test_nested_containers_with_an_empty_list():
    p = {"layers": [], "out": np.array([0.5, -1.0])}
    check(nested_params, (p, np.array([0.3, 0.2])), wrt=(0, 1))


@given(seed=SEEDS, m=st.integers(1, 4), n=SIZES)
def test_zip_over_lists(seed, m, n):
    rng = rng_of(seed)
    xs, ys = [rng.normal(size=n) for _ in range(m)], [rng.normal(size=n) for _ in range(m)]
    check(zip_lists, (xs, ys), wrt=(0, 1))


def test_print_inside_differentiated_code(capsys):
    x = np.array([0.5, -1.0, 2.0])
    check(with_print, (x,))
    assert "step 2" in capsys.readouterr().out


_log = logging.getLogger("sourcegrad.tests.logged")


def logged(x):
    s = np.sum(np.sin(x) * x)
    _log.info("s=%.3f over %d entries", s, x.size)
    if s > 0.5:
        warnings.warn(f"s is large: {s:.2f}", RuntimeWarning)
    return s * s


@given(seed=SEEDS, n=SIZES)
def test_logging_and_warnings_run_in_the_forward(seed, n):
    rng = rng_of(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(logged, (rng.normal(size=n),))


def test_logging_and_warnings_say_what_the_forward_computed(caplog):
    x = np.array([0.5, 1.0, 2.0])
    with caplog.at_level(logging.INFO, logger=_log.name):
        with pytest.warns(RuntimeWarning, match="s is large"):
            sg.grad(logged)(x)
    assert f"s={np.sum(np.sin(x) * x):.3f} over 3 entries" in caplog.text
