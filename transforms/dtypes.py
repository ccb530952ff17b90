"""A value whose dtype is not inexact (float or complex) carries no adjoint.

A cast to an integer or boolean dtype is a step function: its derivative is zero. Two places
enforce it, one for what is known when the code is compiled and one for what is known only when
it runs:

- ``casts_to_exact``, asked by the normalizer where it decides how a call is differentiated
  (``normalize/calls.py``): a call of a primitive with a rule whose ``dtype`` argument is a
  literal dtype that is not inexact (``int``, ``bool``, ``np.int8``, ``"int32"``) makes a value
  with no gradient: the call is non-differentiable, as ``np.zeros`` is.
- ``Inexact`` (read by the analysis and the reverse pass): the definitions whose result may have
  an integer or boolean dtype although a differentiated value flows in: a write into a buffer of
  a dtype not known to be inexact (``buf = np.zeros_like(k); buf[0] = v``: ``k`` may hold
  integers), a primitive whose result takes its dtype from an operand without an adjoint
  (``np.full_like(k, v)``, ``np.add.at(buf, i, v)``), and a call whose ``dtype`` is a variable.
  The backward of each of them starts with ``g = inexact_part(g, y)``: the adjoint, or zeros when
  ``y``'s dtype is not inexact (a test of the dtype's kind; the backward reads only ``y``'s dtype).

Which names surely hold inexact values is a flow-insensitive, optimistic fixpoint over their
definitions: the ``wrt`` arguments (sourcegrad refuses integer ones), allocations whose dtype is
a literal inexact one or numpy's float default, and a differentiable primitive with an inexact
operand bound to a parameter with an adjoint (numpy's promotion keeps it inexact). Anything else
(another argument, a loop variable, a call without a rule) is not known to be inexact.
"""

from __future__ import annotations

import numpy as np

from . import ir
from . import rules as R

_INEXACT_KINDS = "fc"
_OPAQUE_KINDS = "OV"  # objects and void: what they hold decides; left alone


def literal_dtype(atom):
    """The numpy dtype a constant ``dtype=`` argument names, or None (not a constant, None, or
    not a dtype numpy knows)."""
    if not isinstance(atom, ir.Const) or atom.value is None:
        return None
    try:
        return np.dtype(atom.value)
    except (TypeError, ValueError):
        return None


def is_exact(dtype):
    """Is ``dtype`` one whose values carry no gradient (integers, booleans, strings, dates)?"""
    return dtype.kind not in _INEXACT_KINDS + _OPAQUE_KINDS


def dtype_argument(key, args, kwargs):
    """The atom a call of ``key`` passes as its ``dtype`` parameter (by keyword or, as numpy
    binds it, by position), or None when it passes none."""
    for k, v in kwargs:
        if k == "dtype":
            return v
    if not args:
        return None
    try:
        where = _DTYPE_POSITION.get(key)
    except TypeError:  # an unhashable key
        return None
    if where is None:
        where = _DTYPE_POSITION[key] = _dtype_position(key)
    position, most = where
    if position is None or len(args) <= position or (most is not None and len(args) > most):
        return None  # (too many: the call fails as it would without sourcegrad)
    return args[position]


# key -> (the position ``dtype`` may be passed at, or None; how many positional arguments the
# signature takes, None for any): a signature is read once per function, not once per call
_DTYPE_POSITION = {}


# where numpy's functions take ``dtype`` by position, for builds whose builtins have no signature
# Python can read (numpy 2.2: np.zeros, np.array, ...): without it, np.zeros(3, np.int8) would be
# taken for a float buffer
_KNOWN_POSITION = {
    np.zeros: (1, 3),
    np.ones: (1, 3),
    np.empty: (1, 3),
    np.full: (2, 4),
    np.array: (1, None),
    np.asarray: (1, None),
    np.asanyarray: (1, None),
    np.ascontiguousarray: (1, None),
    np.zeros_like: (1, None),
    np.ones_like: (1, None),
    np.empty_like: (1, None),
    np.full_like: (2, None),
    np.arange: (3, 4),
    np.eye: (3, 5),
    np.identity: (1, 2),
    np.tri: (3, 5),
    np.linspace: (5, 7),
    np.sum: (2, None),
    np.prod: (2, None),
    np.mean: (2, None),
    np.cumsum: (2, None),
    np.cumprod: (2, None),
    np.trace: (4, None),
}


def _dtype_position(key):
    from .analyze import _NO_SIG, _signature

    known = _KNOWN_POSITION.get(key)
    if known is not None:
        return known
    sig = _signature(key)
    if sig is _NO_SIG:
        return None, None
    position, most = None, 0
    for k, p in enumerate(sig.parameters.values()):
        if p.kind is p.VAR_POSITIONAL:
            return position, None
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break
        most = k + 1
        if p.name == "dtype":
            position = k
    return position, most


def casts_to_exact(key, args, kwargs):
    """Does this call of a primitive with a rule pass a literal dtype that is not inexact?"""
    dtype = literal_dtype(dtype_argument(key, args, kwargs))
    return dtype is not None and is_exact(dtype)


# primitives whose result takes its dtype from the operand bound to this parameter, which carries
# no gradient or only its own (``np.full_like(a, v)``: ``a``'s dtype; ``add_at(a, i, b)``)
_DTYPE_FROM = {np.full_like: "a"}
for _at in [*R.UFUNC_AT.values(), *R.IN_PLACE.values()]:
    _DTYPE_FROM[_at] = "a"
# float by default, whatever their operands (their ``dtype=`` aside)
_FLOAT_DEFAULT = {np.zeros, np.ones, np.empty, np.eye, np.identity, np.linspace, np.tri}
# the operand whose dtype the result has when no ``dtype=`` is given
_LIKE = {np.zeros_like: 0, np.ones_like: 0, np.empty_like: 0}
# their adjoint casts at run time already (``cast_like``: zero for an integer result)
_CASTS_AT_RUN_TIME = {R.indexing._astype, R.indexing._as_dtype}


class Inexact:
    """Which names surely hold inexact values, and which definitions need ``inexact_part``."""

    def __init__(self, fn, wrt, bindings):
        self.bindings = bindings
        self.sequences = fn.info.get("sequences", ())
        self.defs = {}
        for s in ir.walk(fn.body):
            if isinstance(s, (ir.Assign, ir.For, ir.Append)):
                self.defs.setdefault(s.target, []).append(s)
        self.names = self._fixpoint(set(wrt), set(fn.params) - set(wrt))

    def _fixpoint(self, wrt, others):
        # optimistic: a name is inexact until a definition shows otherwise; an argument not
        # differentiated may hold anything
        known = (wrt | set(self.defs)) - others
        changed = True
        while changed:
            changed = False
            for name, defs in self.defs.items():
                if name in known and not all(self._makes_inexact(d, known) for d in defs):
                    known.discard(name)
                    changed = True
        return known

    def _atom(self, atom, known):
        if isinstance(atom, ir.Const):
            return isinstance(atom.value, (float, complex, np.inexact))
        if isinstance(atom, ir.Tup):  # a tuple or list literal: every entry
            return len(atom) > 0 and all(self._atom(a, known) for a in atom)
        return isinstance(atom, ir.Name) and atom.id in known

    def _makes_inexact(self, s, known):
        if not isinstance(s, ir.Assign):
            return False  # a loop variable, a list appended to
        op = s.op
        if op.kind == "copy":
            return self._atom(op.args[0], known)
        if op.kind not in ("call", "nondiff") or not callable(op.key):
            return False
        try:
            key = op.key
            hash(key)
        except TypeError:
            return False
        given = dtype_argument(key, op.args, op.kwargs)
        dtype = literal_dtype(given)
        if dtype is not None:
            return not is_exact(dtype) and dtype.kind not in _OPAQUE_KINDS
        if isinstance(given, ir.Name):
            return False  # a variable dtype
        if key in _FLOAT_DEFAULT:
            return True
        if key in _LIKE:
            return len(op.args) > _LIKE[key] and self._atom(op.args[_LIKE[key]], known)
        b = self.bindings.get(id(op))
        if op.kind != "call" or b is None:
            return False
        if key in _DTYPE_FROM:
            return self._atom(b.values.get(_DTYPE_FROM[key]), known)
        return any(self._atom(b.values[p], known) for p in b.diff if p in b.values)

    def guarded(self, s):
        """Does the backward of active definition ``s`` start with ``inexact_part``?"""
        if isinstance(s, ir.SetItem):
            return s.target not in self.names and s.target not in self.sequences
        if not isinstance(s, ir.Assign) or s.op.kind != "call" or s.target in self.names:
            return False
        key = s.op.key
        try:
            if key in _CASTS_AT_RUN_TIME:
                return False
        except TypeError:
            return False
        if key in _DTYPE_FROM:
            return True
        return isinstance(dtype_argument(key, s.op.args, s.op.kwargs), ir.Name)
