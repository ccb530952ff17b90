"""Finite-difference checks for whole functions, on top of the independent oracle.

``tests/oracle.py`` differentiates with respect to one array or float argument. The functions in
the corpus and the control-flow tests also take dicts, lists and tuples of arrays as ``wrt``; here
each leaf of such an argument is differentiated on its own (by wrapping the user's function so
the oracle sees a plain array argument) and the results are put back in the argument's structure.
Nothing here calls sourcegrad except ``check``, which is the code under test.
"""

import copy
import inspect

import numpy as np

import sourcegrad as sg

from ..oracle import assert_close, fd_grad, fd_vjp


# ---- pytrees: dict / list / tuple of arrays and floats -------------------------------------------


def leaves(tree, path=()):
    """``(path, leaf)`` for every array or float in ``tree``, in a fixed order."""
    if isinstance(tree, dict):
        for k in sorted(tree, key=repr):
            yield from leaves(tree[k], path + (k,))
    elif isinstance(tree, (list, tuple)):
        for k, v in enumerate(tree):
            yield from leaves(v, path + (k,))
    else:
        yield path, tree


def replace(tree, path, value):
    """A copy of ``tree`` with the leaf at ``path`` replaced (containers copied, leaves shared)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        out = dict(tree)
        out[head] = replace(tree[head], rest, value)
        return out
    items = list(tree)
    items[head] = replace(tree[head], rest, value)
    return type(tree)(items)


def get(tree, path):
    for k in path:
        tree = tree[k]
    return tree


def _fd_tree(fd, f, args, i, *extra):
    """Apply the oracle ``fd`` to every leaf of ``args[i]``; the result has its structure."""
    tree = args[i]
    if not isinstance(tree, (dict, list, tuple)):
        return fd(f, args, i, *extra)
    out = tree
    for path, leaf in list(leaves(tree)):
        def at_leaf(*a, _path=path):
            a = list(a)
            a[i] = replace(tree, _path, a[i])
            return f(*a)

        sub = list(args)
        sub[i] = leaf
        out = replace(out, path, fd(at_leaf, sub, i, *extra))
    return out


def fd_tree_grad(f, args, i, h=1e-6):
    return _fd_tree(lambda g, a, j: fd_grad(g, a, j, h), f, args, i)


def fd_tree_vjp(f, args, i, cotangent, h=1e-6):
    return _fd_tree(lambda g, a, j: fd_vjp(g, a, j, cotangent, h), f, args, i)


def assert_tree_close(got, want, rtol=1e-5, atol=1e-6, what="gradient"):
    """Same structure (container types, dict keys, lengths), leaves close."""
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{what}: got a {type(got).__name__}, want a dict"
        assert set(got) == set(want), f"{what}: keys {sorted(got)} != {sorted(want)}"
        for k in want:
            assert_tree_close(got[k], want[k], rtol, atol, f"{what}[{k!r}]")
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want), f"{what}: got a {type(got).__name__}, want a {type(want).__name__}"
        assert len(got) == len(want), f"{what}: {len(got)} entries != {len(want)}"
        for k, (g, w) in enumerate(zip(got, want)):
            assert_tree_close(g, w, rtol, atol, f"{what}[{k}]")
    else:
        assert not isinstance(got, (dict, list, tuple)), f"{what}: got a {type(got).__name__}, want an array"
        assert np.shape(got) == np.shape(want), f"{what}: shape {np.shape(got)} != {np.shape(want)}"
        assert_close(got, want, rtol, atol, what)


def _same(a, b):
    a_leaves, b_leaves = list(leaves(a)), list(leaves(b))
    return len(a_leaves) == len(b_leaves) and all(
        pa == pb and np.array_equal(np.asarray(la), np.asarray(lb), equal_nan=True)
        for (pa, la), (pb, lb) in zip(a_leaves, b_leaves)
    )


# ---- the check -------------------------------------------------------------------------------------


def check(f, args, wrt=0, rtol=1e-5, atol=1e-6, h=1e-6):
    """``sg.grad(f, wrt)`` against finite differences, both the code specialized to the
    arguments' shapes and the general code; returns the (specialized) gradients as a tuple.

    Also checks that computing the gradient leaves the arguments as they were."""
    saved = copy.deepcopy(args)
    positions = _positions(f, wrt)
    want = {i: fd_tree_grad(f, copy.deepcopy(saved), i, h) for i in positions}
    out = None
    for specialize in (True, False):
        grads = sg.grad(f, wrt=wrt, specialize=specialize)(*args)
        assert _same(args, saved), "computing the gradient changed the arguments"
        if not isinstance(wrt, (tuple, list)):
            grads = (grads,)
        assert len(grads) == len(positions)
        for g, i in zip(grads, positions):
            assert_tree_close(g, want[i], rtol, atol, what=f"gradient wrt argument {i} (specialize={specialize})")
        out = out or grads
    return out


def check_value(f, args, wrt=0):
    """The value ``sg.value_and_grad(f, wrt)`` returns is ``f(*args)``."""
    saved = copy.deepcopy(args)
    value, _ = sg.value_and_grad(f, wrt=wrt)(*args)
    assert_close(value, f(*saved), 1e-10, 1e-12, what="value")


def check_vjp(f, args, cotangent, wrt=0, rtol=1e-5, atol=1e-6, h=1e-6):
    """``sg.vjp(f, wrt)`` with ``cotangent`` against central differences of ``sum(f * ct)``."""
    saved = copy.deepcopy(args)
    value, pullback = sg.vjp(f, wrt=wrt)(*args)
    assert_close(value, f(*copy.deepcopy(saved)), 1e-10, 1e-12, what="value")
    got = pullback(cotangent)
    positions = _positions(f, wrt)
    if not isinstance(wrt, (tuple, list)):
        got = (got,)
    for g, i in zip(got, positions):
        want = fd_tree_vjp(f, copy.deepcopy(saved), i, cotangent, h)
        assert_tree_close(g, want, rtol, atol, what=f"vjp wrt argument {i}")
    return value, got


def _positions(f, wrt):
    code = inspect.unwrap(f).__code__  # (a functools.wraps wrapper: the wrapped parameters)
    names = code.co_varnames[: code.co_argcount]
    items = wrt if isinstance(wrt, (tuple, list)) else (wrt,)
    return [names.index(w) if isinstance(w, str) else w % len(names) for w in items]
