"""Shape functions: the adjoint moves the gradient back into the input's layout."""

import numpy as np

from sourcegrad.runtime import outer_operand

from . import rule, unary

# ---- same entries, new shape --------------------------------------------------------------------
unary([np.atleast_1d, np.atleast_2d, np.atleast_3d], "np.reshape(d[y], np.shape(x))")
# order "A" and "K" follow the operand's memory layout, which the adjoint (a new array) has not
MEMORY_ORDERS = {"order": ("C", "F")}
rule(
    np.reshape,
    "y, a, shape=None, order='C'",
    "d[a] += np.reshape(d[y], np.shape(a), order=order)",
    only=MEMORY_ORDERS,
    literal=("order",),
    shape="reshape",
)
rule(
    np.ravel,
    "y, a, order='C'",
    "d[a] += np.reshape(d[y], np.shape(a), order=order)",
    only=MEMORY_ORDERS,
    literal=("order",),
)
rule(np.squeeze, "y, a, axis=None", "d[a] += np.reshape(d[y], np.shape(a))")
rule(np.expand_dims, "y, a, axis", "d[a] += np.reshape(d[y], np.shape(a))")
rule(np.broadcast_to, "y, array, shape", "d[array] += unbroadcast(d[y], array)")
# ufunc.outer(a, b) is ufunc(outer_operand(a, b), b) (normalize/calls.py)
rule(
    outer_operand,
    "y, a, b",
    "d[a] += np.reshape(d[y], np.shape(a))",
    nondiff={"b": "only its number of axes is read"},
)
rule(np.copy, "y, a", "d[a] += d[y]", shape="copy", fresh=True)

# ---- axes and order -----------------------------------------------------------------------------
rule(np.transpose, "y, a, axes=None", "d[a] += untranspose(d[y], axes)", shape="transpose")
rule(
    np.swapaxes,
    "y, a, axis1, axis2",
    "d[a] += np.swapaxes(d[y], axis1, axis2)",
    shape="swapaxes",
)
rule(np.moveaxis, "y, a, source, destination", "d[a] += np.moveaxis(d[y], destination, source)")
rule(
    [getattr(np, "matrix_transpose", None), getattr(np.linalg, "matrix_transpose", None)],
    "y, x",
    "d[x] += np.swapaxes(d[y], -1, -2)",
)
rule(np.flip, "y, m, axis=None", "d[m] += np.flip(d[y], axis)")
unary(np.fliplr, "np.fliplr(d[y])")
unary(np.flipud, "np.flipud(d[y])")
rule(np.roll, "y, a, shift, axis=None", "d[a] += np.roll(d[y], np.negative(shift), axis)")
rule(np.rot90, "y, m, k=1, axes=(0, 1)", "d[m] += np.rot90(d[y], -k, axes)")

# ---- copies of entries --------------------------------------------------------------------------
rule(np.tile, "y, A, reps", "d[A] += untile(d[y], A, reps)", fresh=True)
rule(
    np.repeat,
    "y, a, repeats, axis=None",
    "d[a] += unrepeat(d[y], a, repeats, axis)",
    fresh=True,
)
rule(
    np.pad,
    "y, array, pad_width, mode='constant', constant_values=0",
    """
d[array] += unpad(d[y], array, pad_width, mode)
d[constant_values] += pad_values_adjoint(d[y], array, pad_width, mode, constant_values)
""",
    only={"mode": ("constant", "edge", "reflect", "symmetric", "wrap")},
    fresh=True,
)
rule(np.delete, "y, arr, obj, axis=None", "d[arr] += undelete(d[y], arr, obj, axis)")
# ``values`` is broadcast to the block it fills (a scalar to every inserted place)
rule(
    np.insert,
    "y, arr, obj, values, axis=None",
    """
d[arr] += uninsert(d[y], arr, obj, values, axis, 0)
d[values] += uninsert(d[y], arr, obj, values, axis, 1)
""",
    fresh=True,
)

# ---- joining and splitting: the adjoint of a list argument is a list ----------------------------
rule(
    np.concatenate,
    "y, arrays, axis=0",
    "d[arrays] += unconcatenate(d[y], arrays, axis)",
    fresh=True,
)
rule(np.stack, "y, arrays, axis=0", "d[arrays] += unstack(d[y], arrays, axis)", fresh=True)
rule(np.hstack, "y, tup", "d[tup] += unhstack(d[y], tup)", fresh=True)
rule(np.vstack, "y, tup", "d[tup] += unvstack(d[y], tup)", fresh=True)
rule(getattr(np, "row_stack", None), "y, tup", "d[tup] += unvstack(d[y], tup)")
rule(np.dstack, "y, tup", "d[tup] += undstack(d[y], tup)")
rule(np.column_stack, "y, tup", "d[tup] += uncolumn_stack(d[y], tup)")
rule(np.block, "y, arrays", "d[arrays] += unblock(d[y], arrays)")  # nested lists: a nested adjoint
rule(
    np.append,
    "y, arr, values, axis=None",
    """
gs = unconcatenate(d[y], [arr, values], axis)
d[arr] += gs[0]
d[values] += gs[1]
""",
)
rule(
    [np.split, np.array_split],
    "ys, ary, indices_or_sections, axis=0",
    "d[ary] += unsplit(d[ys], ary, indices_or_sections, axis)",
)
rule(getattr(np, "unstack", None), "ys, x, axis=0", "d[x] += restack(d[ys], x, axis)")
rule(
    np.hsplit,
    "ys, ary, indices_or_sections",
    "d[ary] += unsplit_along(d[ys], ary, indices_or_sections, 1)",
)
rule(
    np.vsplit,
    "ys, ary, indices_or_sections",
    "d[ary] += unsplit_along(d[ys], ary, indices_or_sections, 0)",
)
rule(
    np.dsplit,
    "ys, ary, indices_or_sections",
    "d[ary] += unsplit_along(d[ys], ary, indices_or_sections, 2)",
)

# ---- rearranging entries ------------------------------------------------------------------------
rule(
    np.rollaxis,
    "y, a, axis, start=0",
    "d[a] += unrollaxis(d[y], a, axis, start)",
    nondiff={"start": "an axis"},
)
rule(
    np.partition,
    "y, a, kth, axis=-1, kind='introselect', order=None",
    "d[a] += unpartition(d[y], a, y, axis)",
    nondiff={"kth": "integer positions", "kind": "an algorithm name", "order": "field names"},
)
# the first condition that holds picks the entry; where none does, ``default``
rule(
    np.select,
    "y, condlist, choicelist, default=0",
    """
d[choicelist] += select_adjoint(d[y], condlist, choicelist, default)
d[default] += select_adjoint(d[y], condlist, choicelist, default, "default")
""",
    nondiff={"condlist": "boolean masks"},
)
rule(
    np.lib.stride_tricks.sliding_window_view,
    "y, x, window_shape, axis=None, subok=False, writeable=False",
    "d[x] += unslide(d[y], x, window_shape, axis)",
    nondiff={
        "window_shape": "integer sizes",
        "subok": "a boolean flag",
        "writeable": "a boolean flag",
    },
)
