"""The adjoint rule library: one primitive, one template.

Rules are data. ``RULES`` maps a primitive (``np.tanh``, ``operator.mul``, ``math.sin``) to its
``Template``, parsed when a compile first reads it; ``NONDIFF`` lists primitives whose results carry no gradient (comparisons, ``sign``,
``argmax``, ``zeros_like``); ``METHODS`` maps ndarray method and attribute names to the primitive
they stand for; ``VARIANTS`` the primitive a call's keywords choose (``np.sum(x, where=m)`` is a
masked sum with its own rule); ``UFUNC_AT`` the primitive ``np.add.at(buf, idx, v)`` stands for,
``IN_PLACE`` the one ``np.fill_diagonal(buf, v)`` does;
``GENERATOR_METHODS`` the draws of a local ``np.random.Generator``. The helpers below cover the
common shapes of rule so most need no body:

- ``unary(fns, "expr")``          ``d[x] += expr``   (``y`` result, ``x`` input, ``d[y]`` adjoint)
- ``binary(fns, "dx", "dy")``     broadcasting two-argument rules
- ``rule(fns, "params", "body")`` anything else, as template text
- ``@adjoint(fn)``                a template written as a Python function (the public form)
- ``nondiff(*fns, reason=...)``   functions whose value is piecewise constant in every argument

**A primitive's other facts are declared with its rule.** ``shape="reduction"`` names the rule of
``transforms/shapes.py`` its result's shape follows, ``fresh=True`` says its result is new memory,
never a view of an operand (``transforms/aliasing.py``); ``facts(fns, ...)`` declares them for
part of a list registered together. The analyses read ``SHAPES`` and ``FRESH``, built from these
declarations, so a new primitive is added in one place.

**Non-differentiability is declared per parameter, with a reason.** A template parameter no
``d[p] += ...`` line accumulates into carries no gradient; it must say why in ``NONDIFF_PARAMS``
(the conventional names: ``axis``, ``dtype``, ``shape``, ...) or in the rule's own ``nondiff=``
(``np.where``'s ``condition``: "a boolean mask"). The gate (``transforms/gate.py``) refuses at
compile time an active value that binds to a parameter with neither an adjoint nor a declared
reason, and ``tests/test_systematic.py`` walks every rule's parameters to keep the declarations
true.
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings

import numpy as np

import sourcegrad.runtime as _runtime

from ..templates import Deferred, Templates, parse_template, template_from_function

RULES = Templates()  # parsed on first use (``templates.Deferred``)
NONDIFF = {}  # primitive -> why no gradient flows through any of its arguments
METHODS = {}  # ndarray method name -> primitive key
ATTRIBUTES = {}  # ndarray attribute name -> primitive key (``T``) or None (non-differentiable)
GENERATOR_METHODS = {}  # np.random.Generator method name -> the method (``rng.normal(size=3)``)
UFUNC_AT = {}  # ufunc -> the primitive ``ufunc.at(buf, indices, values)`` on a local buffer stands for
# a numpy function that writes into its first argument -> the primitive it stands for on a local
# buffer: ``np.fill_diagonal(a, v)`` is ``a = filled_diagonal(a, v, False)``
IN_PLACE = {}
# functions whose result's attributes are constants (``np.finfo(x.dtype).eps``)
CONSTANT_OBJECTS = set()
SIGNATURES = {}  # primitive -> inspect.Signature used to bind its call arguments
# primitive -> ((keywords, variant), ...): a call passing any of those keywords is the variant's
# call (``np.sum(x, where=m)`` is a masked sum, with its own rule; the plain rule stays lean)
VARIANTS = {}
# What the compiler knows of a primitive besides its derivative, declared where it is registered
# (``shape=``, ``fresh=``, or ``facts`` for part of a list). A ufunc needs neither: the analyses
# know that its result is new memory and (for one that is no gufunc) broadcasts its operands.
# primitive -> the kind of its result's shape, a rule of ``transforms/shapes.py`` (``"reduction"``)
SHAPES = {}
# primitives whose result never shares memory with an operand (``transforms/aliasing.py``)
FRESH = set()

# Parameters that carry no gradient wherever a rule has them, and why. A rule declares any other
# parameter it does not differentiate in its own ``nondiff=``. None: the parameter has no adjoint
# but takes a number a gradient could flow through: refused when active.
NONDIFF_PARAMS = {
    "axis": "an axis",
    "axes": "axes",
    "axis1": "an axis",
    "axis2": "an axis",
    "source": "axes",
    "destination": "axes",
    "keepdims": "a boolean flag",
    "dtype": "a dtype",
    "order": "a memory order",
    "shape": "a shape",
    "newshape": "a shape",
    "mode": "a mode name",
    "offset": "an integer offset",
    "k": "an integer offset or count",
    "n": "an integer count",
    "index": "an index",
    "indices": "indices",
    "obj": "indices",
    "reps": "integer counts",
    "repeats": "integer counts",
    "indices_or_sections": "integer indices",
    "shift": "an integer shift",
    "ord": None,
    "include_initial": "a boolean flag",
    "condition": "a boolean mask",
    "pad_width": "integer widths",
    "copy": "a boolean flag",
    "ctx": "the Function's context",
}

NAMESPACE = {"np": np}
NAMESPACE.update({n: getattr(_runtime, n) for n in _runtime.__all__})


def _as_list(fns):
    return fns if isinstance(fns, (list, tuple)) else [fns]


def _declare(template, nondiff, origin):
    """Attach the reason each parameter without an adjoint has none; a built-in rule must give
    one for every such parameter (a rule added without it fails here, when its template is first
    parsed; ``tests/test_gate.py`` parses every rule)."""
    accumulated = {s.target for s in template.stmts if s.accumulate}
    reasons = {}
    for p in template.signature():
        if p in accumulated:
            if p in (nondiff or {}):
                raise ValueError(f"{origin}: {p} is declared non-differentiable but has an adjoint")
            continue
        declared = {**NONDIFF_PARAMS, **(nondiff or {})}
        if p not in declared:
            raise ValueError(
                f"{origin}: parameter {p!r} has no adjoint and no declared reason (nondiff=)"
            )
        if declared[p] is not None:  # None: no adjoint, and an active value there is refused
            reasons[p] = declared[p]
    return dataclasses.replace(template, nondiff=tuple(reasons.items()))


def facts(fns, *, shape=None, fresh=False):
    """Declare what shape inference and the aliasing analysis may assume of ``fns``: ``shape``
    names the rule of ``transforms/shapes.py`` their result's shape follows (``"reduction"``:
    the operand's shape without the literal axes reduced), ``fresh`` that the result is always
    new memory, never a view of an operand (``np.sum``, not ``np.reshape``). Without either the
    analyses assume nothing: the shape is unknown, the result may alias its first operand."""
    for fn in _as_list(fns):
        if fn is None:
            continue
        if shape is not None:
            SHAPES[fn] = shape
        if fresh:
            FRESH.add(fn)


def _register(fns, template, *, builtin=True, signature=None):
    for fn in _as_list(fns):
        if fn is None:
            continue
        if not builtin and (fn in RULES or fn in NONDIFF):
            warnings.warn(
                f"sourcegrad.adjoint: the rule for {getattr(fn, '__name__', fn)!r} replaces an existing one",
                stacklevel=3,
            )
        NONDIFF.pop(fn, None)
        RULES[fn] = template
        if signature is not None:
            SIGNATURES[fn] = signature


def rule(
    fns,
    params,
    body,
    *,
    signature=None,
    only=None,
    literal=(),
    broadcasting=False,
    ranks=None,
    nondiff=None,
    shape=None,
    fresh=False,
):
    """Register a template given as text: ``params`` like ``"y, a, axis=None"``. ``only`` maps a
    parameter to the constant values the rule handles (``only={"mode": ("constant",)}``): a call
    with another literal value is refused when it is compiled, and so is a variable for the
    parameters named in ``literal`` (or for any the body does not read). ``ranks`` maps the ranks of the
    differentiated operands, in order, to a body used when shape inference knows them.
    ``nondiff`` maps each parameter the body does not differentiate, beyond the conventional
    ``NONDIFF_PARAMS``, to the reason it carries no gradient. ``shape`` and ``fresh`` are the
    primitive's other facts (``facts``)."""
    origin = f"rule for {getattr(_as_list(fns)[0], '__name__', fns)}"

    def build():
        names, defaults = _parse_params(params)
        template = parse_template(body, names, defaults, NAMESPACE, origin)
        if only:
            template = dataclasses.replace(
                template, only=tuple(only.items()), literal=frozenset(literal)
            )
        if broadcasting:
            template = dataclasses.replace(template, broadcasting=True)
        if ranks:
            variants = tuple(
                (k, parse_template(v, names, defaults, NAMESPACE, f"{origin}, ranks {k}"))
                for k, v in ranks.items()
            )
            template = dataclasses.replace(template, ranks=variants)
        return _declare(template, nondiff, origin)

    _register(fns, Deferred(build), signature=signature)
    facts(fns, shape=shape, fresh=fresh)


def internal_rule(fn, params, body, helpers, nondiff, what):
    """Register the rule of a primitive the normalizer makes (an attribute read, a dict entry
    read, a dict literal): ``params`` as a list, ``helpers`` the runtime functions ``body``
    calls, ``nondiff`` the reasons of the parameters without an adjoint. Parsed on first use."""

    def build():
        template = parse_template(body, params, {}, helpers, f"{what} (normalize)")
        return _declare(template, nondiff, what)

    _register(fn, Deferred(build))


def _parse_params(params):
    sig = inspect.signature(eval(f"lambda {params}: None"))  # noqa: S307 (our own literal text)
    names = list(sig.parameters)
    defaults = {
        k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty
    }
    return names, defaults


def unary(fns, expr, *, shape=None, fresh=False):
    rule(fns, "y, x", f"d[x] += {expr}", shape=shape, fresh=fresh)


def binary(fns, dx, dy):
    rule(
        fns,
        "z, x, y",
        f"d[x] += unbroadcast({dx}, x)\nd[y] += unbroadcast({dy}, y)",
        broadcasting=True,
    )


def nondiff(*fns, reason, shape=None, fresh=False):
    """``fns`` carry no gradient through any argument: each is piecewise constant (a comparison,
    ``np.sign``, ``argmax``), or its value does not depend on its arguments' values (``len``,
    ``np.shape``, ``zeros_like``). A function with a differentiable parameter (``np.full``'s
    fill value) is a ``rule`` instead, with that parameter's adjoint."""
    for fn in fns:
        if fn is not None:
            NONDIFF[fn] = reason
    facts(fns, shape=shape, fresh=fresh)


def nondiff_params(fn, reasons, *, fresh=False):
    """``fn`` has no rule; the parameters in ``reasons`` carry no gradient for the reason given,
    and an active value passed to any other is refused (``np.random.normal``'s ``size`` is a
    shape; its ``loc`` is not)."""
    if fn is not None:
        NONDIFF[fn] = dict(reasons)
    facts(fn, fresh=fresh)


def adjoint(fn, *, nondiff=None):
    """Register an adjoint rule for ``fn`` written as a template function::

        @sourcegrad.adjoint(scipy.special.expit)
        def _(y, x):
            d[x] += d[y] * y * (1.0 - y)

    The first parameter is the primal result, the others are ``fn``'s parameters (with the same
    names and defaults, so keyword arguments bind). ``d[x]`` is the adjoint of ``x``. A parameter
    the rule has no ``d[p] += ...`` for carries no gradient: an active value passed there is
    refused at compile time unless ``nondiff`` names it with a reason (``nondiff={"axis": "an
    axis"}``). Warns when the rule replaces an existing one."""

    def register(template_fn):
        template = template_from_function(template_fn)
        accumulated = {s.target for s in template.stmts if s.accumulate}
        # only what the user declares: a conventional name (``k``, ``n``) may be a float in a user's function
        reasons = {p: (nondiff or {}).get(p) for p in template.signature() if p not in accumulated}
        template = dataclasses.replace(
            template, nondiff=tuple((p, r) for p, r in reasons.items() if r)
        )
        _register(fn, template, builtin=False)
        return template_fn

    return register


def lookup(key):
    return RULES.get(key)


def variant(fn, kwargs):
    """The primitive a call of ``fn`` with keyword arguments ``kwargs`` (pairs) stands for."""
    try:
        options = VARIANTS.get(fn, ())
    except TypeError:  # an unhashable callee
        return fn
    names = {k for k, _ in kwargs}
    for keywords, v in options:
        if names & keywords:
            return v
    return fn


def add_variant(fns, keywords, v):
    """Calls of ``fns`` that pass any of ``keywords`` are calls of ``v`` (a function with the same
    signature, which has its own rule)."""
    for fn in _as_list(fns):
        if fn is not None:
            VARIANTS.setdefault(fn, ())
            VARIANTS[fn] += ((frozenset(keywords), v),)


def nondiff_reason(template, param):
    """Why ``param`` of ``template`` carries no gradient, or None when it has no declared reason."""
    return dict(template.nondiff).get(param)


def is_nondiff(key):
    try:
        return key in NONDIFF
    except TypeError:
        return False


from . import elementwise, reductions, products, linalg, shape, indexing, sequences, fft  # noqa: E402,F401  (registers)

# scipy.special, scipy.stats, scipy.linalg and scipy.signal: each registers its rules where scipy
# imports, and none otherwise
from . import special, stats, scipy_linalg, signal  # noqa: E402,F401
