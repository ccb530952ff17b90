"""Python lists and tuples are values with their own operations, not arrays.

Expects: normalized IR. Guarantees: every ``+`` and ``*`` whose operand is known to be a Python
list or tuple is the sequence operation (concatenation, repetition) with its own adjoint; a
list or tuple passed where a numpy rule differentiates an array is first made an array by an
explicit ``np.asarray`` whose adjoint gives each entry its slice (``np.mean(losses)`` over an
appended list of per-step losses); ``max``/``min`` of one sequence pick its extreme entry.

Which names hold sequences is known statically, flow-insensitively (a name is a sequence when
every definition makes one: a list or tuple literal, a comprehension, ``append``, ``list(...)``,
a concatenation, a slice of a sequence, ``np.split``...), and so is which hold Python ints
(``len``, ``int``, loop counters, int literals): ``seq * n`` repeats only for a Python int, while
an array, a float or a numpy integer makes numpy multiply the entries (``x * [2.0, 3.0]``). A
parameter's kind comes from the call the code is specialized to (``signature``).

Python decides ``a + b`` and ``a * b`` by the values, so the compiler may choose only what every
value it can see agrees on: concatenation where both operands are sequences, numpy's operation
where one is an array or float. Where one is a sequence and the other unknown (a parameter of
the general code, an entry of a container), the sequence primitive is kept, and its adjoint
decides from the values which operation ran (``runtime/sequences.py``). Where neither is known,
the operation is compiled as numpy's, and the runtime refuses a list or tuple that reaches an
array rule's adjoint in a shape broadcasting changed (``unbroadcast``), so a concatenation is
never summed as an array silently.
"""

from __future__ import annotations

import builtins
import operator
from dataclasses import replace

import numpy as np

from sourcegrad.runtime import (
    concat_sequences,
    dict_from,
    max_of_sequence,
    min_of_sequence,
    repeat_sequence,
    stack_entries,
)

from . import fence, ir
from . import rules as R
from .analyze import bind
from .ir import Tup
from .normalize.syntax import BINOPS

# NOT: an array or a float, with which a list is numpy's operand (an array's entry, a numpy
# integer, may repeat a list as a Python int does, so it is not NOT but unknown)
SEQ, INT, NOT = "sequence", "int", "an array or a float"

# functions whose result is a list or tuple
_MAKE_SEQUENCE = {
    list,
    tuple,
    sorted,
    builtins.reversed,
    np.split,
    np.array_split,
    np.meshgrid,
    getattr(np, "unstack", None),
    concat_sequences,
    repeat_sequence,
}
# the primitives this pass makes, and a dict comprehension's: they take their sequences as such
_PRIMITIVES = {
    concat_sequences,
    repeat_sequence,
    max_of_sequence,
    min_of_sequence,
    stack_entries,
    dict_from,
}
# rule parameters that take a sequence of arrays as such (np.stack's arrays, sum's iterable,
# scipy.linalg.cho_solve's (c, lower))
_SEQUENCE_PARAMS = {"arrays", "tup", "iterable", "xs", "condlist", "choicelist", "c_and_lower"}


def rewrite(src, irfn, naming, signature=None):
    """Give sequence operations their own primitives (see the module docstring). ``signature``:
    what the call the code is specialized to records of each parameter (``api.signature_of``)."""
    entry = _parameter_kinds(irfn.params, signature)
    if SEQ not in entry.values() and not _makes_sequences(irfn.body):
        irfn.info["sequences"] = set()  # no name can hold a sequence: nothing to rewrite
        return irfn
    kinds = _kinds(irfn, entry)
    for s in ir.walk(irfn.body):
        if (
            isinstance(s, ir.SetItem)
            and kinds.get(s.target) == SEQ
            and any(isinstance(p, ir.Slice) for p in s.index.parts)
        ):
            fence.refuse(
                src,
                s.pos,
                msg="assigning to a slice of a list is not supported (it may change the "
                "list's length)",
                hint="build a new list: xs = xs[:i] + [...] + xs[j:]",
            )
    irfn.info["sequences"] = {n for n, k in kinds.items() if k == SEQ}
    irfn.body = _block(irfn.body, kinds, naming)
    return irfn


_BOTTOM = "no definition seen yet"


def _makes_sequences(body):
    """Does anything in ``body`` make a list or tuple (a literal, ``append``, a function that
    returns one)? Where nothing does, and no parameter is one, no name holds a sequence."""
    for s in ir.walk(body):
        if isinstance(s, ir.Append):
            return True
        op = getattr(s, "op", None)
        if op is None:
            continue
        if _member(op.key, _MAKE_SEQUENCE):
            return True
        for a in (*op.args, *(v for _, v in op.kwargs)):
            if isinstance(a, Tup) or isinstance(a, ir.Const) and isinstance(a.value, (list, tuple)):
                return True
    return False


def _parameter_kinds(params, signature):
    """Each parameter's kind on entry, from the call's signature (None: unknown)."""
    if signature is None:
        return dict.fromkeys(params)
    out = {}
    for p, k in zip(params, signature):
        if k is list or k is tuple:
            out[p] = SEQ
        elif k is int:
            out[p] = INT
        elif k is float or type(k) is tuple:
            out[p] = NOT  # a float, or an array's shape
        else:
            out[p] = None
    return out


def _kinds(irfn, entry):
    """Each name's kind: SEQ, INT, NOT, or None (unknown: its definitions disagree or do not
    say). ``entry``: the parameters' kinds on entry. An optimistic fixpoint (every defined name
    starts with no kind), so ``xs = xs * 2`` after ``xs = [x]`` is a repetition."""
    defs = {}
    for s in ir.walk(irfn.body):
        if isinstance(s, (ir.Assign, ir.Append, ir.SetItem, ir.For)):
            defs.setdefault(s.target, []).append(s)
    kinds = dict.fromkeys(defs, _BOTTOM)
    for p, k in entry.items():
        kinds.setdefault(p, k)
    # a name's kind follows from the kinds of the names its definitions read: where none of those
    # changed since it was last worked out, it would come out the same, and is not worked out again
    reads = {name: {n for d in ds for n in _read_by(d)} for name, ds in defs.items()}
    changed_at, seen_at, step = {}, {}, 0
    changed = True
    while changed:
        changed = False
        for name, ds in defs.items():
            last = seen_at.get(name)
            if last is not None and all(changed_at.get(n, -1) < last for n in reads[name]):
                continue
            step += 1
            seen_at[name] = step
            seen = {_kind_of_def(d, kinds) for d in ds} - {_BOTTOM}
            if name in entry:
                seen.add(entry[name])  # a parameter the body assigns again
            k = (seen.pop() if len(seen) == 1 else None) if seen else _BOTTOM
            if kinds[name] != k:
                kinds[name] = k
                changed_at[name] = step
                changed = True
    return {n: (None if k is _BOTTOM else k) for n, k in kinds.items()}


def _read_by(s):
    """The names whose kinds ``_kind_of_def(s, ...)`` reads."""
    if isinstance(s, ir.SetItem):
        return (s.target,)
    if isinstance(s, ir.Assign):
        return tuple(a.id for a in s.op.args if isinstance(a, ir.Name))
    return ()


def _kind_of_def(s, kinds):
    if isinstance(s, ir.Append):
        return SEQ
    if isinstance(s, ir.For):
        return INT  # the loop counter
    if isinstance(s, ir.SetItem):
        return kinds.get(s.target)
    op = s.op
    if op.kind == "copy":
        return kind_of(op.args[0], kinds)
    key = op.key
    if _member(key, _MAKE_SEQUENCE):
        return SEQ
    if _member(key, _MAKE_INT):
        return INT
    if _member(key, _ARITHMETIC):
        return _arithmetic(key, [kind_of(a, kinds) for a in op.args])
    if key is operator.getitem:
        base, index = op.args
        kb = kind_of(base, kinds)
        if kb == SEQ and any(isinstance(p, ir.Slice) for p in index.parts):
            return SEQ
        return _BOTTOM if kb is _BOTTOM else None  # an entry: a numpy integer repeats a list
    # anything else: x.shape is a tuple, a function without a rule may return anything, and a
    # numpy function's result may be a numpy integer (which repeats a list as an int does)
    return None


# the result is a Python int when every operand is one
_MAKE_INT = {builtins.len, builtins.int, operator.index}
_INT_PRESERVING = {
    operator.add,
    operator.sub,
    operator.mul,
    operator.floordiv,
    operator.mod,
    operator.neg,
    operator.pos,
}
_ARITHMETIC = _INT_PRESERVING | {operator.truediv, operator.pow}


def _arithmetic(key, ks):
    """The kind of an arithmetic operation's result, from its operands' kinds."""
    if _BOTTOM in ks:
        return _BOTTOM
    if key is operator.add and all(k == SEQ for k in ks):
        return SEQ  # concatenation
    if key is operator.mul and SEQ in ks and INT in ks:
        return SEQ  # repetition
    if key in (operator.add, operator.mul) and SEQ in ks and None in ks:
        return None  # which one, the values decide
    if NOT in ks:
        return NOT  # numpy's (or a float's) arithmetic; a sequence operand is made an array
    if all(k == INT for k in ks):
        return INT if key in _INT_PRESERVING else None
    return None


def kind_of(atom, kinds):
    if isinstance(atom, Tup):
        return SEQ
    if isinstance(atom, ir.Name):
        return kinds.get(atom.id)  # a parameter of unknown kind: None
    if isinstance(atom, ir.Const):
        v = atom.value
        if isinstance(v, (list, tuple)):
            return SEQ
        return INT if type(v) is int or type(v) is bool else NOT
    return None


def _member(key, group):
    try:
        return key in group
    except TypeError:
        return False


def _block(stmts, kinds, naming):
    out = []
    for s in stmts:
        if isinstance(s, ir.Assign):
            out.extend(_assign(s, kinds, naming))
        elif isinstance(s, ir.If):
            out.append(
                ir.If(s.test, _block(s.body, kinds, naming), _block(s.orelse, kinds, naming), s.pos)
            )
        elif isinstance(s, ir.For):
            out.append(replace(s, body=_block(s.body, kinds, naming)))
        elif isinstance(s, ir.While):
            out.append(ir.While(s.test, _block(s.body, kinds, naming), s.pos))
        else:
            out.append(s)
    return tuple(out)


def _with_key(s, key, args=None):
    op = s.op
    return ir.Assign(
        s.target,
        ir.Op(key, op.args if args is None else args, op.kwargs, op.text, "call"),
        s.pos,
        s.inplace,
        s.node,
    )


def _assign(s, kinds, naming):
    op = s.op
    if op.kind != "call":
        return [s]
    key = op.key
    ks = [kind_of(a, kinds) for a in op.args]
    if key is operator.add and SEQ in ks and not op.kwargs and all(k in (SEQ, None) for k in ks):
        return [_with_key(s, concat_sequences)]  # concatenation, or one the values decide
    if key is operator.mul and SEQ in ks and not op.kwargs and (INT in ks or None in ks):
        return [_with_key(s, repeat_sequence)]  # repetition, or one the values decide
    if (key is builtins.max or key is builtins.min) and len(op.args) == 1 and not op.kwargs:
        return [_with_key(s, max_of_sequence if key is builtins.max else min_of_sequence)]
    if key is operator.getitem or isinstance(key, str) or _member(key, _PRIMITIVES):
        return [s]  # (a sequence primitive in code sourcegrad generated: a jvp differentiated)
    return _stack_arguments(s, kinds, naming)


def _stack_arguments(s, kinds, naming):
    """``f(seq)`` where ``f`` differentiates an array: ``_t = np.asarray(seq); f(_t)``."""
    op = s.op
    if R.lookup(op.key) is None or not any(
        kind_of(a, kinds) == SEQ for a in op.args + tuple(v for _, v in op.kwargs)
    ):
        return [s]
    try:
        binding = bind(op)
    except TypeError:
        return [s]  # refused with its message when the calls are bound
    convert = {}
    for p in binding.diff:
        v = binding.values[p]
        if p in _SEQUENCE_PARAMS or kind_of(v, kinds) != SEQ:
            continue
        convert[_key(v)] = v  # a constant one too: its adjoint helpers read its shape
    if not convert:
        return [s]
    pre, new = [], {}
    for k, v in convert.items():
        t = naming.temp()
        pre.append(
            ir.Assign(
                t,
                ir.Op(stack_entries, (v,), (), f"np.asarray({v.render()})", "call"),
                s.pos,
                node=s.node,
            )
        )
        new[k] = ir.Name(t)
    args = tuple(new.get(_key(a), a) for a in op.args)
    kwargs = tuple((k, new.get(_key(a), a)) for k, a in op.kwargs)
    symbol = _BINARY.get(op.key) if len(args) == 2 and not kwargs else None
    if symbol is not None:  # ``a * b``: written anew from its operands
        text = f"{args[0].render()} {symbol} {args[1].render()}"
    else:
        text = op.text
        for k, v in convert.items():
            text = _replace_atom(text, v.render(), new[k].id)
    return pre + [
        ir.Assign(s.target, ir.Op(op.key, args, kwargs, text, op.kind), s.pos, s.inplace, s.node)
    ]


# operator -> its symbol, from the normalizer's table of the binary operators it lowers
_BINARY = {fn: symbol for fn, symbol in BINOPS.values()}


def _key(atom):
    # a literal may hold an unhashable constant
    return atom if isinstance(atom, ir.Name) else id(atom)


def _replace_atom(text, old, new):
    """Replace the argument ``old`` in a call's text ``f(a, old, k=old)``: arguments are atoms,
    so they are whole, comma- or parenthesis-delimited pieces."""
    head, sep, args = text.partition("(")
    if not sep:
        return text
    body = args[:-1]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        stripped = p.strip()
        name, eq, value = stripped.partition("=")
        if eq and name.isidentifier() and value.strip() == old:
            out.append(f"{name}={new}")
        elif stripped == old:
            out.append(new)
        else:
            out.append(stripped)
    return f"{head}({', '.join(out)})"
