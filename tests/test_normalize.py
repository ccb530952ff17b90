"""The front end's first two stages as before/after tables: a small function's source, and the IR
``normalize`` lowers it to (A-normal form: one operation per statement, every operand an atom),
then what ``exits`` makes of that (one return, last; ``break``/``continue``/early returns as
flags). The IR is shown as ``ir.dump`` renders it."""

import textwrap

import numpy as np
import pytest

import sourcegrad
from sourcegrad.transforms import exits, ir
from sourcegrad.transforms.normalize import Normalizer
from sourcegrad.transforms.source import get_source

SCALE = 2.0


def _helper(a, b):
    return a * b + SCALE


def _clipped(a):
    if a > 1.0:
        return 1.0
    return a


def nested(x, w, b):
    y = np.tanh(x * w + b)
    return np.sum(y)


def swap(x, y):
    a, b = y, x
    return a - b


def unpack(x):
    a, b = np.split(x, 2)
    return np.sum(a * b)


def augmented(x):
    y = np.zeros(3)
    y[0] += x
    y += 1.0
    return np.sum(y)


def over_sequence(xs):
    total = 0.0
    for v in xs:
        total = total + v
    return total


def over_zip(xs, ys):
    total = 0.0
    for a, b in zip(xs, ys):
        total = total + a * b
    return total


def over_enumerate(xs):
    total = 0.0
    for i, v in enumerate(xs):
        total = total + i * v
    return total


def unrolled(x):
    for i in range(2):
        x = x * x
    return x


def comprehension(xs):
    ys = [np.sin(v) for v in xs if v > 0]
    return sum(ys)


def inlined(x):
    return _helper(x, x)


def inlined_with_exits(x):
    y = _clipped(x)
    return y * 2.0


def local_dict(x):
    d = {"a": x}
    d["b"] = d["a"] * 2.0
    return d["b"]


def conditional(x, c):
    y = x if c > 0 else -x
    return y


def no_gradient(x):
    with sourcegrad.no_grad():
        s = np.std(x)
    return np.sum(x / s)


def early_return(x):
    if x > 0:
        return x * 2.0
    return -x


def breaks(xs):
    total = 0.0
    for v in xs:
        if v > 10:
            break
        total = total + v
    return total


def continues(xs):
    total = 0.0
    for v in xs:
        if v < 0:
            continue
        total = total + v
    return total


def loop_return(x, n):
    for i in range(n):
        x = x * 0.5
        if x < 1:
            return x
    return x + 1.0


# function -> its IR after normalize (loops over a range unroll with at most 8 trips)
NORMALIZED = {
    nested: """
        _t0 = x * w
        _t1 = _t0 + b
        y = np.tanh(_t1)
        _t2 = np.sum(y)
        return _t2
    """,
    # every value is evaluated before any name is bound
    swap: """
        _t0 = y
        _t1 = x
        a = _t0
        b = _t1
        _t2 = a - b
        return _t2
    """,
    unpack: """
        _t0 = np.split(x, 2)
        check_unpack(_t0, 2)
        a = _t0[0]
        b = _t0[1]
        _t1 = a * b
        _t2 = np.sum(_t1)
        return _t2
    """,
    augmented: """
        y = np.zeros(3)  # nondiff
        _t0 = y[0]
        _t1 = _t0 + x
        y[0] = _t1
        y = y + 1.0  # inplace
        _t2 = np.sum(y)
        return _t2
    """,
    over_sequence: """
        total = 0.0
        check_sequence(xs)
        for _k0 in range(len(xs)):
            v = xs[_k0]
            total = total + v
        return total
    """,
    # a dict's entries by position are not what iterating it gives: each operand is checked
    over_zip: """
        total = 0.0
        check_sequence(xs)
        check_sequence(ys)
        for _k0 in range(min(len(xs), len(ys))):
            a = xs[_k0]
            b = ys[_k0]
            _t1 = a * b
            total = total + _t1
        return total
    """,
    over_enumerate: """
        total = 0.0
        check_sequence(xs)
        for i in range(len(xs)):
            v = xs[i]
            _t0 = i * v
            total = total + _t0
        return total
    """,
    unrolled: """
        i = 0
        x = x * x
        i = 1
        x = x * x
        return x
    """,
    # the comprehension's variable is renamed: it stays inside the comprehension
    comprehension: """
        _list0 = []
        check_sequence(xs)
        for _k1 in range(len(xs)):
            v_1 = xs[_k1]
            if v_1 > 0:
                _t2 = np.sin(v_1)
                _list0.append(_t2)
        ys = _list0
        _t3 = sum(ys)
        return _t3
    """,
    # parameters never rebound read the caller's atoms; SCALE is read live from the module
    inlined: """
        _t0 = x * x
        _t1 = _t0 + SCALE
        return _t1
    """,
    # the helper's own exits are lowered when it is inlined: its one return gives y
    inlined_with_exits: """
        _done1 = False
        if x > 1.0:
            _ret0 = 1.0
            _done1 = True
        if not _done1:
            _ret0 = x
            _done1 = True
        y = _ret0
        _t2 = y * 2.0
        return _t2
    """,
    local_dict: """
        d_a = x
        _t0 = d_a * 2.0
        d_b = _t0
        return d_b
    """,
    conditional: """
        if c > 0:
            y = x
        else:
            y = -x
        return y
    """,
    no_gradient: """
        s = np.std(x)  # nondiff
        _t0 = x / s
        _t1 = np.sum(_t0)
        return _t1
    """,
    # exits are left where they are written: the next stage lowers them
    early_return: """
        if x > 0:
            _t0 = x * 2.0
            return _t0
        _t1 = -x
        return _t1
    """,
    breaks: """
        total = 0.0
        check_sequence(xs)
        for _k0 in range(len(xs)):
            v = xs[_k0]
            if v > 10:
                break
            total = total + v
        return total
    """,
}

# function -> its IR after normalize and exits
EXITS = {
    nested: NORMALIZED[nested],  # a body whose only return is last is left as it is
    early_return: """
        _done3 = False
        if x > 0:
            _t0 = x * 2.0
            _ret2 = _t0
            _done3 = True
        if not _done3:
            _t1 = -x
            _ret2 = _t1
            _done3 = True
        return _ret2
    """,
    breaks: """
        total = 0.0
        check_sequence(xs)
        _brk3 = False
        for _k0 in range(len(xs)):
            _stop2 = False
            v = xs[_k0]
            if v > 10:
                _stop2 = True
                _brk3 = True
            if not _stop2:
                total = total + v
            if _brk3: break  # loop exit
        return total
    """,
    continues: """
        total = 0.0
        check_sequence(xs)
        for _k0 in range(len(xs)):
            _stop2 = False
            v = xs[_k0]
            if v < 0:
                _stop2 = True
            if not _stop2:
                total = total + v
        return total
    """,
    # a return inside a loop stops the iteration, leaves the loop and skips what follows it
    loop_return: """
        _done4 = False
        for i in range(n):
            _stop2 = False
            x = x * 0.5
            if x < 1:
                _ret1 = x
                _done4 = True
                _stop2 = True
            if _done4: break  # loop exit
        if not _done4:
            _t0 = x + 1.0
            _ret1 = _t0
            _done4 = True
        return _ret1
    """,
}


def _normalizer(fn):
    return Normalizer(get_source(fn), options={"unroll": 8})


def _lowered(fn):
    return _normalizer(fn).lower()


def _with_exits(fn):
    n = _normalizer(fn)
    return exits.lower_function(n.lower(), n.naming)


def _expected(text):
    return textwrap.dedent(text).strip()


@pytest.mark.parametrize("fn", list(NORMALIZED), ids=lambda f: f.__name__)
def test_normalized_form(fn):
    assert ir.dump(_lowered(fn)) == _expected(NORMALIZED[fn])


@pytest.mark.parametrize("fn", list(EXITS), ids=lambda f: f.__name__)
def test_exits_lowered(fn):
    assert ir.dump(_with_exits(fn)) == _expected(EXITS[fn])


def _is_atom(a):
    if isinstance(a, (ir.Name, ir.Const)):
        return True
    if isinstance(a, ir.Index):
        parts = [p for p in a.parts if p is not None and p is not Ellipsis]
        return all(
            all(x is None or _is_atom(x) for x in (p.lower, p.upper, p.step))
            if isinstance(p, ir.Slice)
            else _is_atom(p)
            for p in parts
        )
    return isinstance(a, ir.Tup) and all(_is_atom(x) for x in a)


ALL = list(dict.fromkeys([*NORMALIZED, *EXITS]))


@pytest.mark.parametrize("fn", ALL, ids=lambda f: f.__name__)
def test_every_operand_is_an_atom(fn):
    for s in ir.walk(_lowered(fn)):
        if isinstance(s, ir.Assign):
            assert all(_is_atom(a) for a in s.op.args), s
            assert all(_is_atom(a) for _, a in s.op.kwargs), s
        if isinstance(s, (ir.SetItem, ir.Append, ir.Return)):
            assert _is_atom(s.value), s


@pytest.mark.parametrize("fn", ALL, ids=lambda f: f.__name__)
def test_exits_leave_one_return_last(fn):
    body = _with_exits(fn)
    stmts = list(ir.walk(body))
    assert [s for s in stmts if isinstance(s, ir.Return)] == [body[-1]]
    assert not any(isinstance(s, (ir.Break, ir.Continue)) for s in stmts)


def test_the_pipeline_gives_the_same_ir_as_run():
    """``transforms._front`` runs normalize then exits; ``Normalizer.run`` is the same two."""
    for fn in ALL:
        assert ir.dump(_normalizer(fn).run().body) == ir.dump(_with_exits(fn))
