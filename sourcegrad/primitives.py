"""A library function with a rule, differentiated directly: ``grad(np.tanh)``, as ``jax.grad(jnp.sin)``.

sourcegrad differentiates Python source. A numpy, scipy or registered function (``@adjoint``) has
none of its own, but its rule is what a call of it means, so ``grad(np.sqrt)`` differentiates the
one-line function that calls it: ``def sqrt(x): return np.sqrt(x)``, made here with its source
kept where ``inspect`` reads it (``linecache``, as IPython keeps a cell's). Its parameters are
the rule's: the operands by position, and the options the rule reads (``axis``, ``keepdims``, ...)
by keyword with the function's own defaults where Python can write them.
"""

from __future__ import annotations

import inspect
import linecache
import sys
import types

import numpy as np

_RULES = "sourcegrad.transforms.rules"
_MADE = {}  # the library function -> its wrapper (made once)

# where a library function is read from in the wrapper's source, first match wins
_HOMES = ("np", "np.linalg", "np.fft", "scipy.special")


def wrapper_of(fn):
    """The Python function that calls ``fn``, when ``fn`` is a library function with a rule (or
    one of the user's with a rule registered), else None."""
    if isinstance(fn, types.MethodType) or (
        isinstance(fn, types.FunctionType) and _RULES not in sys.modules
    ):
        return None  # (no rule registered yet: the compiler is not even loaded)
    from .transforms import rules as R

    try:
        template = R.lookup(fn)
    except TypeError:  # unhashable: no rule is registered for it
        return None
    if template is None:
        return None  # (nothing kept: a user's function holds what its closure holds)
    made = _MADE.get(fn)
    if made is None:
        made = _MADE[fn] = _make(fn, template) or False
    return made or None


def _make(fn, template):
    # (an option the rule reads only as a literal stays at its default: return_sign=False)
    fixed = {p for p, _ in template.only} | set(template.literal)
    params = _parameters(fn, [p for p in template.signature() if p not in fixed])
    name = getattr(fn, "__name__", None)
    if not params or not (isinstance(name, str) and name.isidentifier()):
        return None
    written, namespace = _written(fn, name)
    header = ", ".join(p if d is inspect.Parameter.empty else f"{p}={d!r}" for p, d in params)
    passed = ", ".join(p if d is inspect.Parameter.empty else f"{p}={p}" for p, d in params)
    text = f"def {name}({header}):\n    return {written}({passed})\n"
    filename = f"<sourcegrad: {written}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    code = compile(text, filename, "exec")
    exec(code, namespace)  # noqa: S102 — the one-line def written above
    return namespace[name]


def _parameters(fn, names):
    """(name, default) of the wrapper's parameters: the rule's operands (no default) and the
    options it reads whose default is a literal (``axis=None``); None when they cannot be told."""
    if isinstance(fn, np.ufunc):
        return [(n, inspect.Parameter.empty) for n in names[: fn.nin]]
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    out = []
    for p in signature.parameters.values():
        if p.name not in names or p.name == "dtype" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue  # (a cast: call the function in your own to pass one)
        if p.default is p.empty:
            if p.kind is p.KEYWORD_ONLY:
                return None
            out.append((p.name, p.empty))
        elif _literal(p.default) and p.kind is not p.POSITIONAL_ONLY:
            out.append((p.name, p.default))
    return out


def _literal(value):
    """Does ``repr(value)`` write ``value`` back (a default the wrapper's header can hold)?"""
    if type(value) in (bool, int, str, type(None)):
        return True
    if type(value) is float:
        return value == value and abs(value) != float("inf")
    return type(value) is tuple and all(_literal(v) for v in value)


def _written(fn, name):
    """How the wrapper's source names ``fn`` (``np.sqrt``, ``scipy.special.expit``), and the
    namespace that reads it so."""
    namespace = {"np": np, "__name__": __name__}
    scipy = sys.modules.get("scipy.special")
    if scipy is not None:
        namespace["scipy"] = sys.modules["scipy"]
    for home in _HOMES:
        try:
            obj = eval(home, namespace)
        except (AttributeError, NameError):
            continue
        if getattr(obj, name, None) is fn:
            return f"{home}.{name}", namespace
    namespace["_function"] = fn
    return "_function", namespace


__all__ = ["wrapper_of"]
