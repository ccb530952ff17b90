"""Functions sourcegrad must refuse, one per case, for the error catalogue in ``test_errors.py``.

The line an error must point at carries a ``# E: <case>`` marker (several cases may share a line).
``test_errors.py`` holds the expected line numbers literally and checks them against these markers,
so edit this file only by appending at the end, or update the table's numbers with it.
Nothing here is run at import time except the few module-level setup lines (``exec`` below).
"""
# ruff: noqa
# fmt: off

import copy
import functools
import math
import statistics

import numpy as np

import sourcegrad as sg

COUNTER = 0.0
G = np.zeros(3)
G_LIST = []
G_CONSTS = [1.0, 2.0]


def helper(a, b=1.0):
    return a * b


# ---- generators and coroutines ---------------------------------------------------------------

def yield_stmt(x):
    yield x  # E: yield_stmt
    return np.sum(x)


def yield_value(x):
    y = yield x  # E: yield_value
    return np.sum(y)


def yield_from(x):
    yield from [x]  # E: yield_from
    return np.sum(x)


async def async_def(x):  # E: async_def
    return np.sum(x)


async def await_expr(x):  # E: await_expr
    y = await helper(x)
    return np.sum(y)


# ---- scope declarations ---------------------------------------------------------------------

def global_write(x):
    global COUNTER  # E: global_write
    COUNTER = COUNTER + 1.0
    return np.sum(x)


def _make_nonlocal():
    calls = 0.0

    def nonlocal_write(x):
        nonlocal calls  # E: nonlocal_write
        calls = calls + 1.0
        return np.sum(x)

    return nonlocal_write


nonlocal_write = _make_nonlocal()


# ---- statements that are refused --------------------------------------------------------------

def try_except(x):
    try:  # E: try_except
        y = np.log(x)
    except FloatingPointError:
        y = x
    return np.sum(y)


def try_finally(x):
    try:  # E: try_finally
        y = np.log(x)
    finally:
        pass
    return np.sum(y)


def with_open(x):
    with open("/dev/null") as fh:  # E: with_open
        y = x * 2.0
    return np.sum(y)


def with_no_grad_as(x):
    with sg.no_grad() as ng:  # E: with_no_grad_as
        y = x * 2.0
    return np.sum(y)


def with_errstate(x):
    with np.errstate(all="ignore"):  # E: with_errstate
        y = np.log(x)
    return np.sum(y)


def with_no_grad_uncalled(x):
    with sg.no_grad:  # E: with_no_grad_uncalled
        y = x * 2.0
    return np.sum(y)


def class_inside(x):
    class Box:  # E: class_inside
        pass
    return np.sum(x)


def del_stmt(x):
    y = x * 2.0
    del y  # E: del_stmt
    return np.sum(x)


def import_inside(x):
    import no_such_module_here as m  # E: import_inside
    return np.sum(x) * m.pi


def from_import_inside(x):
    from . import pi  # E: from_import_inside
    return np.sum(x) * pi


def bare_raise(x):
    if np.any(x < 0):
        raise  # E: bare_raise
    return np.sum(x)


def assert_walrus(x):
    assert (n := x.ndim) == 1  # E: assert_walrus
    return np.sum(x) * n


def match_stmt(x):
    match x.ndim:  # E: match_stmt
        case 1:
            y = x
        case _:
            y = x.ravel()
    return np.sum(y)


def nested_def_star(x):
    def inner(*t):  # E: nested_def_star
        return t[0] * 2.0
    return np.sum(inner(x))


def for_else(x):
    s = 0.0
    for v in x:
        s = s + v
    else:  # E: for_else
        s = s * 2.0
    return s


def while_else(x):
    s = 0.0
    i = 0
    while i < 3:
        s = s + x[i]
        i = i + 1
    else:  # E: while_else
        s = s * 2.0
    return s


def unreachable_after_return(x):
    return np.sum(x)
    y = x * 2.0  # E: unreachable_after_return


def unreachable_if_after_return(x):
    s = np.sum(x)
    return s
    if s > 0:  # E: unreachable_if_after_return
        s = s * 2.0


def unreachable_after_break(x):
    s = 0.0
    for v in x:
        break
        s = s + v  # E: unreachable_after_break
    return s


def expr_stmt(x):
    np.sum(x)  # E: expr_stmt
    return np.sum(x)


def global_list_append(x):
    G_LIST.append(x)  # E: global_list_append
    return np.sum(x)


def bare_return(x):
    y = x * 2.0
    return  # E: bare_return


def no_return(x):  # E: no_return
    y = x * 2.0


def annotation_only(x):
    y: float  # E: annotation_only
    return np.sum(x)


# ---- expressions that are refused --------------------------------------------------------------

def lambda_stored(x):
    hs = [lambda t: t * 2.0]  # E: lambda_stored
    return np.sum(x)


def lambda_arg(x):
    y = np.apply_along_axis(lambda r: r * 2.0, 0, x)  # E: lambda_arg
    return np.sum(y)


def walrus_value(x):
    y = (z := x * 2.0)  # E: walrus_value
    return np.sum(y * z)


def walrus_in_if(x):
    if (n := np.sum(x)) > 0:  # E: walrus_in_if
        x = x * 2.0
    return np.sum(x)


walrus_lambda = lambda x: np.sum((y := x * 2.0) * y)  # E: walrus_lambda


def set_comp(x):
    s = {v for v in x}  # E: set_comp
    return np.sum(x)


def dict_comp(x):
    d = {i: v for i, v in enumerate(x)}  # E: dict_comp
    return np.sum(x)


def dict_literal(x):
    d = {0: x}  # E: dict_literal
    return np.sum(d[0])


def set_literal(x):
    s = {1.0, 2.0}  # E: set_literal
    return np.sum(x)


def star_args_call(x):
    xs = [x, x]
    y = np.add(*xs)  # E: star_args_call
    return np.sum(y)


def double_star_call(x):
    y = helper(x, **{"b": 2.0})  # E: double_star_call
    return np.sum(y)


def fstring_value(x):
    label = f"x={x}"  # E: fstring_value
    return np.sum(x)


def chained_comparison(x):
    m = 0.0 < x < 1.0  # E: chained_comparison
    return np.sum(x * m)


def and_value(x):
    m = (x > 0.0) and (x < 1.0)  # E: and_value
    return np.sum(x * m)


def or_value(x):
    s = np.sum(x) or 1.0  # E: or_value
    return s


def in_value(x):
    flag = 0.0 in x  # E: in_value
    return np.sum(x) * flag


def lshift_value(x):
    k = x.ndim << 1  # E: lshift_value
    return np.sum(x) * k


def ellipsis_value(x):
    e = ...  # E: ellipsis_value
    return np.sum(x)


def nested_list_starred(x):
    m = np.array([[x[0], *x]])  # E: nested_list_starred
    return np.sum(m)


def tuple_in_index(x):
    y = x[(0, 1)]  # E: tuple_in_index
    return np.sum(y)


def fancy_index_literal(x):
    y = x[[0, 1]]  # E: fancy_index_literal
    return np.sum(y)


# ---- parameters --------------------------------------------------------------------------------

def star_params(x, *rest):  # E: star_params
    return np.sum(x)


def kwargs_params(x, **kw):  # E: kwargs_params
    return np.sum(x)


def kwonly_after_star(x, *rest, scale=1.0):  # E: kwonly_after_star
    return np.sum(x) * scale


def posonly_params(x, /, y):  # E: posonly_params
    return np.sum(x * y)


def varargs_only(*xs):  # E: varargs_only
    return np.sum(xs[0])


# ---- assignment targets ------------------------------------------------------------------------

def starred_target(x):
    a, *b = x  # E: starred_target
    return np.sum(a) + np.sum(b)


def starred_target_literal(x):
    a, *b = x, x  # E: starred_target_literal
    return np.sum(a) * len(b)


def attribute_assign(x):
    y = x * 2.0
    y.a = 1.0  # E: attribute_assign
    return np.sum(y)


def shape_assign(x):
    y = x * 2.0
    y.shape = (-1, 1)  # E: shape_assign
    return np.sum(y)


def global_subscript_assign(x):
    G[0] = x[0]  # E: global_subscript_assign
    return np.sum(x)


def nested_subscript_assign(x):
    a = np.zeros((2, 2))
    a[0][1] = x[0]  # E: nested_subscript_assign
    return np.sum(a)


def unpack_count_mismatch(x):
    a, b = x, x, x  # E: unpack_count_mismatch
    return np.sum(a * b)


def augassign_lshift(x):
    n = x.ndim
    n <<= 1  # E: augassign_lshift
    return np.sum(x) * n


def augassign_and(x):
    m = x > 0.0
    m &= x < 1.0  # E: augassign_and
    return np.sum(x * m)


# ---- in-place writes the gradient could not see -------------------------------------------------

def mutate_wrt_arg(x):
    x[0] = 1.0  # E: mutate_wrt_arg
    return np.sum(x)


def mutate_other_arg(x, y):
    y[0] = 1.0  # E: mutate_other_arg
    return np.sum(x * y)


def augassign_into_arg(x):
    x[0] += 1.0  # E: augassign_into_arg
    return np.sum(x * x)


def write_into_transpose_view(x):
    y = x.T
    y[0] = 1.0  # E: write_into_transpose_view
    return np.sum(y)


def write_into_alias(x):
    a = x * 1.0
    b = a
    b[0] = 0.0  # E: write_into_alias
    return np.sum(a * x)


def write_with_live_view(x):
    a = x * 1.0
    v = a[0:2]
    a[0] = 0.0  # E: write_with_live_view
    return np.sum(v * x[0:2])


def write_with_live_view_of_view(x):
    a = np.zeros(3)
    v = a[0:2].T
    a[0] = x[0]  # E: write_with_live_view_of_view
    return np.sum(v * x[1:3])


def first_two(a):
    return a[0:2]


def write_with_view_from_helper(x):
    a = np.zeros(3)
    v = first_two(a)
    a[0] = x[0]  # E: write_with_view_from_helper
    return np.sum(v * x[1:3])


def augassign_alias(x):
    a = x * 1.0
    b = a
    b += 1.0  # E: augassign_alias
    return np.sum(a * x)


def augassign_view(x):
    a = x * 1.0
    v = a.T[0:2]  # (a view of a.T: a write through v into a is not followed)
    v += 1.0  # E: augassign_view
    return np.sum(a * x)


def for_row_write(x):
    m = np.ones((2, 3)) * x
    for row in m.T:  # (rows of m.T: a write through them into m is not followed)
        row[0] = 0.0  # E: for_row_write
    return np.sum(m)


# ---- calls ------------------------------------------------------------------------------------

def call_local_value(x):
    g = x
    return np.sum(g(x))  # E: call_local_value


def call_parameter_function(x, fn=np.tanh):
    return np.sum(fn(x))  # E: call_parameter_function


def call_undefined(x):
    return np.sum(undefined_helper(x))  # E: call_undefined


def read_undefined_global(x):
    return np.sum(x) * UNDEFINED_SCALE  # E: read_undefined_global


def missing_module_attr(x):
    return np.sum(np.sinn(x))  # E: missing_module_attr


def no_rule_frexp(x):
    m, e = np.frexp(x)  # E: no_rule_frexp
    return np.sum(m)


def no_rule_eigvals(x):
    return np.sum(np.linalg.eigvals(x))  # E: no_rule_eigvals


def no_rule_math_gamma(x):
    return math.gamma(x)  # E: no_rule_math_gamma


def no_rule_nanmedian(x):
    return np.sum(np.nanmedian(x))  # E: no_rule_nanmedian


def no_rule_spacing(x):
    y = np.spacing(x) + x  # E: no_rule_spacing
    return np.sum(y)


def method_tolist(x):
    y = x.tolist()  # E: method_tolist
    return np.sum(y)


def method_fill(x):
    y = x * 1.0
    y.fill(0.0)  # E: method_fill
    return np.sum(y)


def method_sort_stmt(x):
    y = x * 1.0
    y.sort()  # E: method_sort_stmt
    return np.sum(y * x)


def method_sort_value(x):
    y = x.sort()  # E: method_sort_value
    return np.sum(y)


def dict_items_loop(p):
    s = 0.0
    for k, v in p.items():  # E: dict_items_loop
        s = s + np.sum(v ** 2)
    return s


def attr_flags(x):
    f = x.flags  # E: attr_flags
    return np.sum(x)


def attr_imag(x):
    return np.sum(x.imag)  # E: attr_imag


def out_keyword(x):
    y = np.zeros(3)
    np.multiply(x, 2.0, out=y, where=x > 0.5)  # E: out_keyword
    return np.sum(y)


def out_keyword_value(x):
    y = np.zeros(3)
    z = np.multiply(x, y, out=np.empty(3))  # E: out_keyword_value
    return np.sum(z)


def out_positional_ufunc(x):
    y = np.zeros(3)
    return np.sum(np.multiply(x, 2.0, y))  # E: out_positional_ufunc


def where_keyword(x):
    return np.sum(x, where=x > 0.0)  # E: where_keyword


def where_keyword_assigned(x):
    s = np.sum(x, where=x > 0.0)  # E: where_keyword_assigned
    return s


def initial_keyword(x):
    return np.max(x, initial=0.0)  # E: initial_keyword


def largest_of_list(x):
    return max([np.sum(x), np.sum(x * x)], key=abs)  # E: largest_of_list


def indices_above(x):
    return np.sum(x[np.where(x > 0.3)])  # E: indices_above


def clip_min_max_keywords(x):
    return np.sum(np.clip(x, min=0.0, max=0.6))  # E: clip_min_max_keywords


def einsum_four_operands(x):
    return np.einsum("i,i,i,i->", x, x, x, x)  # E: einsum_four_operands


def pad_mode_without_rule(x):
    return np.sum(np.pad(x, 1, mode="mean") ** 2)  # E: pad_mode_without_rule


def recursive(x):
    if np.sum(x) > 1.0:
        return recursive(x * 0.5)  # E: recursive
    return np.sum(x)


def ping(x):
    return pong(x)


def pong(x):
    return ping(x) * 2.0  # E: mutual_recursion


def helper_wrong_arity(x):
    return np.sum(helper(x, 1.0, 2.0))  # E: helper_wrong_arity


def helper_with_try(a):
    try:  # E: helper_with_try calls_bad_helper
        b = a * 2.0
    except ValueError:
        b = a
    return b


def calls_bad_helper(x):
    return np.sum(helper_with_try(x))


def stdlib_python_function(x):
    return statistics.fmean([np.sum(x), np.sum(x * x)])  # E: stdlib_python_function


def stdlib_deepcopy(x):
    y = copy.deepcopy(x)  # E: stdlib_deepcopy
    return np.sum(y)


def nested_grad(x):
    g = sg.grad(helper)(x)  # E: nested_grad
    return np.sum(g)


class Cube(sg.Function):
    @staticmethod
    def forward(ctx, x, power=3.0):
        ctx.save_for_backward(x)
        return x ** power

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x ** 2


def custom_function_keyword(x):
    return np.sum(Cube.apply(x, power=3.0))  # E: custom_function_keyword


def loop_over_global_constant(x):
    s = np.sum(x)
    for c in G_CONSTS:  # E: loop_over_global_constant
        s = s * c
    return s


def enumerate_one_target(x):
    s = 0.0
    for t in enumerate(x):  # E: enumerate_one_target
        s = s + t[1]
    return s


def zip_one_target(x, y):
    s = 0.0
    for t in zip(x, y):  # E: zip_one_target
        s = s + t[0] * t[1]
    return s


# ---- outputs --------------------------------------------------------------------------------

def non_scalar(x):
    return x * 2.0  # E: non_scalar


def return_tuple(x):
    return np.sum(x), np.sum(x * x)  # E: return_tuple


def return_list(x):
    return [np.sum(x), np.sum(x * x)]  # E: return_list


def return_bool(x):
    return np.sum(x) > 0.0  # E: return_bool


def return_string(x):
    return "loss"  # E: return_string


def vector_valued(x):
    return np.sin(x)


# ---- run-time errors in the user's own code ----------------------------------------------------

def shape_mismatch(x):
    w = np.ones((4, 4))
    return np.sum(x @ w)  # E: shape_mismatch


def truth_of_array(x):
    if x > 0.0:  # E: truth_of_array
        x = x * 2.0
    return np.sum(x)


def plain(x):
    return np.sum(x * x)


def two_params(x, y):
    return np.sum(x * y)


class Model:
    def __call__(self, x):
        return np.sum(x * x)

    def loss(self, x):
        return np.sum(x * x)


model = Model()

_exec_ns = {"np": np}
exec("def made_by_exec(x):\n    return np.sum(x * x)\n", _exec_ns)
made_by_exec = _exec_ns["made_by_exec"]
lambda_by_exec = eval("lambda x: np.sum(x * x)", _exec_ns)


def calls_exec_made(x):
    return made_by_exec(x) * 2.0  # E: calls_exec_made


@functools.lru_cache(maxsize=None)
def lru_cached(x):
    return x * x


# ---- gradients that must be right, or refused: never silently wrong -----------------------------
# (the test compares with central finite differences of the function itself; a function that
# raises must make sourcegrad raise too)

W23 = np.arange(6.0).reshape(2, 3)


def astype_int(x):
    return np.sum(x.astype(int) * 1.0)


def reshape_order_f(x):
    return np.sum(np.reshape(x, (2, 3), order="F") * W23)


def method_reshape_order_f(x):
    return np.sum(x.reshape((2, 3), order="F") * W23)


def setitem_repeated_index(x):
    a = np.zeros(3)
    a[np.array([0, 0])] = x[0:2]
    return np.sum(a * np.arange(1.0, 4.0))


def iadd_repeated_index(x):
    a = np.zeros(3)
    a[np.array([0, 0])] += x[0:2]
    return np.sum(a * np.arange(1.0, 4.0))


def var_positional_ddof(x):
    return np.var(x, 0, None, None, 1)


def prod_with_zero(x):
    return np.prod(x)


def dict_iteration(p):
    s = 0.0
    for k in p:
        s = s + np.sum(p[k] ** 2)
    return s


def dict_int_keys(p):
    s = 0.0
    for k in p:
        s = s + k * 1.0
    return s


def unpack_too_many_values(x):
    a, b = x
    return a * b


def nested_unpack_count_mismatch(x):
    (a, b), c = (x, x, x), x  # E: nested_unpack_count_mismatch
    return np.sum(a * b * c)


def tuple_entry_then_write(x):
    z = x * 1.0
    t = (z, x)
    p = t[0]
    z[0] = 5.0  # E: tuple_entry_then_write
    return np.sum(p * x)


def list_literal_then_write(x):
    z = x * 1.0
    t = [z, x]
    z[0] = 5.0  # E: list_literal_then_write
    return np.sum(t[0] * x)


def appended_element_then_write(x):
    z = x * 1.0
    xs = []
    xs.append(z)
    p = xs[0]
    z[0] = 5.0  # E: appended_element_then_write
    return np.sum(p * x)


def list_entry_written_list_read(x):
    ys = [x * 1.0, x * 2.0]
    q = ys[1]
    q[0] = 3.0  # E: list_entry_written_list_read
    return np.sum(np.stack(ys)) + np.sum(q)
