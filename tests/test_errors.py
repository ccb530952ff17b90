"""The error catalogue: what a user can write that sourcegrad refuses, and how it says so.

Every row of ``CATALOGUE`` runs one bad input (a function of ``tests/bad_inputs.py``, or a bad
use of the API) and asserts:

- the exception type: one of the documented ``SourcegradError`` subclasses, never an internal
  error type (``AttributeError``, ``KeyError``, ... or ``InternalCompilerError``) -- except for rows
  marked ``natural``, where a plain Python error (``TypeError``, ``ValueError``) comes from the
  user's own code at run time, exactly as calling the function itself would raise it;
- fragments of the message (checked with the "(in <function>)" tags removed, so a fragment never
  matches a function's name by accident);
- for errors about the user's code: the exact file and line in ``bad_inputs.py`` (that line
  carries a ``# E: <row id>`` marker, checked below), the column where one is meaningful (given
  as the text the caret must point at), the rendered caret, and a hint. Errors that are not
  located (raised at run time) must name ``bad_inputs.py:<line>`` in their message or notes.

``NEVER_WRONG`` holds inputs where a correct gradient is as good as a refusal: sourcegrad must
either raise a documented error or return the finite-difference gradient, and must raise when
the function itself raises.
"""

import functools
import math
import os
import re
from dataclasses import dataclass

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.errors import (
    InternalCompilerError,
    LocatedError,
    MissingAdjointError,
    NonScalarOutputError,
    NoSourceError,
    SourcegradError,
    UnsupportedSyntaxError,
    WrtError,
)

from . import bad_inputs as B
from .oracle import assert_close, fd_grad

X = np.array([0.5, 0.25, 0.75])
BAD_FILE = os.path.realpath(B.__file__)
LINES = open(BAD_FILE, encoding="utf-8").read().splitlines()

US = UnsupportedSyntaxError
MA = MissingAdjointError


@dataclass(frozen=True)
class Row:
    id: str
    run: object  # () -> anything; must raise
    exc: object  # the expected type (or a tuple of acceptable types)
    msg: tuple = ()  # fragments of str(e)
    line: int = None  # the line of bad_inputs.py the error must name
    col: str = None  # the text on that line the caret must point at
    hint: bool = True  # a located error must carry a hint
    natural: bool = False  # a plain Python error from the user's own code at run time
    hint_excludes: str = None  # text the hint must not contain


def grad_of(name, *args, wrt=0):
    """Run the gradient of ``bad_inputs.<name>`` (compilation is lazy: the call compiles)."""
    return lambda: sg.grad(getattr(B, name), wrt=wrt)(*(args or (X,)))


def R(id, exc, msg, line=None, col=None, run=None, **kw):
    if isinstance(msg, str):
        msg = (msg,)
    return Row(id, run or grad_of(id), exc, msg, line, col, **kw)


def _pullback_twice():
    _, pullback = sg.vjp(B.vector_valued)(X)
    pullback(np.ones(3))
    pullback(np.ones(3))


NO_HINT = "the error carries no hint"

CATALOGUE = [
    # ---- generators and coroutines ----------------------------------------------------------------
    R("yield_stmt", US, "yield", 33, "yield"),
    R("yield_value", US, "yield", 38, "yield"),
    R("yield_from", US, "yield", 43, "yield"),
    R("async_def", US, "async", 47, "async"),
    R("await_expr", US, "async", 51, "async"),
    # ---- scope declarations ----------------------------------------------------------------------
    R("global_write", US, "global", 59, "global"),
    R("nonlocal_write", US, "nonlocal", 68, "nonlocal"),
    # ---- refused statements ----------------------------------------------------------------------
    R("with_open", US, "no_grad", 97, "with"),
    R("with_no_grad_as", US, "no_grad", 103, "with"),
    R("with_no_grad_uncalled", US, "no_grad", 115, "with"),
    R("class_inside", US, "class", 121, "class"),
    R("import_inside", US, "import", 133, "import"),
    R("from_import_inside", US, "import", 138, "from"),
    # (in a branch: refused when the branch runs, which it does for -X)
    R("bare_raise", US, "bare raise", 144, "raise", run=grad_of("bare_raise", -X)),
    R("unreachable_after_return", US, "never run", 190, "y = x"),
    R("unreachable_if_after_return", US, "never run", 196, "if s"),
    R("unreachable_after_break", US, "never run", 204, "s = s + v"),
    R("expr_stmt", US, "discarded", 209, "np.sum"),
    R("global_list_append", US, "G_LIST.append", 214, "G_LIST"),
    R("bare_return", US, "return a value", 220, "return"),
    R("no_return", US, "return statement", 223, "def"),
    R("annotation_only", US, "annotation", 228, "y: float"),
    # ---- refused expressions ---------------------------------------------------------------------
    R("lambda_stored", US, "lambda", 235, "lambda"),
    R("lambda_arg", US, "lambda", 240, "lambda"),
    R("set_comp", US, "set comprehension", 259, "{v for"),
    R("dict_literal", US, "dict literal", 269, "0: x}"),
    R("set_literal", US, "set literal", 274, "{1.0"),
    R("chained_comparison", US, "chained comparison", 295, "0.0 <"),
    R("lshift_value", US, "<<", 315, "x.ndim <<"),
    R("ellipsis_value", US, "...", 320, "..."),
    R("tuple_in_index", US, "tuple inside an index", 330, "0, 1)"),
    # ---- parameters ------------------------------------------------------------------------------
    R("star_params", US, "*args", 341, "*rest"),
    R("kwargs_params", US, "**kwargs", 345, "**kw"),
    R("kwonly_after_star", US, "*args", 349, "*rest"),
    R("posonly_params", US, "positional-only", 353, run=grad_of("posonly_params", X, X)),
    R("varargs_only", US, "*args", 357, "*xs"),
    # ---- assignment targets ----------------------------------------------------------------------
    R("attribute_assign", US, "assigned to", 375, "y.a"),
    R("shape_assign", US, "assigned to", 381, "y.shape"),
    R("global_subscript_assign", US, "local variable", 386, "G[0]"),
    R("nested_subscript_assign", US, "[0, 1]", 392, "a[0][1]"),
    R("unpack_count_mismatch", US, "unpacking", 397, "a, b"),
    R("augassign_lshift", US, "<<=", 403, "n <<="),
    R("augassign_and", US, "&=", 409, "m &="),
    # ---- in-place writes the gradient could not see -----------------------------------------------
    R("mutate_wrt_arg", US, "argument", 416, "x[0]"),
    R(
        "mutate_other_arg",
        US,
        "argument",
        421,
        "y[0]",
        run=grad_of("mutate_other_arg", X, X.copy()),
    ),
    R("augassign_into_arg", US, "argument", 426, "x[0]"),
    R("write_into_transpose_view", US, "share memory", 432, "y[0]"),
    R("write_into_alias", US, "share memory", 439, "b[0]"),
    R("write_with_live_view", US, "view", 446, "a[0]"),
    R("write_with_live_view_of_view", US, "view", 453, "a[0]"),
    R("write_with_view_from_helper", US, "view", 464, "a[0]"),
    R("augassign_alias", US, "in-place", 471, "b +="),
    R("augassign_view", US, "in-place", 478, "v +="),
    R("for_row_write", US, "memory", 485, "row[0]"),
    # ---- calls -----------------------------------------------------------------------------------
    R("call_local_value", US, "can be called", 493, "g(x)"),
    R("call_undefined", US, "undefined_helper", 501, "undefined_helper"),
    R("read_undefined_global", US, "UNDEFINED_SCALE", 505, "UNDEFINED_SCALE"),
    R("missing_module_attr", US, "np.sinn", 509, "np.sinn"),
    R("no_rule_frexp", MA, "np.frexp", 513, "np.frexp"),
    R("no_rule_eigvals", MA, "np.linalg.eigvals", 518, "np.linalg.eigvals"),
    R(
        "no_rule_math_gamma",
        MA,
        "math.gamma",
        522,
        "math.gamma",
        run=grad_of("no_rule_math_gamma", 0.5),
    ),
    R("no_rule_nanmedian", MA, "np.nanmedian", 526, "np.nanmedian"),
    R("no_rule_spacing", MA, "np.spacing", 530, "np.spacing"),
    R("method_tolist", US, ".tolist()", 535, "x.tolist", hint_excludes="np.tolist"),
    R("method_fill", US, ".fill", 541, "y.fill"),
    R("method_sort_stmt", US, ".sort", 547, "y.sort"),
    R("method_sort_value", US, ".sort()", 552, "x.sort"),
    R("attr_flags", US, ".flags", 564, "x.flags"),
    R("out_keyword", US, "where=", 574, "where="),
    R("out_keyword_value", US, "out=", 580, "out=np.empty"),
    R("out_positional_ufunc", US, "out", 586, "np.multiply"),
    R("largest_of_list", US, "max", 603, "max("),
    R("pad_mode_without_rule", MA, "np.pad", 619, "np.pad"),
    R("recursive", US, "recursive", 624, "recursive(x * 0.5)"),
    R("mutual_recursion", US, "recursive", 633, "ping(x)", run=grad_of("ping")),
    R("helper_wrong_arity", US, "cannot call helper", 637, "helper("),
    R("stdlib_python_function", (MA, US), "statistics.fmean", 653, "statistics.fmean"),
    R("stdlib_deepcopy", (MA, US), "copy.deepcopy", 657, "copy.deepcopy"),
    R("nested_grad", US, "can be called", 662, "sg.grad"),
    R("custom_function_keyword", US, "positional arguments", 679, "Cube.apply"),
    R("enumerate_one_target", US, "enumerate", 691, "t in"),
    R("zip_one_target", US, "zip", 698, "t in", run=grad_of("zip_one_target", X, X)),
    R("calls_exec_made", NoSourceError, "exec", 767),
    # ---- functions without source ------------------------------------------------------------------
    # (a library function with a rule is differentiated directly: grad(np.sin) of a vector is
    # refused as any non-scalar function is; one without a rule has no source to read)
    R("grad_of_ufunc", NonScalarOutputError, "vjp", run=lambda: sg.grad(np.sin)(X)),
    R("grad_of_ufunc_without_rule", NoSourceError, "source", run=lambda: sg.grad(np.spacing)(X)),
    R("grad_of_builtin", NoSourceError, "source", run=lambda: sg.grad(len)(X)),
    R("grad_of_math_function", NoSourceError, "source", run=lambda: sg.grad(math.gamma)(0.5)),
    R("grad_of_grad", SourcegradError, (), run=lambda: sg.grad(sg.grad(B.plain))(X)),
    R("grad_of_exec_function", NoSourceError, "exec", run=lambda: sg.grad(B.made_by_exec)(X)),
    R("grad_of_exec_lambda", NoSourceError, "exec", run=lambda: sg.grad(B.lambda_by_exec)(X)),
    R("grad_of_non_callable", SourcegradError, "needs a function", run=lambda: sg.grad(3.0)),
    R("source_of_plain_function", SourcegradError, "grad", run=lambda: sg.source(B.plain)),
    # ---- outputs ---------------------------------------------------------------------------------
    R("non_scalar", NonScalarOutputError, "vjp", 706),
    R(
        "vector_valued_value_and_grad",
        NonScalarOutputError,
        "vjp",
        run=lambda: sg.value_and_grad(B.vector_valued)(X),
    ),
    R("return_bool", NonScalarOutputError, "bool", 718),
    R("return_string", NonScalarOutputError, "str", 722),
    R("return_tuple", US, "tuple", 710, "return"),
    R("return_list", US, "return", 714, "return"),
    # ---- wrt: the arguments to differentiate ---------------------------------------------------
    R(
        "wrt_int_array",
        WrtError,
        ("int64", "astype(float)"),
        run=lambda: sg.grad(B.plain)(np.arange(3)),
    ),
    R("wrt_int_scalar", WrtError, "an int", run=lambda: sg.grad(B.plain)(3)),
    R("wrt_numpy_int_scalar", WrtError, "int64", run=lambda: sg.grad(B.plain)(np.int64(3))),
    R("wrt_bool_array", WrtError, "bool", run=lambda: sg.grad(B.plain)(X > 0.3)),
    R("wrt_bool_scalar", WrtError, "bool", run=lambda: sg.grad(B.plain)(True)),
    R("wrt_int_list", WrtError, "list", run=lambda: sg.grad(B.plain)([1, 2])),
    R("wrt_none", WrtError, "NoneType", run=lambda: sg.grad(B.plain)(None)),
    R("wrt_int_dict", WrtError, "dict", run=lambda: sg.grad(B.plain)({"a": np.arange(3)})),
    R(
        "wrt_int_second_argument",
        WrtError,
        "'y'",
        run=lambda: sg.grad(B.two_params, wrt=1)(X, np.arange(3)),
    ),
    R("wrt_int_array_by_keyword", WrtError, "int64", run=lambda: sg.grad(B.plain)(x=np.arange(3))),
    R("wrt_out_of_range", WrtError, "out of range", run=lambda: sg.grad(B.plain, wrt=1)),
    R(
        "wrt_negative_out_of_range",
        WrtError,
        "out of range",
        run=lambda: sg.grad(B.two_params, wrt=-3),
    ),
    R(
        "wrt_names_no_parameter",
        WrtError,
        "names no parameter",
        run=lambda: sg.grad(B.plain, wrt="y"),
    ),
    R("wrt_bool", WrtError, "True", run=lambda: sg.grad(B.two_params, wrt=True)),
    R("wrt_float", WrtError, "0.0", run=lambda: sg.grad(B.plain, wrt=0.0)),
    R("wrt_none_value", WrtError, "None", run=lambda: sg.grad(B.plain, wrt=None)),
    R("wrt_set", WrtError, "{0}", run=lambda: sg.grad(B.plain, wrt={0})),
    R("wrt_duplicate", WrtError, "twice", run=lambda: sg.grad(B.two_params, wrt=(0, 0))),
    R(
        "wrt_duplicate_name_and_index",
        WrtError,
        "twice",
        run=lambda: sg.grad(B.two_params, wrt=(0, "x")),
    ),
    R("wrt_empty", WrtError, "no argument", run=lambda: sg.grad(B.plain, wrt=())),
    R("wrt_empty_list_value", WrtError, "an empty list", run=lambda: sg.grad(B.plain)([])),
    R("wrt_decorator_out_of_range", WrtError, "out of range", run=lambda: sg.grad(wrt=2)(B.plain)),
    R("wrt_vjp_out_of_range", WrtError, "out of range", run=lambda: sg.vjp(B.plain, wrt=1)),
    R(
        "wrt_value_and_grad_bad_name",
        WrtError,
        "'nope'",
        run=lambda: sg.value_and_grad(B.plain, wrt="nope"),
    ),
    R(
        "check_grad_int_argument",
        WrtError,
        "int64",
        run=lambda: sg.check_grad(B.plain, np.arange(3)),
    ),
    R(
        "check_grad_wrt_out_of_range",
        WrtError,
        "out of range",
        run=lambda: sg.check_grad(B.plain, X, wrt=5),
    ),
    # ---- calling the gradient wrongly: Python's own TypeError, as calling f would raise -------------
    R(
        "too_many_arguments",
        TypeError,
        ("plain", "1 positional argument"),
        natural=True,
        run=lambda: sg.grad(B.plain)(X, X),
    ),
    R(
        "too_few_arguments",
        TypeError,
        ("two_params", "missing 1 required positional argument: 'y'"),
        natural=True,
        run=lambda: sg.grad(B.two_params)(X),
    ),
    R(
        "unexpected_keyword",
        TypeError,
        "unexpected keyword argument 'z'",
        natural=True,
        run=lambda: sg.grad(B.plain)(X, z=1.0),
    ),
    # ---- pullbacks ---------------------------------------------------------------------------------
    R("pullback_called_twice", SourcegradError, "already called", run=_pullback_twice),
    R(
        "pullback_wrong_cotangent_shape",
        SourcegradError,
        ("cotangent", "(3,)"),
        run=lambda: sg.vjp(B.vector_valued)(X)[1](np.ones(2)),
    ),
    R(
        "pullback_cotangent_with_more_dims",
        SourcegradError,
        ("cotangent", "(3,)"),
        run=lambda: sg.vjp(B.vector_valued)(X)[1](np.ones((2, 3))),
    ),
    # ---- run-time errors in the user's own code: Python's, with a note naming the user's line -------
    R("shape_mismatch", ValueError, "mismatch", 733, natural=True),
    R("truth_of_array", ValueError, "ambiguous", 737, natural=True),
    R("nested_unpack_count_mismatch", US, ("unpacking", "3 values into 2 targets"), 834, "a, b)"),
    # ---- an array a tuple, list or name still holds, written in place (once a wrong gradient) -------
    R(
        "tuple_entry_then_write",
        US,
        ("'p' may share memory with 'z'", "tuple holding it"),
        842,
        "z[0]",
    ),
    R("list_literal_then_write", US, "'t' may share memory with 'z'", 849, "z[0]"),
    R("appended_element_then_write", US, "'p' may share memory with 'z'", 858, "z[0]"),
    R("list_entry_written_list_read", US, "'ys' may share memory with 'q'", 865, "q[0]"),
]

_TAG = re.compile(r"\((?:called )?in [^()\n]*\)")


def _params():
    return [pytest.param(row, id=row.id) for row in CATALOGUE]


def _located_checks(row, e):
    assert os.path.realpath(e.filename) == BAD_FILE, (
        f"error points into {e.filename}, not bad_inputs.py"
    )
    assert e.lineno == row.line, f"error names line {e.lineno}, expected {row.line}"
    expected_text = LINES[row.line - 1]
    assert (e.text or "").strip() == expected_text.strip(), f"quoted line {e.text!r}"
    rendered = str(e)
    assert f"line {row.line}" in rendered and os.path.basename(BAD_FILE) in rendered
    if row.col is not None:
        want = expected_text.index(row.col) + 1
        assert e.offset == want, (
            f"caret at column {e.offset} ({expected_text[(e.offset or 1) - 1 :][:12]!r}), expected "
            f"column {want} ({row.col!r})"
        )
        lines = rendered.splitlines()
        k = lines.index("    " + expected_text.strip())
        indent = len(expected_text) - len(expected_text.lstrip())
        assert lines[k + 1] == "    " + " " * (want - 1 - indent) + "^", (
            "caret rendered in the wrong place"
        )
    if row.hint:
        assert e.hint, "no hint"
        assert f"hint: {e.hint}" in rendered
    if row.hint_excludes:
        assert row.hint_excludes not in (e.hint or ""), (
            f"hint mentions {row.hint_excludes!r}: {e.hint!r}"
        )


@pytest.mark.parametrize("row", _params())
def test_bad_input_is_refused_clearly(row):
    try:
        result = row.run()
    except Exception as e:  # noqa: BLE001 (the point is to inspect whatever comes out)
        err = e
    else:
        pytest.fail(f"no error; returned {result!r}")

    assert not isinstance(err, InternalCompilerError), f"internal compiler error: {err}"
    if row.natural:
        assert isinstance(err, row.exc), f"{type(err).__name__}: {err}"
    else:
        assert isinstance(err, SourcegradError), (
            f"{type(err).__module__}.{type(err).__name__} reached the user instead of a SourcegradError: {err}"
        )
        assert isinstance(err, row.exc), f"{type(err).__name__} instead of {row.exc}: {err}"

    text = str(err)
    notes = "\n".join(getattr(err, "__notes__", ()))
    # what sourcegrad says, without the quoted source line (fragments must not match the user's code)
    said = f"{err.message}\n{err.hint or ''}" if isinstance(err, LocatedError) else text
    bare = _TAG.sub("", said)
    for fragment in row.msg:
        assert fragment in bare, f"{fragment!r} not in the message:\n{text}"

    if row.line is not None:
        if isinstance(err, LocatedError):
            _located_checks(row, err)
        else:
            where = f"{os.path.basename(BAD_FILE)}:{row.line}"
            assert where in text + "\n" + notes, (
                f"{where} named neither in the message nor in a note:\n{text}\n{notes}"
            )


def test_catalogue_is_large_and_ids_are_unique():
    ids = [row.id for row in CATALOGUE]
    assert len(ids) == len(set(ids))
    assert len(CATALOGUE) >= 60


def test_expected_lines_carry_their_markers():
    """Each expected line of bad_inputs.py is marked ``# E: <row id>``: the numbers cannot drift."""
    marked = {}
    for n, text in enumerate(LINES, 1):
        m = re.search(r"# E: ([\w ]+)$", text)
        if m:
            for name in m.group(1).split():
                marked[name] = n
    for row in CATALOGUE:
        if row.line is not None:
            assert marked.get(row.id) == row.line, (
                f"{row.id}: expected line {row.line}, marker at {marked.get(row.id)}"
            )
        if row.col is not None:
            assert row.col in LINES[row.line - 1], (
                f"{row.id}: {row.col!r} is not on line {row.line}"
            )


# ---- never silently wrong: refuse, or get it right -------------------------------------------------

X6 = np.array([0.5, 0.25, 0.75, 0.1, 0.9, 0.4])


@dataclass(frozen=True)
class Either:
    id: str
    fn: object
    args: tuple
    wrt: int = 0


NEVER_WRONG = [
    # supported since the catalogue was written: they must give the right gradient
    Either("fancy_index_literal", B.fancy_index_literal, (X,)),
    Either("dict_items_loop", B.dict_items_loop, ({"a": X, "b": 2.0 * X},)),
    Either("astype_int", B.astype_int, (X6,)),
    Either("reshape_order_f", B.reshape_order_f, (X6,)),
    Either("method_reshape_order_f", B.method_reshape_order_f, (X6,)),
    Either("setitem_repeated_index", B.setitem_repeated_index, (X6,)),
    Either("iadd_repeated_index", B.iadd_repeated_index, (X6,)),
    Either("var_positional_ddof", B.var_positional_ddof, (X6,)),
    Either("prod_with_zero", B.prod_with_zero, (np.array([0.0, 2.0, 3.0]),)),
    Either("dict_iteration", B.dict_iteration, ({"a": X, "b": 2.0 * X},)),
    Either("dict_int_keys", B.dict_int_keys, ({0: 0.5, 1: 1.5},)),
    Either("unpack_too_many_values", B.unpack_too_many_values, (X,)),
    Either("grad_of_partial", functools.partial(B.two_params, y=X), (X,)),
    Either("grad_of_callable_object", B.model, (X,)),
    Either("grad_of_bound_method", B.model.loss, (X,)),
    Either("grad_of_lru_cached", B.lru_cached, (0.5,)),
    Either("where_keyword", B.where_keyword, (X,)),
    Either("where_keyword_assigned", B.where_keyword_assigned, (X,)),
    Either("initial_keyword", B.initial_keyword, (X,)),
    Either("attr_imag", B.attr_imag, (X,)),
    Either("clip_min_max_keywords", B.clip_min_max_keywords, (X,)),
    Either("einsum_four_operands", B.einsum_four_operands, (X,)),
    # once refused, now differentiated: np.where(condition) gives indices; a module-level list
    # is read by index
    Either("indices_above", B.indices_above, (X,)),
    Either("loop_over_global_constant", B.loop_over_global_constant, (X,)),
    # a function held in a parameter (here its default) is compiled for what the call passes
    Either("call_parameter_function", B.call_parameter_function, (X,)),
    # *args and **kwargs known when compiling, a helper's *args, starred targets
    Either("nested_def_star", B.nested_def_star, (X,)),
    Either("star_args_call", B.star_args_call, (X,)),
    Either("double_star_call", B.double_star_call, (X,)),
    Either("nested_list_starred", B.nested_list_starred, (X,)),
    Either("starred_target", B.starred_target, (X,)),
    Either("starred_target_literal", B.starred_target_literal, (X,)),
    Either("del_stmt", B.del_stmt, (X,)),
    # for/else, while/else, the walrus, f-strings and and/or as values: lowered to flags,
    # assignments, string operations and branches (and_value raises as Python does: the truth of
    # an array of three booleans)
    Either("assert_walrus", B.assert_walrus, (X,)),
    Either("for_else", B.for_else, (X,)),
    Either("while_else", B.while_else, (X,)),
    Either("walrus_value", B.walrus_value, (X,)),
    Either("walrus_in_if", B.walrus_in_if, (X,)),
    Either("walrus_in_if_negative", B.walrus_in_if, (-X,)),
    Either("walrus_lambda", B.walrus_lambda, (X,)),
    Either("fstring_value", B.fstring_value, (X,)),
    Either("and_value", B.and_value, (X,)),
    Either("or_value", B.or_value, (X,)),
    Either("match_stmt", B.match_stmt, (X,)),
    Either("dict_comp", B.dict_comp, (X,)),
    Either("in_value", B.in_value, (X,)),
    # try: the path Python takes, chosen as a branch (more in test_lang_statements.py)
    Either("try_except", B.try_except, (X,)),
    Either("try_finally", B.try_finally, (X,)),
    Either("calls_bad_helper", B.calls_bad_helper, (X,)),
    Either("with_errstate", B.with_errstate, (X,)),
]


def _fd(fn, args, wrt):
    a = args[wrt]
    if isinstance(a, dict):
        out = {}
        for k in a:

            def with_entry(v, k=k):
                new = list(args)
                new[wrt] = {**a, k: v}
                return fn(*new)

            out[k] = fd_grad(with_entry, (a[k],), 0)
        return out
    return fd_grad(fn, args, wrt)


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.id) for c in NEVER_WRONG],
)
def test_never_silently_wrong(case):
    try:
        case.fn(*case.args)
        raised = None
    except Exception as e:  # noqa: BLE001
        raised = e
    try:
        g = sg.grad(case.fn, wrt=case.wrt)(*case.args)
    except SourcegradError as e:
        assert not isinstance(e, InternalCompilerError), str(e)
        if isinstance(e, LocatedError):
            assert os.path.realpath(e.filename) == BAD_FILE and e.hint, str(e)
        return  # a clear refusal is a correct outcome
    except Exception as e:  # noqa: BLE001
        if raised is not None and type(e) is type(raised):
            return  # the function's own error, as calling it raises
        pytest.fail(f"{type(e).__name__} leaked from sourcegrad: {e}")
    assert raised is None, f"sourcegrad returned a gradient for a function that raises {raised!r}"
    want = _fd(case.fn, case.args, case.wrt)
    if isinstance(want, dict):
        assert set(g) == set(want)
        for k in want:
            assert_close(g[k], want[k], what=f"gradient[{k!r}]")
    else:
        assert_close(g, want)
