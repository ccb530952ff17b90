"""The adjoint rule library: one primitive, one template.

Rules are data. ``RULES`` maps a primitive (``np.tanh``, ``operator.mul``, ``math.sin``) to its
``Template``; ``NONDIFF`` lists primitives whose results carry no gradient (comparisons, ``sign``,
``argmax``, ``zeros_like``); ``METHODS`` maps ndarray method and attribute names to the primitive
they stand for. The helpers below cover the common shapes of rule so most need no body:

- ``unary(fns, "expr")``          ``d[x] += expr``   (``y`` result, ``x`` input, ``d[y]`` adjoint)
- ``binary(fns, "dx", "dy")``     broadcasting two-argument rules
- ``rule(fns, "params", "body")`` anything else, as template text
- ``@adjoint(fn)``                a template written as a Python function (the public form)
- ``nondiff(*fns)``               no gradient flows through these
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings

import numpy as np

import sourcegrad.runtime as _runtime

from ..templates import parse_template, template_from_function

RULES = {}
NONDIFF = set()
METHODS = {}  # ndarray method name -> primitive key
ATTRIBUTES = {}  # ndarray attribute name -> primitive key (``T``) or None (non-differentiable)
SIGNATURES = {}  # primitive -> inspect.Signature used to bind its call arguments

NAMESPACE = {"np": np}
NAMESPACE.update({n: getattr(_runtime, n) for n in _runtime.__all__})


def _as_list(fns):
    return fns if isinstance(fns, (list, tuple)) else [fns]


def _register(fns, template, *, builtin=True, signature=None):
    for fn in _as_list(fns):
        if fn is None:
            continue
        if not builtin and (fn in RULES or fn in NONDIFF):
            warnings.warn(
                f"sourcegrad.adjoint: the rule for {getattr(fn, '__name__', fn)!r} replaces an existing one",
                stacklevel=3,
            )
        NONDIFF.discard(fn)
        RULES[fn] = template
        if signature is not None:
            SIGNATURES[fn] = signature


def rule(fns, params, body, *, signature=None, only=None, broadcasting=False, ranks=None):
    """Register a template given as text: ``params`` like ``"y, a, axis=None"``. ``only`` maps a
    parameter to the constant values the rule handles (``only={"mode": ("constant",)}``): a call
    with another literal value is refused when it is compiled. ``ranks`` maps the ranks of the
    differentiated operands, in order, to a body used when shape inference knows them."""
    names, defaults = _parse_params(params)
    origin = f"rule for {getattr(_as_list(fns)[0], '__name__', fns)}"
    template = parse_template(body, names, defaults, NAMESPACE, origin)
    if only:
        template = dataclasses.replace(template, only=tuple(only.items()))
    if broadcasting:
        template = dataclasses.replace(template, broadcasting=True)
    if ranks:
        variants = tuple((k, parse_template(v, names, defaults, NAMESPACE, f"{origin}, ranks {k}")) for k, v in ranks.items())
        template = dataclasses.replace(template, ranks=variants)
    _register(fns, template, signature=signature)


def _parse_params(params):
    sig = inspect.signature(eval(f"lambda {params}: None"))  # noqa: S307 (our own literal text)
    names = list(sig.parameters)
    defaults = {k: p.default for k, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}
    return names, defaults


def unary(fns, expr):
    rule(fns, "y, x", f"d[x] += {expr}")


def binary(fns, dx, dy):
    rule(fns, "z, x, y", f"d[x] += unbroadcast({dx}, x)\nd[y] += unbroadcast({dy}, y)", broadcasting=True)


def nondiff(*fns):
    for fn in fns:
        if fn is not None:
            NONDIFF.add(fn)


def adjoint(fn):
    """Register an adjoint rule for ``fn`` written as a template function::

        @sourcegrad.adjoint(scipy.special.expit)
        def _(y, x):
            d[x] += d[y] * y * (1.0 - y)

    The first parameter is the primal result, the others are ``fn``'s parameters (with the same
    names and defaults, so keyword arguments bind). ``d[x]`` is the adjoint of ``x``. Warns when
    the rule replaces an existing one."""

    def register(template_fn):
        _register(fn, template_from_function(template_fn), builtin=False)
        return template_fn

    return register


def lookup(key):
    return RULES.get(key)


def is_nondiff(key):
    try:
        return key in NONDIFF
    except TypeError:
        return False


from . import elementwise, reductions, linalg, shape, indexing  # noqa: E402,F401  (registers)
