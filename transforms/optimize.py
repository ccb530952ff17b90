"""Optimize the backward: passes over ``code.Stmt`` lists that know what each statement reads
and writes from its fields, never from its text.

Expects: a ``reverse.Reversed``. Guarantees: the same computation with fewer names and shorter
lives: copies between adjoints propagated (``h_bar = _t8_bar.dot(wh.T)``, not a chain of
renames), ``_g = y_bar; y_bar = f(_g)`` read in place, the seed folded into the product that
reads it and a number into the closed form of the loop before it (one array operation where a
hand-written backward has one), and a ``del`` after the last use of each of the backward's own
variables, so memory is reused as soon as it is free, as in a hand-written backward. Each pass
is linear in the number of statements.
"""

from __future__ import annotations

import bisect
from dataclasses import replace

from . import code
from .code import Ref, fmt, is_number, lit


def run(rev, check_finite=False, bind=None):
    """``rev`` with its backward optimized (a new record; ``rev`` is left as it was). ``bind``:
    the names the generated code calls runtime helpers by (``captures.bind``); without it (the
    numba variant, whose helpers have numba forms of their plain calls) no helper call is
    rewritten (``fold_seed_products``, ``fold_scales``)."""
    keep = set().union(*(e.names() for _, e in rev.outputs)) if rev.outputs else set()
    backward = rev.backward
    if bind is not None:
        backward = fold_seed_products(backward, bind("seed_like"), bind("seed_times"), keep)
        backward = fold_scales(backward, keep)
    if not check_finite:  # its checks name each adjoint
        backward = propagate_copies(backward, keep)
    backward = release_dead(backward, rev.forward, rev.outputs, rev.params)
    return replace(rev, backward=backward)


def _block_ends(stmts):
    """For each statement, the index of the first later one at a smaller depth (its block's end)."""
    end, stack = [len(stmts)] * len(stmts), []
    for i, st in enumerate(stmts):
        while stack and stmts[stack[-1]].depth > st.depth:
            end[stack.pop()] = i
        stack.append(i)
    return end


def _index(stmts):
    """name -> indices of the statements that mention it; name -> indices of those that write it."""
    mentions, writes = {}, {}
    for i, st in enumerate(stmts):
        for n in st.names():
            mentions.setdefault(n, []).append(i)
        for n in st.writes:
            writes.setdefault(n, []).append(i)
    return mentions, writes


def propagate_copies(stmts, keep=frozenset()):
    """The backward without copies between adjoints: ``a = b``, where nothing else assigns
    ``a`` and every use of ``a`` follows in the same block, at the same depth, before anything
    assigns ``b`` again, goes, and the uses read ``b``. The two names hold the same object
    there, so nothing changes but the reading. ``keep``: names that must stay (the outputs)."""
    out = list(stmts)
    end = _block_ends(out)
    mentions, writes = _index(out)
    for i, st in enumerate(out):
        if st.expr is None or st.augmented:
            continue  # (not a copy: asked before copy_of, for each of thousands of statements)
        b = st.copy_of()
        a = st.target
        if b is None or a == b or a in keep or writes.get(a) != [i]:
            continue
        uses = [k for k in mentions.get(a, ()) if k != i and out[k] is not None]
        if (
            not uses
            or uses[0] < i
            or uses[-1] >= end[i]
            or any(out[k].depth != st.depth for k in uses)
        ):
            continue
        wb = writes.get(b, ())
        j = bisect.bisect_right(wb, i)
        if j < len(wb) and wb[j] < uses[-1]:
            continue  # b is assigned again before the last use
        for k in uses:
            out[k] = out[k].renamed({a: b})
        out[i] = None
        mentions[b] = sorted(mentions.get(b, []) + uses)
        del mentions[a]
    return [st for st in out if st is not None]


def fold_seed_products(stmts, seed_like, seed_times, keep=frozenset()):
    """``a = seed_like(v)`` whose one reader, at the same depth and in the same block, is
    ``b = a * w`` (the adjoint of ``y`` in ``np.sum(y * w)``, ``w`` a name), with neither ``v`` nor
    ``w`` assigned in between: ``b = seed_times(v, w)``, the same value without the array of ones
    (``runtime.seed_times``). ``keep``: names read after the backward (the outputs)."""
    out = list(stmts)
    end = _block_ends(out)
    mentions, writes = _index(out)
    for i, st in enumerate(out):
        v = _seed_of(st, seed_like) if st is not None and st.target not in keep else None
        uses = mentions.get(st.target, ()) if v is not None else ()
        if len(uses) != 2 or uses[0] != i or writes.get(st.target) != [i]:
            continue
        k = uses[1]
        use = out[k]
        w = _times_name(use, st.target)
        if w is None or k >= end[i] or use.depth != st.depth or w == st.target:
            continue
        if any((writes.get(n) and any(i < j < k for j in writes[n])) for n in (v, w)):
            continue
        expr = fmt("{f}({v}, {w})", f=seed_times, v=v, w=w)
        out[k] = code.assign(use.depth, use.target, expr, use.pos or st.pos)
        out[i] = None
    return [st for st in out if st is not None]


def _plain_parts(st):
    """The parts of ``st``'s expression when it is a plain ``target = expression``, else ()."""
    if st.target is None or st.augmented or st.info:
        return ()
    return st.expr.parts


def _seed_of(st, seed_like):
    """``v`` for ``a = seed_like(v)``, else None."""
    p = _plain_parts(st)
    if len(p) == 4 and p[0] == seed_like and type(p[0]) is Ref and p[1:4:2] == ("(", ")"):
        return p[2] if type(p[2]) is Ref else None
    return None


def _times_name(st, a):
    """``w`` for ``b = a * w`` (``w`` a name other than ``a``), else None."""
    p = _plain_parts(st)
    if len(p) == 3 and p[0] == a and type(p[0]) is Ref and p[1] == " * " and type(p[2]) is Ref:
        return p[2]
    return None


def fold_scales(stmts, keep=frozenset()):
    """``a = scale_repeated(g, k, n)`` (a loop's backward in closed form, ``reverse_backward``) at
    the top level, whose next reader is ``b = a * m`` (``m`` a number, ``y = x * m`` before the
    loop), with ``a`` read nowhere after it and neither ``g`` nor ``n`` assigned in between:
    ``b = scale_repeated(g, k, n, m)``, the array multiplied once by ``k ** n * m``, as a
    hand-written backward folds the scale factors."""
    out = list(stmts)
    mentions, writes = _index(out)
    for i, st in enumerate(out):
        scale = st.info.get("scale_repeated") if st.info and st.depth == 0 else None
        if scale is None or st.target in keep:
            continue
        later = [j for j in mentions[st.target] if j > i]
        m = _times_number(out[later[0]], st.target) if len(later) == 1 else None
        if m is None or out[later[0]].depth != 0:
            continue
        f, g, k, n = scale
        use = later[0]
        if any(any(i < j < use for j in writes.get(x, ())) for x in {g} | n.names()):
            continue
        expr = fmt("{f}({g}, {k}, {n}, {m})", f=f, g=g, k=lit(k), n=n, m=lit(m))
        out[use] = code.assign(0, out[use].target, expr, out[use].pos)
        out[i] = None
    return [st for st in out if st is not None]


def _times_number(st, a):
    """``m`` for ``b = a * m`` (``m`` a number), else None."""
    p = _plain_parts(st)
    if len(p) == 2 and p[0] == a and type(p[0]) is Ref and p[1].startswith(" * "):
        return p[1][3:] if is_number(p[1][3:]) else None
    return None


def read_in_place(out, start, g, adj):
    """The adjoint of ``y = f(y, ...)`` captures ``_g = y_bar`` before ``y_bar`` is reset (``out``
    from ``start`` holds that statement's adjoint). Read ``y_bar`` itself where that is the same:
    ``_g = y_bar; y_bar = _g * 2`` -> ``y_bar = y_bar * 2`` where that is the only use of ``_g``,
    and ``_g = s_bar; s_bar = _g; x_bar = _g * w`` -> ``x_bar = s_bar * w`` where ``s_bar``
    gets ``_g`` back before anything else assigns it."""
    uses = [i for i in range(start + 1, len(out)) if g in out[i].names()]
    if not uses:
        return
    if len(uses) == 1 and out[uses[0]].target == adj and not out[uses[0]].augmented:
        if any(adj in out[i].names() for i in range(start + 1, uses[0])):
            return
        k = uses[0]
        out[k] = out[k].renamed({g: adj}).but(pos=out[start].pos)
        del out[start]
        return
    back = [i for i in uses if out[i].target == adj and out[i].copy_of() == g]
    depth = out[start].depth
    if len(back) != 1 or any(out[i].depth != depth for i in uses):
        return
    if any(adj in out[i].writes for i in range(start + 1, uses[-1] + 1) if i != back[0]):
        return
    for i in uses:
        out[i] = out[i].renamed({g: adj})
    pos = out[start].pos
    del out[back[0]]
    del out[start]
    if start < len(out) and out[start].pos is None:
        out[start] = out[start].but(pos=pos)


def release_dead(bwd, fwd, outputs, params):
    """The backward with ``del`` after the last use of each of its own variables (adjoints and
    temporaries it assigns at the top level, never forward values or parameters). Variables last
    used inside a block stay until the end."""
    outer = set(params).union(*(st.names() for st in fwd)) if fwd else set(params)
    outer = outer.union(*(e.names() for _, e in outputs)) if outputs else outer
    own = {st.target for st in bwd if st.target is not None} - outer
    last = {}
    for i, st in enumerate(bwd):
        for n in st.names():
            if n in own:
                last[n] = i
    after = {}
    for n, i in last.items():
        if bwd[i].depth == 0 and not bwd[i].opens:
            after.setdefault(i, []).append(n)
    out = []
    for i, st in enumerate(bwd):
        out.append(st)
        if i in after:
            out.append(code.delete(0, after[i]))
    return out
