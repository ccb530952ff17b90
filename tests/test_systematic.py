"""The whole rule table, systematically: every function sourcegrad registers, every parameter.

For each key of ``rules.RULES`` (the built-in rules) and ``rules.NONDIFF``, ``systematic_specs.SPECS``
gives a grid of cases: shapes (0-d, 1-d, 2-d, broadcasting pairs, length-1 axes, Python floats and
numpy scalars), keyword variants (axis, keepdims, ord, ...) and value domains. Each case becomes a
real module (sourcegrad reads source)::

    def f(a, w):
        return np.sum(np.sum(a, axis=(0, -1), keepdims=True) * w)

with a random weight ``w`` of the result's shape, run in float64 and float32. Every float input is
differentiated and checked against central finite differences (``tests/oracle.py``), in the code
specialized to the arguments' shapes and in the general code (``specialize=False``), which must
also agree with each other, and the case must reach the function it is for (the compiler binds
it). A function declared non-differentiable (``rules.NONDIFF``), or a parameter a rule declares
(``nondiff=``), must have zero finite differences wherever a case passes it a float. Cases marked
``refused`` must be refused at compile time, naming the parameter and the user's line.

Every parameter of every rule is accounted for: it has an adjoint that a fast case checks, or a
declared reason to carry none, or it takes no float (a ``refused`` case shows numpy refusing one).

The fast profile (a few cases per function, covering every parameter) runs in the default suite;
``-m slow`` runs the whole grid in both dtypes.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import os
import re
import warnings
import zlib
from dataclasses import dataclass

import numpy as np
import pytest

import sourcegrad as sg
import sourcegrad.transforms as T
from sourcegrad.transforms import ir
from sourcegrad.transforms import rules as R

from . import systematic_specs as S
from .fuzz.check import load  # a module file of its own, imported
from .oracle import assert_close, fd_grad

FAST_CASES = 4  # per function, at least one per parameter it differentiates
# Declared non-differentiability finite differences cannot confirm: promises about sourcegrad
# (stop_gradient), not about the function's values. Every other declared reason means zero finite
# differences wherever a case passes that parameter a float numpy accepts.
UNCHECKABLE = ("stops the gradient", "prints")
# Parameters that take a float, have no adjoint and are refused when active (safe, but not the
# "differentiable or declared" the rule table promises): reported, xfail(strict=True).
KNOWN_PARAMETERS = {
    (
        "np.interp",
        "period",
    ): "np.interp(x, xp, fp, period=p) takes a float p; only None is handled, refused otherwise",
}


# ---- the registry --------------------------------------------------------------------------------


def builtin_rules():
    return {k: t for k, t in R.RULES.items() if t.origin.startswith("rule for")}


def registered():
    """Every function sourcegrad knows: key -> (template or None, NONDIFF entry or None)."""
    out = {k: (t, None) for k, t in builtin_rules().items()}
    out.update({k: (None, v) for k, v in R.NONDIFF.items() if k not in out})
    return out


def source_name(key):
    """How a generated module spells ``key``: ``np.linalg.norm``, ``math.sin``, ``max``."""
    name = getattr(key, "__name__", None)
    module = getattr(key, "__module__", None) or ""
    for prefix, ns in (("np", np), ("np.linalg", np.linalg), ("np.random", np.random)):
        if name and getattr(ns, name, None) is key:
            return f"{prefix}.{name}"
    if module == "math":
        return f"math.{name}"
    if module == "builtins":
        return name
    return None


def key_id(key):
    name = getattr(key, "__name__", repr(key))
    owner = getattr(key, "__self__", None)
    if isinstance(owner, np.ufunc):  # np.add.reduce: a new bound method at each attribute read
        return f"np.{owner.__name__}.{name}"
    if (type(owner).__module__ or "").startswith("scipy.stats."):  # a distribution's method
        return f"scipy.stats.{type(owner).__name__.removesuffix('_gen')}.{name}"
    if getattr(key, "__qualname__", "").startswith("Generator."):
        return f"np.random.{key.__qualname__}"
    module = (getattr(key, "__module__", None) or "").lstrip("_")
    short = {
        "sourcegrad.transforms.rules.indexing": "ndarray",
        "sourcegrad.runtime.creation": "runtime",
        "sourcegrad.runtime.sequences": "runtime",
        "sourcegrad.runtime": "sourcegrad",
    }.get(module, module)
    return f"{short.replace('numpy', 'np')}.{name.lstrip('_')}"


def same_key(a, b):
    """The same primitive (``np.add.reduce``, ``scipy.stats.norm.logpdf``: a new, equal, bound
    method at each read)."""
    owner = getattr(a, "__self__", None)
    return a is b or (
        (isinstance(owner, np.ufunc) or (type(owner).__module__ or "").startswith("scipy.stats."))
        and type(a) is type(b)
        and a == b
    )


def nondiff_reasons(key, template):
    """param -> reason for a rule's declared parameters; {"*": reason} for a NONDIFF function."""
    if template is not None:
        return dict(template.nondiff)
    entry = R.NONDIFF.get(key)
    return dict(entry) if isinstance(entry, dict) else {"*": entry}


@functools.cache
def cases_of(key):
    template, _ = registered()[key]
    params = list(template.signature()) if template is not None else []
    return S.SPECS[key](source_name(key) or "?", params)


# ---- the profiles --------------------------------------------------------------------------------


def _rng(*parts):
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def fast_profile(key, cases):
    """(case index, dtype) for a few cases: every refusal, one checked case passing a float to each
    parameter, the rest a deterministic random pick up to ``FAST_CASES`` checked cases."""
    rng = _rng(key_id(key))
    checked = [i for i, c in enumerate(cases) if not c.refused]
    chosen = []
    for p in sorted(set().union(*(cases[i].params() for i in checked))):
        if not any(p in cases[i].params() for i in chosen):
            chosen.append(int(rng.choice([i for i in checked if p in cases[i].params()])))
    rest = [int(i) for i in rng.permutation(checked) if i not in chosen]
    chosen += rest[: max(0, FAST_CASES - len(chosen))]
    chosen += [i for i, c in enumerate(cases) if c.refused]
    return [(i, cases[i].dtypes[int(rng.integers(len(cases[i].dtypes)))]) for i in sorted(chosen)]


def slow_profile(key, cases):
    return [(i, d) for i, c in enumerate(cases) for d in c.dtypes]


def params_for(profile):
    out = []
    for key in registered():
        if key not in S.SPECS:
            continue
        cases = cases_of(key)
        for i, dtype in profile(key, cases):
            c = cases[i]
            marks = [pytest.mark.xfail(strict=True, reason=c.bug)] if c.bug else []
            ident = f"{key_id(key)}-{i}-{np.dtype(dtype).name}"
            out.append(pytest.param(key, i, dtype, id=ident, marks=marks))
    return out


# ---- one case --------------------------------------------------------------------------------------
_HEADER_NS = None


def draw(rng, x, dtype):
    """A value of input ``x`` (an ``S.In``) in ``dtype``."""
    shape, d = x.shape, x.dom
    n = int(np.prod(shape))
    if d.kind == "signed":
        v = rng.uniform(d.lo, d.hi, n) * rng.choice([-1.0, 1.0], n)
    elif d.kind in ("distinct", "increasing"):
        v = d.lo + (d.hi - d.lo) * (rng.permutation(n) + rng.uniform(0.25, 0.75, n)) / max(n, 1)
    elif d.kind == "sdistinct":
        v = (
            d.lo + (d.hi - d.lo) * (rng.permutation(n) + rng.uniform(0.25, 0.75, n)) / max(n, 1)
        ) * rng.choice([-1.0, 1.0], n)
    elif d.kind in ("grid0", "grid1"):
        k = rng.integers(int(np.ceil(d.lo / 0.2)), int(np.floor(d.hi / 0.2)), n, endpoint=True)
        v = 0.2 * k + 0.02 * rng.uniform(-1, 1, n) + (0.1 if d.kind == "grid1" else 0.0)
    elif d.kind == "quarter":
        v = (
            rng.integers(int(d.lo), int(d.hi), n)
            + rng.choice([0.25, 0.75], n)
            + 0.05 * rng.uniform(-1, 1, n)
        )
    elif d.kind == "zeros":
        v = rng.uniform(d.lo, d.hi, n) * rng.choice([-1.0, 1.0], n) * (np.arange(n) % 3 != 0)
    elif d.kind == "knots":
        v = np.array([-1.0, -0.4, 0.4, 1.0]) + rng.uniform(d.lo, d.hi, n)
    else:
        v = rng.uniform(d.lo, d.hi, n)
    v = v.reshape(shape)
    if d.kind == "increasing":
        v = np.sort(v, axis=-1)
    elif d.kind == "matrix":
        v = v + 2.0 * np.eye(shape[-1])
    if x.form == "py":
        return float(v)
    v = v.astype(dtype)
    return v[()] if x.form == "scalar" else v


def _body(case, result):
    pre = "".join(f"    {line}\n" for line in case.pre.splitlines())
    return f"{pre}    return {result}\n"


def _value_function(case):
    ns = dict(_header_namespace())
    # noqa: S102
    exec(
        compile(
            f"def value({', '.join(case.inputs)}):\n{_body(case, case.expr)}", "<value>", "exec"
        ),
        ns,
    )
    return seeded(ns["value"]) if case.seeded else ns["value"]


def seeded(f):
    """``f`` with numpy's global random state reset before each call (a random draw repeats)."""

    def call(*args):
        np.random.seed(0)
        return f(*args)

    return call


def _header_namespace():
    global _HEADER_NS
    if _HEADER_NS is None:
        _HEADER_NS = {}
        exec(compile(S.HEADER, "<header>", "exec"), _HEADER_NS)  # noqa: S102
    return _HEADER_NS


def _is_python_number(v):
    return type(v) in (float, int, bool)


def module_source(case, python_result):
    result = f"({case.expr}) * w" if python_result else f"np.sum({case.expr} * w)"
    return f"{S.HEADER}\n\ndef f({', '.join(case.inputs)}, w):\n{_body(case, result)}"


@contextlib.contextmanager
def reached_keys():
    """The primitives the compiler binds while the block compiles (is the case testing its key?)."""
    seen = []
    original = T._bind_all

    def spy(src, irfn):
        seen.extend(
            s.op.key
            for s in ir.walk(irfn.body)
            if isinstance(s, ir.Assign) and s.op.kind in ("call", "nondiff")
        )
        return original(src, irfn)

    T._bind_all = spy
    try:
        yield seen
    finally:
        T._bind_all = original


@dataclass
class Built:
    f: object  # the module's function
    args: list  # its arguments, the weight last
    line: int  # the line of its return statement
    shown: str  # its source and arguments, for messages
    out: object  # what numpy computes for the case's expression (or the exception it raises)


def build(key, case, dtype):
    """The case's module function and its arguments."""
    rng = _rng(key_id(key), case.expr, repr(case.inputs), np.dtype(dtype).name)
    args = [draw(rng, x, dtype) for x in case.inputs.values()]
    try:
        out = _value_function(case)(*copy.deepcopy(args))
    except Exception as e:
        if not case.refused:
            raise
        out = e  # numpy refuses the value too
    python_result = _is_python_number(out) or isinstance(out, Exception)
    if python_result:
        w = float(rng.uniform(0.5, 1.5) * rng.choice([-1.0, 1.0]))
    else:
        wdtype = np.result_type(out) if np.result_type(out).kind == "f" else dtype
        w = (rng.uniform(0.5, 1.5, np.shape(out)) * rng.choice([-1.0, 1.0], np.shape(out))).astype(
            wdtype
        )
    source = module_source(case, python_result)
    f = load(source).f
    shown = "\n".join(f"  {n} = {a!r}" for n, a in zip(list(case.inputs) + ["w"], args + [w]))
    return Built(f, args + [w], source.count("\n"), f"{source}\nwith\n{shown}", out)


def tolerance(case, dtype):
    return max(1e-5 if dtype == np.float64 else 2e-3, 10 * case.h)


def check_case(key, case, dtype):
    state = np.random.get_state()
    try:
        _check_case(key, case, dtype)
    finally:
        np.random.set_state(state)  # a seeded case leaves the global random state as it was


def _check_case(key, case, dtype):
    template, _ = registered()[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        built = build(key, case, dtype)
        if case.refused:
            return check_refused(built, tuple(case.inputs), case)
        want, fd = oracle(built, case)
        with reached_keys() as seen:
            results = gradients(built, case)
    shown = built.shown
    assert not case.reach or any(same_key(k, key) for k in seen), (
        f"the case never reaches {key_id(key)} (it binds {set(map(key_id, seen))}):\n{shown}"
    )
    check_declared_zero(key, template, case, fd, shown)
    rtol = tolerance(case, dtype)
    for what, (value, grads) in results.items():
        assert_close(
            value,
            want,
            rtol=1e-6 if dtype == np.float64 else 1e-4,
            atol=1e-6,
            what=f"value ({what})\n{shown}\n",
        )
        for name, a, g, want_g in zip(case.inputs, built.args, grads, fd):
            check_gradient(
                a,
                g,
                np.zeros_like(want_g) if case.stops else want_g,
                rtol,
                f"d/d{name} ({what})\n{shown}\n",
            )
    for name, g, h in zip(case.inputs, results["general code"][1], results["specialized code"][1]):
        scale = 1.0 + float(np.max(np.abs(g), initial=0.0))
        assert_close(
            h,
            g,
            rtol=rtol,
            atol=rtol * scale,
            what=f"d/d{name}: specialized vs general code\n{shown}\n",
        )


def oracle(built, case):
    """f's value and the central finite differences of every input, in float64."""
    plain = seeded(built.f) if case.seeded else built.f
    want = plain(*copy.deepcopy(built.args))
    assert np.all(np.isfinite(want)), (
        f"the spec draws a point where f is not finite ({want!r}):\n{built.shown}"
    )
    f64 = as_float64(built.args)
    return want, [
        fd_grad(numpy_scalars(plain, case), f64, i, h=case.h) for i in range(len(case.inputs))
    ]


def gradients(built, case):
    """Value and gradients from the general code and the specialized code (its first and second
    call); the arguments must come back unchanged."""
    names = tuple(case.inputs)
    general = sg.value_and_grad(built.f, wrt=names, specialize=False)
    special = sg.value_and_grad(built.f, wrt=names)
    if case.seeded:
        general, special = seeded(general), seeded(special)
    saved = copy.deepcopy(built.args)
    results = {
        "general code": general(*built.args),
        "specialized code": special(*built.args),
        "specialized code, second call": special(*built.args),
    }
    assert all(_same(a, b) for a, b in zip(built.args, saved)), (
        f"computing the gradient changed the arguments:\n{built.shown}"
    )
    return results


def as_float64(args):
    """The arguments in float64: finite differences of float32 values would measure rounding (a
    Python float next to a float32 array computes in float32)."""
    return [
        np.float64(a)
        if isinstance(a, np.floating)
        else np.asarray(a, dtype=np.float64)
        if isinstance(a, np.ndarray)
        else copy.deepcopy(a)
        for a in args
    ]


def numpy_scalars(f, case):
    """``f`` given numpy scalars where the case has them (the oracle hands it Python floats)."""
    forms = [x.form for x in case.inputs.values()]

    def call(*args):
        return f(
            *[np.float64(a) if k == "scalar" else a for a, k in zip(args, forms)],
            *args[len(forms) :],
        )

    return call


def _same(a, b):
    return type(a) is type(b) and np.array_equal(a, b)


def check_gradient(a, g, want, rtol, what):
    if type(a) is float:
        assert type(g) is float, f"{what}: the gradient of a Python float is a {type(g).__name__}"
    else:
        assert np.shape(g) == np.shape(a), (
            f"{what}: gradient shape {np.shape(g)} != argument shape {np.shape(a)}"
        )
        assert np.asarray(g).dtype == a.dtype, (
            f"{what}: gradient dtype {np.asarray(g).dtype} != argument dtype {a.dtype}"
        )
    scale = 1.0 + float(np.max(np.abs(want), initial=0.0))
    assert_close(g, want, rtol=rtol, atol=rtol * scale, what=what)


def check_declared_zero(key, template, case, fd, shown):
    """A parameter declared non-differentiable has zero finite differences (where FD can tell)."""
    reasons = nondiff_reasons(key, template)
    for (name, x), g in zip(case.inputs.items(), fd):
        reason = reasons.get("*", reasons.get(x.param or name))
        if isinstance(reason, str) and not any(r in reason for r in UNCHECKABLE):
            assert np.all(np.abs(g) <= 1e-6), (
                f"{key_id(key)}: {x.param or name} is declared non-differentiable ({reason!r}) but finite "
                f"differences of d/d{name} are {g!r}:\n{shown}"
            )


def check_refused(built, names, case):
    """sourcegrad refuses the case at compile time, naming the parameter and the line; where numpy
    refuses the value itself (``built.out`` is its exception), numpy's error may come instead."""
    numpy_error = (type(built.out),) if isinstance(built.out, Exception) else ()
    for specialize in (False, True):
        with pytest.raises(
            (sg.MissingAdjointError, sg.UnsupportedSyntaxError) + numpy_error
        ) as err:
            sg.value_and_grad(built.f, wrt=names, specialize=specialize)(*copy.deepcopy(built.args))
        if isinstance(err.value, numpy_error) and not isinstance(err.value, sg.SourcegradError):
            continue
        message = str(err.value)
        assert case.refused in message and f"line {built.line}" in message, (
            f"the refusal should name {case.refused!r} and line {built.line}: {message}\n{built.shown}"
        )


# ---- the tests --------------------------------------------------------------------------------------


def test_every_registered_function_has_a_spec():
    missing = [key_id(k) for k in registered() if k not in S.SPECS]
    assert not missing, f"add a spec to tests/systematic_specs.py for: {missing}"


def test_every_spec_names_a_registered_function():
    stale = [key_id(k) for k in S.SPECS if k not in registered()]
    assert not stale, f"specs for functions sourcegrad does not register: {stale}"


def test_spec_inputs_bind_to_parameters():
    """A float input names the parameter it binds to (a typo would leave a parameter unchecked)."""
    for key, (template, _) in registered().items():
        if template is None or key not in S.SPECS:
            continue
        params = set(template.signature())
        for c in cases_of(key):
            assert c.params() <= params, (
                f"{key_id(key)}: {c.expr} binds {c.params() - params}, not parameters of {sorted(params)}"
            )


def rule_parameters():
    return [
        pytest.param(k, p, id=f"{key_id(k)}-{p}", marks=_known_parameter(k, p))
        for k, t in builtin_rules().items()
        for p in t.signature()
    ]


def _known_parameter(key, param):
    reason = KNOWN_PARAMETERS.get((key_id(key), param))
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.mark.parametrize("key, param", rule_parameters())
def test_every_parameter_is_checked_or_declared(key, param):
    """Each parameter of each built-in rule has an adjoint a fast case checks against finite
    differences, or a declared reason to carry none, or takes no float: a case passing it one is
    refused by sourcegrad and by numpy alike."""
    assert key in S.SPECS, f"no spec for {key_id(key)}"
    template = builtin_rules()[key]
    cases = cases_of(key)
    checked = set().union(
        *(cases[i].params() for i, _ in fast_profile(key, cases) if not cases[i].refused)
    )
    accumulated = {s.target for s in template.stmts if s.accumulate}
    if param in accumulated:
        assert param in checked, f"{key_id(key)}: {param} has an adjoint no fast case checks"
        return
    if param in dict(template.nondiff) or param in checked:
        return  # declared (its FD is checked to be 0 where a case passes a float), or checked
    probes = [c for c in cases if c.refused == param]
    assert probes, (
        f"{key_id(key)}: {param} has no adjoint and no declared reason: declare it (nondiff=), "
        "or add a case passing it a float (refused=...) to show numpy takes none"
    )
    for c in probes:
        args = [draw(_rng(c.expr), x, np.float64) for x in c.inputs.values()]
        assert not _numpy_accepts(lambda: _value_function(c)(*args)), (
            f"{key_id(key)}: {param} takes a float ({c.expr} with {args}) but has no adjoint (refused when active)"
        )


def test_every_method_and_attribute_has_a_case():
    """ndarray methods and attributes (``x.sum()``, ``x.T``) stand for registered functions: each
    spelling appears in some case."""
    exprs = [c.expr for k in S.SPECS if k in registered() for c in cases_of(k)]
    missing = [
        n
        for n in list(R.METHODS) + list(R.ATTRIBUTES)
        if not any(re.search(rf"\.{n}\b", e) for e in exprs)
    ]
    assert not missing, f"add a case spelling these as methods or attributes: {missing}"


def test_undeclared_parameters_of_partly_nondiff_functions_are_refused():
    """``nondiff_params`` functions (random draws): each parameter not declared is refused when given
    an active value (a case with ``refused=``), unless numpy refuses a float array there."""
    problems = []
    for key, entry in R.NONDIFF.items():
        if not isinstance(entry, dict) or key not in S.SPECS:
            continue
        refused = {c.refused for c in cases_of(key) if c.refused}
        for p, param in inspect.signature(key).parameters.items():
            if p in entry or p in refused:
                continue
            required = {
                q: 3
                for q, par in inspect.signature(key).parameters.items()
                if par.default is par.empty and q != p
            }
            if _numpy_accepts(lambda: key(**required, **{p: np.full(2, 0.5)})):
                problems.append(
                    f"{key_id(key)}: {p} takes a float array, is not declared, and no case shows it refused"
                )
    assert not problems, "\n".join(problems)


def _numpy_accepts(call):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
    except Exception:
        return False
    return True


FAST = params_for(fast_profile)
SLOW = params_for(slow_profile)


@pytest.mark.parametrize("key, index, dtype", FAST)
def test_rule_table(key, index, dtype):
    check_case(key, cases_of(key)[index], dtype)


@pytest.mark.slow
@pytest.mark.parametrize("key, index, dtype", SLOW)
def test_rule_table_whole_grid(key, index, dtype):
    check_case(key, cases_of(key)[index], dtype)
