"""Optimize the backward: passes over ``code.Stmt`` lists that know what each statement reads
and writes from its fields, never from its text.

Expects: a ``reverse.Reversed``. Guarantees: the same computation with fewer names and shorter
lives: copies between adjoints propagated (``h_bar = _t8_bar.dot(wh.T)``, not a chain of
renames), ``_g = y_bar; y_bar = f(_g)`` read in place, and a ``del`` after the last use of each
of the backward's own variables, so memory is reused as soon as it is free, as in a
hand-written backward. Each pass is linear in the number of statements.
"""

from __future__ import annotations

import bisect
from dataclasses import replace

from . import code


def run(rev, check_finite=False):
    """``rev`` with its backward optimized (a new record; ``rev`` is left as it was)."""
    keep = set().union(*(e.names() for _, e in rev.outputs)) if rev.outputs else set()
    backward = rev.backward
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
