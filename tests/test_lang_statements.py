"""Statements and expressions lowered to the forms the compiler differentiates: ``for``/``else``
and ``while``/``else`` (a flag), the walrus (an assignment where Python makes it), ``and``/``or``
as values (a branch on the left operand's truth), f-strings and ``str`` methods (strings, which
carry no gradient), ``match`` (an ``if``/``elif`` chain), context managers that carry no gradient
and dict comprehensions.

Each function is checked against finite differences in the specialized and the general code
(``check``), and its value against Python's (``check_value``); the inputs drive every path (the
mirror functions name the path Python takes, and each path is asserted to be taken).
"""

import contextlib
import warnings

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.errors import MissingAdjointError, UnsupportedSyntaxError

from .corpus.harness import check, check_value
from .oracle import assert_close, fd_grad

X = np.array([0.3, 0.7, -0.2])


def cases(*rows):
    """pytest params: (function, args, wrt) rows, their id the function's name and a counter."""
    return [
        pytest.param(f, args, wrt, id=f"{f.__name__}-{k}") for k, (f, args, wrt) in enumerate(rows)
    ]


def run_both(f, args, wrt):
    check(f, args, wrt=wrt)
    check_value(f, args, wrt=wrt)


# ==== for/else and while/else =====================================================================


def for_else(x, n):
    y = x
    for i in range(n):
        if np.sum(y) > 4.0:
            break
        y = y * 2.0 + i
    else:
        y = y + np.sin(y)
    return np.sum(y * y)


def for_else_no_break(x):
    y = x
    for v in x:
        y = y * v
    else:
        y = np.tanh(y)
    return np.sum(y)


def for_else_unrolled(x):
    y = x
    for i in range(3):
        y = y + x * i
    else:
        y = y * y
    return np.sum(y)


def for_else_nested(x, lim):
    total = 0.0
    for i in range(3):
        y = x * (i + 1)
        for j in range(3):
            if np.sum(y) > lim:
                break  # the inner loop's: its else is skipped, not the outer loop's
            y = np.sin(y) + y
        else:
            total = total + np.sum(y)
            continue
        total = total - np.sum(y * y)
    else:
        total = total * 2.0
    return total


def for_else_return(x, lim):
    y = x
    for i in range(3):
        if np.sum(y) > lim:
            return np.sum(np.cos(y))
        y = y * 1.5
    else:
        y = y + 1.0
    return np.sum(y * y)


def while_else(x, lim):
    y = x
    k = 0
    while k < 4:
        k += 1
        if np.sum(y) > lim:
            break
        y = np.sin(y) + y
    else:
        y = y * 3.0
    return np.sum(y)


def for_else_path(x, n):
    y = x
    for i in range(n):
        if np.sum(y) > 4.0:
            return "broken"
        y = y * 2.0 + i
    return "else"


def while_else_path(x, lim):
    y = x
    k = 0
    while k < 4:
        k += 1
        if np.sum(y) > lim:
            return "broken"
        y = np.sin(y) + y
    return "else"


FOR_ELSE = cases(
    (for_else, (X, 1), 0),
    (for_else, (X, 6), 0),
    (for_else_no_break, (X,), 0),
    (for_else_unrolled, (X,), 0),
    (for_else_nested, (X, 1.0), 0),
    (for_else_nested, (X, 100.0), 0),
    (for_else_return, (X, 1.0), 0),
    (for_else_return, (X, 100.0), 0),
    (while_else, (X, 1.0), 0),
    (while_else, (X, 100.0), 0),
)


@pytest.mark.parametrize("f, args, wrt", FOR_ELSE)
def test_loop_else(f, args, wrt):
    run_both(f, args, wrt)


def test_loop_else_inputs_take_both_paths():
    assert {for_else_path(X, 1), for_else_path(X, 6)} == {"broken", "else"}
    assert {while_else_path(X, 1.0), while_else_path(X, 100.0)} == {"broken", "else"}


# ==== the walrus ==================================================================================


def walrus_if(x):
    if (s := np.sum(x)) > 0:
        y = x * s
    else:
        y = x - s
    return np.sum(y) + s


def walrus_elif(x):
    if (a := np.sum(x)) > 1.0:
        y = x * a
    elif (b := np.max(x)) > 0.5:
        y = x * b
    else:
        y = x
    return np.sum(y * y)


def walrus_value(x):
    y = (a := x * 2.0) + np.sin(a)
    a = a + 1.0
    return np.sum(y * a)


def walrus_while(x):
    k = 0
    y = x
    while (k := k + 1) < 4 and (t := np.sum(y)) < 5.0:
        y = y * 1.5 + t
    return np.sum(y) + k


def walrus_while_else(x):
    y = x
    while (n := np.sum(y)) < 3.0:
        if n < -3.0:
            break
        y = y + 0.5 * np.abs(y)
    else:
        y = y * n
    return np.sum(y)


def walrus_comprehension(x):
    ys = [z for i in range(1, 4) if np.sum(np.abs(z := x * i)) > 1.0]
    w = [(q := np.sin(x) * i) for i in range(2)]
    return np.sum(np.stack(ys)) + np.sum(z) + np.sum(q) + np.sum(w[0])


def walrus_short_circuit(x, flag):
    # the walrus on the right of `and` runs only when the left operand is true
    s = 1.0
    if flag and (s := np.sum(x * x)) > 0.1:
        y = x * s
    else:
        y = x
    return np.sum(y) + s


def walrus_assert(x):
    assert (n := x.ndim) == 1
    return np.sum(x) * n


WALRUS = cases(
    (walrus_if, (X,), 0),
    (walrus_if, (-X,), 0),
    (walrus_elif, (X * 3,), 0),
    (walrus_elif, (X,), 0),
    (walrus_elif, (-X,), 0),
    (walrus_value, (X,), 0),
    (walrus_while, (X,), 0),
    (walrus_while, (X * 10,), 0),
    (walrus_while_else, (X,), 0),
    (walrus_while_else, (-X * 10,), 0),
    (walrus_comprehension, (X,), 0),
    (walrus_short_circuit, (X, True), 0),
    (walrus_short_circuit, (X, False), 0),
    (walrus_assert, (X,), 0),
)


@pytest.mark.parametrize("f, args, wrt", WALRUS)
def test_walrus(f, args, wrt):
    run_both(f, args, wrt)


def test_walrus_in_a_print_is_refused():
    def f(x):
        print(n := np.sum(x))
        return n

    with pytest.raises(UnsupportedSyntaxError, match=":=") as e:
        sg.grad(f)(X)
    assert e.value.lineno == f.__code__.co_firstlineno + 1


# ==== and / or as values ==========================================================================


def or_default(x, scale=None):
    scale = scale or 2.0
    return np.sum(x * scale)


def and_value(x, k):
    n = k and k + 1
    m = k or x
    return np.sum(x * n) + np.sum(m)


def or_active(x, w):
    u = w or x  # the pick is decided by w's truth, a 0-d array
    v = (x and 3.0) or 4.0
    return np.sum(u * x) + v


def or_chain(x, a, b):
    c = a or b or np.sum(x)
    d = a and b and x
    return np.sum(x * c) + np.sum(d)


def or_short_circuit(x, d):
    # d[0] is not read when d is empty: the right operand is not evaluated
    first = len(d) > 0 and d[0]
    return np.sum(x) * (first or 1.0)


AND_OR = cases(
    (or_default, (X,), 0),
    (or_default, (X, 3.0), 0),
    (or_default, (X, 3.0), 1),
    (and_value, (X, 0), 0),
    (and_value, (X, 2), 0),
    (or_active, (np.array(0.5), np.array(2.0)), (0, 1)),
    (or_active, (np.array(0.5), 0.0), 0),
    (or_chain, (X, 0.0, 0.0), 0),
    (or_chain, (X, 0.0, 2.0), 0),
    (or_chain, (X, 3.0, 2.0), (0, 1, 2)),
    (or_short_circuit, (X, []), 0),
    (or_short_circuit, (X, [2.0]), 0),
)


@pytest.mark.parametrize("f, args, wrt", AND_OR)
def test_and_or_values(f, args, wrt):
    run_both(f, args, wrt)


def test_and_of_arrays_raises_as_python_does():
    def f(x):
        m = (x > 0.0) and (x < 1.0)
        return np.sum(x * m)

    with pytest.raises(ValueError, match="ambiguous"):
        f(X)
    with pytest.raises(ValueError, match="ambiguous"):
        sg.grad(f)(X)


# ==== strings: f-strings and str methods ===========================================================


def fstring_keys(x, params):
    y = x
    for i in range(2):
        name = f"W{i}"
        y = np.tanh(y * params[name] + params[f"b{i:d}".upper().lower()])
    message = f"loss {np.sum(y):.3f} after {i + 1} layers"  # a string that reaches no result
    return np.sum(y * y)


def string_methods(x, params, prefix="w"):
    total = 0.0
    for key in sorted(params):
        if key.startswith(prefix.upper()) or key.endswith("_b"):
            total = total + np.sum(params[key] * x)
    joined = "_".join(["layer", str(2)])
    total = total + np.sum(params["%s_%s" % ("layer", 2)] * x)
    total = total + np.sum(params["{}_{}".format("layer", 2)] * x) * len(joined)
    return total


P = {"W0": X + 1.0, "W1": X * 2.0, "b0": X, "b1": -X, "layer_2": X * X, "c_b": X - 1.0}

STRINGS = cases(
    (fstring_keys, (X, P), 0),
    (fstring_keys, (X, P), 1),
    (string_methods, (X, P), 0),
    (string_methods, (X, P), 1),
)


@pytest.mark.parametrize("f, args, wrt", STRINGS)
def test_strings(f, args, wrt):
    run_both(f, args, wrt)


def test_a_string_made_of_a_differentiated_value_is_refused_where_it_reaches_the_result():
    def f(x):
        return float(f"{np.sum(x)}")

    def g(x):
        return float(str(np.sum(x)).strip())

    for fn in (f, g):
        with pytest.raises(MissingAdjointError, match="adjoint"):
            sg.grad(fn)(X)


def test_fstring_with_equals_is_refused_outside_print():
    def f(x):
        label = f"{x=}"
        return np.sum(x)

    with pytest.raises(UnsupportedSyntaxError, match="only allowed inside print"):
        sg.grad(f)(X)


# ==== match =======================================================================================


def match_int(x, n):
    match n:
        case 1:
            y = x
        case 2 | 3:
            y = x * 2.0
        case k if k > 10:
            y = x * k
        case _:
            y = x * 3.0
    return np.sum(y * y)


def match_shape(x):
    match x.shape:
        case (n,):
            y = x * n
        case (n, 1) | (1, n):  # alternatives that capture: one case each
            y = np.ravel(x) * n
        case [a, b, *_] if a == b:
            y = np.trace(x)
        case _:
            y = np.sum(x, axis=0)
    return np.sum(np.sin(y))


MODES = ["sum", "mean", "avg", None, "other", ""]


def match_str(x, mode):
    match mode:
        case "sum":
            y = np.sum(x)
        case "mean" | "avg":
            y = np.mean(x)
        case None:
            y = np.max(x)
        case other if other:
            y = np.sum(x) * len(other)
        case _:
            y = np.sum(x * x)
    return y


def match_mode(x, m):
    return match_str(x, MODES[m])  # inlined: the subject is known when it is compiled


def match_nested(x, pair):
    match pair:
        case (a, (b, c)):
            y = x * a + b * c
        case [a, b]:
            y = x * a - b
        case [True | False, *_]:
            y = x * 5.0
        case _:
            y = x
    return np.sum(y)


def match_active(xs):
    match xs:
        case [a, b]:
            y = a * b
        case [a, _, c]:
            y = a * np.sin(c)
    return np.sum(y)


def match_loop(x):
    y = x
    for i in range(4):
        match i % 3:
            case 0:
                y = y * 1.5
            case 1:
                continue
            case _:
                if np.sum(y) > 100.0:
                    break
                y = np.tanh(y)
    return np.sum(y)


MATCH = cases(
    *((match_int, (X, n), 0) for n in (1, 2, 3, 11, 5)),
    *(
        (match_shape, (a,), 0)
        for a in (X, X.reshape(3, 1), X.reshape(1, 3), np.full((2, 2), 0.3), np.full((2, 3), 0.1))
    ),
    *((match_mode, (X, m), 0) for m in range(len(MODES))),
    (match_nested, (X, (2.0, (3.0, 4.0))), (0, 1)),
    (match_nested, (X, [2.0, 3.0]), (0, 1)),
    (match_nested, (X, (True, 1.0, 2.0)), 0),
    (match_nested, (X, (1.0,)), 0),
    (match_active, ([X, X * 2],), 0),
    (match_active, ((X, X * 2, X),), 0),
    (match_loop, (X,), 0),
)


@pytest.mark.parametrize("f, args, wrt", MATCH)
def test_match(f, args, wrt):
    run_both(f, args, wrt)


def test_match_refuses_class_patterns_and_star_captures():
    def by_class(x, v):
        match v:
            case float(t):
                y = x * t
            case _:
                y = x
        return np.sum(y)

    def star(x, v):
        match v:
            case [a, *rest]:
                y = x * a
            case _:
                y = x
        return np.sum(y)

    for f, what in ((by_class, "class and mapping patterns"), (star, r"\*rest")):
        with pytest.raises(UnsupportedSyntaxError, match=what) as e:
            sg.grad(f)(X, 2.0)
        assert e.value.lineno == f.__code__.co_firstlineno + 2


# ==== dicts: comprehensions, and a local dict used as a whole =====================================


def dict_comp_items(x, params):
    doubled = {k: v * 2.0 for k, v in params.items()}
    return np.sum(doubled["W0"] * x) + np.sum(np.sin(doubled["b1"]))


def dict_comp_fstring_keys(x):
    ws = {f"W{i}": x * (i + 1) for i in range(3)}
    total = 0.0
    for k, w in ws.items():
        total = total + np.sum(np.sin(w))
    return total + np.sum(ws["W2"]) * len(ws)


def dict_comp_filtered(x, params):
    squares = {k: np.sum(params[k] ** 2) for k in sorted(params) if k != "b0"}
    firsts = {k[0]: params[k] for k in params}  # a later key replaces an earlier equal one
    return sum(squares.values()) + np.sum(firsts["W"] * x) + np.sum(np.stack(list(firsts.values())))


def dict_comp_get_and_in(x, params):
    d = {k: v * x for k, v in params.items() if k.startswith("W")}
    s = 0.0
    for k in d:
        s = s + np.sum(d[k])
    return s + np.sum(d.get("W0", x)) + np.sum(d.get("zz", x)) + ("W1" in d) + ("b0" in d)


def dict_argument_get(x, params):
    w = params.get("W0", x)
    b = params.get("missing", 0.5)
    return np.sum(w * x + b)


def local_dict_whole(x):
    d = {"a": x, "b": x * 2}
    d.setdefault("c", np.sin(x))
    d.setdefault("a", x * 100)  # has "a": no write
    w = d.pop("b")
    d.update({"e": w * 3})
    d.update(f=x * x)
    total = 0.0
    for k, v in d.items():
        if k != "a":
            total = total + np.sum(v * x)
    for k in sorted(d):
        total = total + np.sum(d[k]) * len(k)
    vals = list(d.values())
    s = sum(np.sum(v) for v in d.values()) + np.sum(np.stack(vals))
    joined = "_".join(d.keys())
    t = np.sum(d.get("zz", x)) + np.sum(d.get("e", 0.0)) + ("c" in d) + ("b" not in d)
    picked = {k: d[k] * 2 for k in d if k in ("a", "e")}
    return total + s + t + np.sum(picked["e"]) + len(joined) + len(d)


def local_dict_in_branches(x, flag):
    d = {"a": x, "b": x * 0.5}
    if flag:
        d["a"] = d["a"] * 3.0  # rewrites a key it holds: still known
    if "b" in d and flag:
        y = d["b"] * d.get("a")
    else:
        y = d["a"]
    return np.sum(y)


def local_dict_while(x):
    d = {"a": x, "n": 0}
    while d["n"] < 3 and "a" in d:  # tested again before every iteration
        d["a"] = np.sin(d["a"]) + d["a"]
        d["n"] = d["n"] + 1
    return np.sum(d["a"]) * d["n"]


DICTS = cases(
    (local_dict_while, (X,), 0),
    (dict_comp_items, (X, P), (0, 1)),
    (dict_comp_fstring_keys, (X,), 0),
    (dict_comp_filtered, (X, P), (0, 1)),
    (dict_comp_get_and_in, (X, P), (0, 1)),
    (dict_argument_get, (X, P), (0, 1)),
    (dict_argument_get, (X, {"b0": X}), (0, 1)),
    (local_dict_whole, (X,), 0),
    (local_dict_in_branches, (X, True), 0),
    (local_dict_in_branches, (X, False), 0),
)


@pytest.mark.parametrize("f, args, wrt", DICTS)
def test_dicts(f, args, wrt):
    run_both(f, args, wrt)


def test_dict_uses_decided_by_a_branch_are_refused():
    def maybe_key(x, flag):
        d = {"a": x}
        if flag:
            d["b"] = x * 2
        return np.sum(d["a"]) + ("b" in d)

    def pop_in_branch(x, flag):
        d = {"a": x, "b": x}
        if flag:
            d.pop("b")
        return np.sum(d["a"])

    def written_comprehension(x, params):
        d = {k: v for k, v in params.items()}
        d["a"] = x
        return np.sum(d["a"])

    # (the general code: a specialized one knows the bool flag, and so the branch, when compiling)
    for f, args, what in (
        (maybe_key, (X, True), "known only when it runs"),
        (pop_in_branch, (X, True), "outside branches and loops"),
        (written_comprehension, (X, P), "cannot be written into"),
    ):
        with pytest.raises(UnsupportedSyntaxError, match=what) as e:
            sg.grad(f, specialize=False)(*args)
        assert e.value.filename == __file__ and e.value.hint
    for flag in (True, False):  # specialized on the flag: the branch is decided, so is the dict
        assert_close(sg.grad(maybe_key)(X, flag), fd_grad(maybe_key, (X, flag), 0))
        assert_close(sg.grad(pop_in_branch)(X, flag), fd_grad(pop_in_branch, (X, flag), 0))


def test_loop_over_local_dict_refuses_break():
    def f(x):
        d = {"a": x, "b": x}
        total = 0.0
        for k in d:
            if k == "b":
                break
            total = total + np.sum(d[k])
        return total

    with pytest.raises(UnsupportedSyntaxError, match="cannot break or continue"):
        sg.grad(f)(X)


# ==== try / except / else / finally ===============================================================


def try_cholesky(x, jitter):
    K = np.outer(x, x) + jitter * np.eye(3)
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        L = np.linalg.cholesky(K + 1.0 * np.eye(3))
    return np.sum(L * L) + np.sum(np.diag(L))


def try_handlers(x, k):
    try:
        y = x * [1.0, 2.0, 3.0][k]
    except (IndexError, KeyError) as e:
        y = x * len(str(e))
    except ValueError:
        y = x
    else:
        y = y + np.sin(y)
    finally:
        z = 2.0
    return np.sum(y * z)


def try_raise_in_body(x, limit):
    try:
        s = np.sum(x * x)
        if s > limit:
            raise ValueError("too large")
        y = np.sin(x) * s
    except ValueError:
        s = 1.0
        y = np.tanh(x)
    return np.sum(y) * s


def try_in_loop(x):
    y = x
    for i in range(4):
        try:
            step = np.linalg.solve(np.diag(y) * (i - 1), y)
        except np.linalg.LinAlgError:  # i == 1: a singular matrix
            step = y * 0.5
        y = y + 0.1 * step
    return np.sum(y * y)


def _safe_log(a):
    try:
        out = np.log(a)
    except FloatingPointError:
        out = a - 1.0
    return out


def try_in_helper(x):
    with np.errstate(divide="raise", invalid="raise"):
        return np.sum(_safe_log(x) * x)


def try_nested(x, k, j):
    try:
        try:
            a = x * [1.0, 2.0][k]
        except IndexError:
            a = x * [3.0, 4.0][j]
    except IndexError:
        a = x
    return np.sum(a * a)


def try_finally_only(x):
    try:
        y = np.exp(x)
    finally:
        z = 0.5
    return np.sum(y * z)


TRY = cases(
    (try_cholesky, (X, 0.1), 0),
    (try_cholesky, (X, -0.1), 0),
    *((try_handlers, (X, k), 0) for k in (0, 2, 7)),
    (try_raise_in_body, (X, 10.0), 0),
    (try_raise_in_body, (X, 0.1), 0),
    (try_in_loop, (X,), 0),
    (try_in_helper, (np.abs(X) + 0.1,), 0),
    *((try_nested, (X, k, j), 0) for k in (0, 5) for j in (1, 5)),
    (try_finally_only, (X,), 0),
)


@pytest.mark.parametrize("f, args, wrt", TRY)
def test_try(f, args, wrt):
    run_both(f, args, wrt)


def test_try_paths_are_all_taken():
    K = np.outer(X, X)
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(K - 0.1 * np.eye(3))
    np.linalg.cholesky(K + 0.1 * np.eye(3))
    assert np.sum(X * X) > 0.1 and np.sum(X * X) < 10.0


def test_an_exception_no_handler_matches_propagates():
    def f(x, k):
        try:
            y = x * [1.0][k]
        except KeyError:
            y = x
        return np.sum(y)

    with pytest.raises(IndexError):
        sg.grad(f)(X, 3)


def refused_return(x):
    try:
        return np.sum(np.log(x))
    except FloatingPointError:
        return 0.0


def refused_inplace(x):
    y = x.copy()
    try:
        y[0] = np.log(x[0])
    except FloatingPointError:
        y = x
    return np.sum(y)


def refused_print(x):
    try:
        print("trying")
        y = np.log(x)
    except FloatingPointError:
        y = x
    return np.sum(y)


def refused_random(x):
    try:
        y = x * np.random.normal(size=3)
    except ValueError:
        y = x
    return np.sum(y)


def refused_partial(x, k):
    try:
        a = x * 2.0
        b = a * [1.0][k]
    except IndexError:
        b = x + a  # Python's a is x * 2.0 here
    return np.sum(b)


@pytest.mark.parametrize(
    "f, args, what, line",
    [
        (refused_return, (X,), "leaves the try statement", 2),
        (refused_inplace, (X,), "changes a value in place", 3),
        (refused_print, (X,), "side effect", 2),
        (refused_random, (X,), "may not give the same result twice", 2),
        (refused_partial, (X, 3), "the try body binds 'a'", 5),
    ],
    ids=lambda v: getattr(v, "__name__", None) if callable(v) else None,
)
def test_try_refusals(f, args, what, line):
    with pytest.raises(UnsupportedSyntaxError, match=what) as e:
        sg.grad(f)(*args)
    assert e.value.lineno == f.__code__.co_firstlineno + line and e.value.hint


# ==== with: context managers that carry no gradient ================================================


def with_errstate_ignore(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x)
        z = np.where(np.isfinite(y), y, 0.0)
    return np.sum(z * x)


def with_errstate_raise(x):
    with np.errstate(all="raise"):
        try:
            y = np.log(x)
        except FloatingPointError:
            y = x * x
    return np.sum(y)


def with_catch_warnings(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = np.sqrt(x)
        warnings.warn("silenced")
    return np.sum(np.where(np.isnan(y), 0.0, y) * x)


def with_two_items(x):
    with np.errstate(divide="ignore"), warnings.catch_warnings(record=True) as caught:
        y = np.log(np.abs(x)) * len(caught)
        r = np.reciprocal(x)
    return np.sum(y + r)


def with_suppress(x, k):
    y = x
    with contextlib.suppress(IndexError, KeyError):
        y = x * [2.0, 3.0][k]
    return np.sum(y * y)


def with_nullcontext(x):
    with contextlib.nullcontext(), np.printoptions(precision=3):
        y = np.sin(x)
    return np.sum(y)


WITH = cases(
    (with_errstate_ignore, (np.abs(X) + 0.1,), 0),
    (with_errstate_raise, (np.abs(X) + 0.1,), 0),
    (with_errstate_raise, (np.array([-0.5, 0.3, 0.2]),), 0),  # the handler: log(-0.5) raises
    (with_catch_warnings, (np.abs(X) + 0.1,), 0),
    (with_two_items, (X,), 0),
    (with_suppress, (X, 1), 0),
    (with_suppress, (X, 4), 0),
    (with_nullcontext, (X,), 0),
)


@pytest.mark.parametrize("f, args, wrt", WITH)
def test_with(f, args, wrt):
    run_both(f, args, wrt)


def test_with_runs_the_managers_in_the_forward():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning the managers let through would raise
        sg.grad(with_errstate_ignore)(np.array([0.0, 1.0]))
        sg.grad(with_catch_warnings)(np.array([-1.0, 1.0]))
    value, _ = sg.value_and_grad(with_errstate_raise)(np.array([0.0, 2.0]))
    assert value == with_errstate_raise(np.array([0.0, 2.0]))


def test_an_exception_leaving_a_with_block_exits_the_manager():
    def f(x):
        with np.errstate(all="raise"):
            y = np.log(x)
        return np.sum(y)

    before = np.geterr()
    for specialize in (True, False):
        with pytest.raises(FloatingPointError):
            sg.grad(f, specialize=specialize)(np.array([-1.0, 1.0]))
        assert np.geterr() == before
    with pytest.raises(FloatingPointError):
        sg.vjp(f)(np.array([-1.0, 1.0]))
    assert np.geterr() == before


def test_other_with_blocks_are_refused():
    def f(x):
        with open("/dev/null") as fh:
            y = x * 2.0
        return np.sum(y)

    with pytest.raises(UnsupportedSyntaxError, match="np.errstate") as e:
        sg.grad(f)(X)
    assert e.value.lineno == f.__code__.co_firstlineno + 1


def with_return_inside(x):
    with np.errstate(all="raise"):
        if np.sum(x) > 0:
            return np.sum(np.log(np.abs(x) + 1.0))
        y = x * 2.0
    return np.sum(y)


def with_break_inside(x):
    y = x
    for i in range(5):
        with np.errstate(divide="ignore"):
            if i == 3:
                break
            if i == 1:
                continue
            y = y * 1.5
    return np.sum(y)


@pytest.mark.parametrize(
    "f, args", [(with_return_inside, (X,)), (with_return_inside, (-X,)), (with_break_inside, (X,))]
)
def test_leaving_a_with_block_exits_its_manager(f, args):
    before = np.geterr()
    run_both(f, args, 0)
    assert np.geterr() == before
    sg.grad(f)(*args)
    assert np.geterr() == before


# ==== forward mode and second derivatives go through the same lowerings ===========================

ALL = [
    p
    for table in (FOR_ELSE, WALRUS, AND_OR, STRINGS, MATCH, DICTS, TRY, WITH)
    for p in table
    if p.values[2] == 0
    and isinstance(p.values[1][0], np.ndarray)
    and p.values[1][0].ndim == 1
    # (forward mode refuses any comprehension with an if, walrus or not: "another name holds
    # the same list")
    and p.values[0] is not walrus_comprehension
]


@pytest.mark.parametrize("f, args, wrt", ALL)
def test_forward_mode_agrees(f, args, wrt):
    np.testing.assert_allclose(sg.jacfwd(f)(*args), sg.grad(f)(*args), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "f, args",
    [
        (for_else, (X, 6)),
        (walrus_while, (X,)),
        (or_chain, (X, 3.0, 2.0)),
        (match_loop, (X,)),
        (local_dict_whole, (X,)),
        (dict_comp_items, (X, P)),
        (try_handlers, (X, 7)),
        (try_in_loop, (X,)),
        (with_errstate_raise, (np.array([-0.5, 0.3, 0.2]),)),
        (with_return_inside, (X,)),
    ],
    ids=lambda v: getattr(v, "__name__", None) if callable(v) else None,
)
def test_hessian(f, args):
    H = sg.hessian(f)(*args)
    rest = args[1:]
    fd = np.stack([fd_grad(lambda x: sg.grad(f)(x, *rest)[i], (args[0],), 0) for i in range(3)])
    np.testing.assert_allclose(H, fd, rtol=1e-4, atol=1e-5)


def _noisy(a):
    print("computing")
    return a * 2.0


def refused_helper_print(x):
    try:
        y = _noisy(x)
    except ValueError:
        y = x
    return np.sum(y)


def refused_return_in_handler_with_finally(x, k):
    try:
        y = x * [1.0][k]
    except IndexError:
        return np.sum(x)
    finally:
        z = 1.0
    return np.sum(y) * z


@pytest.mark.parametrize(
    "f, args, what",
    [
        (refused_helper_print, (X,), "side effect"),
        (refused_return_in_handler_with_finally, (X, 0), "finally"),
    ],
    ids=lambda v: getattr(v, "__name__", None) if callable(v) else None,
)
def test_try_refusals_elsewhere(f, args, what):
    with pytest.raises(UnsupportedSyntaxError, match=what) as e:
        sg.grad(f)(*args)
    assert e.value.hint


def test_dict_methods_refuse_what_python_refuses():
    def get_of_list(x):
        xs = [x, x * 2.0]
        return np.sum(xs.get(0, x))

    with pytest.raises(AttributeError):
        get_of_list(X)
    with pytest.raises(AttributeError):
        sg.grad(get_of_list)(X)

    def grows_while_iterating(x):
        d = {"a": x}
        for k in d:
            d["b"] = d[k] * 2.0
        return np.sum(d["a"])

    with pytest.raises(RuntimeError):
        grows_while_iterating(X)
    with pytest.raises(UnsupportedSyntaxError, match="while it iterates"):
        sg.grad(grows_while_iterating)(X)


# ==== in checkpointed loops, which run iterations again in the backward ===========================


def checkpointed_mix(x):
    y = x
    for i in sg.checkpointed(range(6)):
        try:
            step = np.linalg.solve(np.diag(y) * (i % 3 - 1), y)
        except np.linalg.LinAlgError:  # every third iteration: a singular matrix
            step = y * 0.5
        with np.errstate(divide="ignore"):
            y = y + 0.1 * np.tanh(step)
        match i % 2:
            case 0:
                y = y * 1.01
            case _:
                pass
    return np.sum(y * y)


def while_walrus_try(x):
    y = x
    k = 0
    while (k := k + 1) < 6:
        try:
            step = np.linalg.solve(np.diag(y) * (k % 3 - 1), y)
        except np.linalg.LinAlgError:
            step = y * 0.5
        y = y + 0.1 * np.tanh(step)
    return np.sum(y * y)


@pytest.mark.parametrize("f", [checkpointed_mix, while_walrus_try], ids=lambda f: f.__name__)
def test_checkpointed_loops_run_the_lowerings_again(f):
    run_both(f, (X,), 0)
    plain = sg.grad(f)(X)
    for checkpoint in (True, 2):
        np.testing.assert_array_equal(sg.grad(f, checkpoint=checkpoint)(X), plain)
