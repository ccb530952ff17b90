"""Data-parallel gradients on dask arrays: one compiled numpy gradient per chunk of rows.

``data_parallel(gradient_function, over=("x", "y"))`` returns a function with the gradient
function's signature. Given dask arrays for the ``over`` arguments (rows on axis 0), it runs the
compiled numpy gradient on each chunk of rows in a task of its own, and adds the chunks' values and
gradients with dask's tree reduction: for a loss that is a sum over rows the chunks' results add up;
for a mean over rows each chunk's result is weighted by its share of the rows. The results are lazy
(dask arrays, or ``dask.delayed`` values for Python floats and other leaves): ``dask.compute``
materializes them, on a ``dask.distributed`` cluster where a ``Client`` is active.

It is sound only for a loss that separates over rows, which is decided before anything runs, from
the function's source (``transforms/batch/``): elementwise work, ``rows @ weights``, reductions
over other axes and per-row gathers stay per row, and the value must be a sum or a mean over rows.
Anything that mixes rows (``x.T @ x``, ``z - np.mean(z, axis=0)``, a sort or ``cumsum`` along the
rows, a branch on row values) raises ``RowMixingError`` naming the line.

Needs ``pip install "sourcegrad[dask]"`` (``dask[array]`` and ``distributed``). On a cluster of
processes, the differentiated function must be importable on the workers (defined in a module,
not in ``__main__``): each worker compiles it once, from its source.
"""

from __future__ import annotations

import functools
import inspect
import math
import threading

import numpy as np

from .errors import SourcegradError, UsageError, hide_internal_frames

try:
    import dask
    import dask.array as da
    import dask.bag as db
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError('sourcegrad.dask needs dask: pip install "sourcegrad[dask]"') from e

from .transforms.batch import RowMixingError  # noqa: E402

__all__ = ["data_parallel", "RowMixingError"]

# How many chunks' results one task of the tree reduction adds.
SPLIT_EVERY = 8


def data_parallel(gradient_function, over=("x", "y")):
    """A function with ``gradient_function``'s signature that splits the ``over`` arguments (dask
    arrays, rows on axis 0) into chunks of rows, runs the compiled numpy gradient on each chunk in
    a task, and combines the results with dask's tree reduction (see the module docstring).

    ``gradient_function`` is made by ``sourcegrad.grad`` or ``sourcegrad.value_and_grad`` and
    returns what it returns, lazily::

        vg = data_parallel(sourcegrad.value_and_grad(loss), over=("x", "y"))
        value, grad_w = dask.compute(*vg(w, x, y))   # x, y: dask arrays chunked along rows

    Raises ``RowMixingError`` (at the first call with new shapes) for a loss that does not separate
    over rows."""
    from .transformations import Grad, ValueAndGrad

    if not isinstance(gradient_function, (Grad, ValueAndGrad)):
        raise UsageError(
            "data_parallel needs a function made by sourcegrad.grad or sourcegrad.value_and_grad, "
            f"got {gradient_function!r}"
        )
    if gradient_function.bound is not None or gradient_function.has_aux:
        raise UsageError("data_parallel splits plain functions (not bound methods) without has_aux")
    over = (over,) if isinstance(over, str) else tuple(over)
    params = inspect.signature(gradient_function.fn).parameters
    missing = [o for o in over if o not in params]
    if missing or not over:
        raise UsageError(
            f"over names {missing or over!r}, which are not parameters of "
            f"{gradient_function.fn.__qualname__} ({', '.join(params)})"
        )
    split = sorted(set(over) & set(gradient_function.names))
    if split:
        raise UsageError(
            f"data_parallel adds the chunks' gradients, so it cannot differentiate with respect to "
            f"{', '.join(split)}, which it splits over rows: leave it out of wrt"
        )
    return _DataParallel(gradient_function, over)


class _DataParallel:
    def __init__(self, gf, over):
        self.gf, self.over = gf, over
        self.recipe = _Recipe(gf.fn, gf.wrt, gf.unroll, gf.check_finite, gf.specialize)
        self._kinds = {}  # argument signature -> "sum" | "mean"
        self._lock = threading.Lock()
        functools.update_wrapper(self, gf, updated=())
        self.__signature__ = inspect.signature(gf.fn)
        self.__name__ = f"{gf.__name__}_data_parallel"

    def __repr__(self):
        return f"<sourcegrad.dask.data_parallel of {self.gf!r} over {self.over!r}>"

    def __call__(self, *args, **kwargs):
        try:
            return self._call(args, kwargs)
        except SourcegradError as e:
            raise hide_internal_frames(e)

    def _call(self, args, kwargs):
        try:
            bound = self.__signature__.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.gf.fn.__qualname__}(): {e}") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        rows = self._split(values)
        kind = self.kind(values)
        n = sum(rows)
        parts = []
        blocks = {o: values[o].to_delayed().reshape(-1) for o in self.over}
        params = self.__signature__.parameters
        for i, n_c in enumerate(rows):
            if n_c == 0 and n:
                continue  # an empty chunk adds nothing (its own mean would be NaN)
            chunk_args = dict(values)
            chunk_args.update((o, blocks[o][i]) for o in self.over)
            # by position (a keyword call would run the general code), keyword-only ones by name
            positional = [chunk_args[p] for p, v in params.items() if v.kind != v.KEYWORD_ONLY]
            keywords = {p: chunk_args[p] for p, v in params.items() if v.kind == v.KEYWORD_ONLY}
            # (no rows at all: each chunk's own mean, NaN as numpy's, and no ZeroDivisionError)
            weight = n_c / n if kind == "mean" and n else None
            parts.append(dask.delayed(_chunk, pure=True)(self.recipe, positional, keywords, weight))
        total = db.from_delayed(parts).reduction(_add_all, _add_all, split_every=SPLIT_EVERY)
        value_grads = total.to_delayed()
        return self._lazy_result(value_grads, values)

    # -- splitting --

    def _split(self, values):
        """The row chunks shared by the ``over`` arguments (rechunked to the first one's, and to one
        chunk along every other axis, so a block is whole rows)."""
        first = None
        for o in self.over:
            x = values[o]
            if not isinstance(x, da.Array):
                raise UsageError(
                    f"data_parallel splits {o} over its rows: pass a dask array "
                    f"(dask.array.from_array({o}, chunks=(rows, ...))), not {type(x).__name__}"
                )
            if x.ndim == 0:
                raise UsageError(f"data_parallel splits {o} over its rows, but it is a 0-d array")
            if any(math.isnan(c) for c in x.chunks[0]):
                raise UsageError(
                    f"{o} has chunks of unknown length: call {o}.compute_chunk_sizes() first"
                )
            if first is None:
                first = x.chunks[0]
            elif x.shape[0] != sum(first):
                raise UsageError(
                    f"the over arguments have different numbers of rows: {self.over[0]} has "
                    f"{sum(first)}, {o} has {x.shape[0]}"
                )
            target = {0: first, **{k: -1 for k in range(1, x.ndim)}}
            if x.chunks[0] != first or any(len(c) > 1 for c in x.chunks[1:]):
                values[o] = x.rechunk(target)
        return first

    # -- the analysis, once per argument signature --

    def kind(self, values):
        """``"sum"`` or ``"mean"`` for these arguments' shapes (raises ``RowMixingError``)."""
        from .arguments import _all_positional

        args, _ = _all_positional(self.gf.fn, (), values)
        key = tuple(_arg_key(a) for a in args)
        kind = self._kinds.get(key)
        if kind is None:
            with self._lock:
                kind = self._kinds.get(key)
                if kind is None:
                    kind = self._kinds[key] = _analyze(self.gf, key, self.over, values)
        return kind

    # -- results --

    def _lazy_result(self, value_grads, values):
        gf = self.gf
        value = _lazy_leaf(value_grads[0], np.float64(0.0))
        grads = value_grads[1]
        names, single = gf.names, gf.single
        if single:
            g = _lazy_tree(grads, values[names[0]])
        else:
            g = tuple(_lazy_tree(grads[k], values[name]) for k, name in enumerate(names))
        from .transformations import Grad

        return g if isinstance(gf, Grad) else (value, g)


def _arg_key(a):
    if isinstance(a, dict):  # the shapes inside a container argument decide too
        return ("dict",) + tuple((k, _arg_key(v)) for k, v in a.items())
    if isinstance(a, (list, tuple)):
        return (type(a).__name__,) + tuple(_arg_key(v) for v in a)
    shape = getattr(a, "shape", None)
    if shape is not None and all(isinstance(k, (int, np.integer)) for k in shape):
        return tuple(int(k) for k in shape)
    if type(a) in (float, int):
        return type(a)
    return None


def _analyze(gf, key, over, args):
    """Run the batch-axis analysis on ``gf``'s function for arguments described by ``key``."""
    from .transforms import _bind_all, sequences, shapes
    from .transforms.batch import check
    from .transforms.normalize import Normalizer
    from .transforms.source import get_source

    fn = gf.fn
    src = get_source(fn)
    normalizer = Normalizer(src, options={"unroll": gf.unroll})
    irfn = normalizer.run()
    sequences.rewrite(src, irfn, normalizer.naming)
    bindings = _bind_all(src, irfn)
    described = dict.fromkeys(irfn.params, shapes.TOP)
    described.update(
        (p, shapes.describe(k))
        for p, k in zip(irfn.params, key)
        if not isinstance(k, tuple) or k[:1] not in (("dict",), ("list",), ("tuple",))
    )
    known = shapes.Shapes(irfn, bindings, described)
    return check(src, irfn, bindings, known, over, args)


# ---- what runs in the tasks -------------------------------------------------------------------


class _Recipe:
    """What a task needs to compile the numpy gradient: it pickles as the function and options,
    and each process compiles it once (``_compiled``)."""

    __slots__ = ("fn", "wrt", "unroll", "check_finite", "specialize")

    def __init__(self, fn, wrt, unroll, check_finite, specialize):
        self.fn, self.wrt, self.unroll, self.check_finite, self.specialize = (
            fn,
            wrt,
            unroll,
            check_finite,
            specialize,
        )

    def __getstate__(self):
        return (self.fn, self.wrt, self.unroll, self.check_finite, self.specialize)

    def __setstate__(self, state):
        self.fn, self.wrt, self.unroll, self.check_finite, self.specialize = state

    def __dask_tokenize__(self):
        fn = self.fn
        return (
            type(self).__name__,
            getattr(fn, "__module__", None),
            getattr(fn, "__qualname__", None),
            id(fn),
            repr(self.wrt),
            self.unroll,
            self.check_finite,
            self.specialize,
        )

    def key(self):
        wrt = tuple(self.wrt) if isinstance(self.wrt, list) else self.wrt
        return (self.fn, wrt, self.unroll, self.check_finite, self.specialize)


_COMPILED = {}
_COMPILED_LOCK = threading.Lock()


def _compiled(recipe):
    """The ``value_and_grad`` of the recipe's function, compiled once per process."""
    key = recipe.key()
    vg = _COMPILED.get(key)
    if vg is None:
        from .api import value_and_grad

        with _COMPILED_LOCK:
            vg = _COMPILED.get(key)
            if vg is None:
                vg = _COMPILED[key] = value_and_grad(
                    recipe.fn,
                    wrt=recipe.wrt,
                    check_finite=recipe.check_finite,
                    unroll=recipe.unroll,
                    specialize=recipe.specialize,
                )
    return vg


def _chunk(recipe, args, kwargs, weight):
    """One chunk's ``[(value, gradients)]`` (weighted by its share of the rows for a mean); a
    one-entry list, as a partition of a dask bag."""
    vg = _compiled(recipe)
    value, grads = vg(*args, **kwargs)
    if weight is not None:
        value, grads = _scale(value, weight), _scale(grads, weight)
    return [(value, grads)]


def _add_all(results):
    results = list(results)
    total = results[0]
    for r in results[1:]:
        total = _add(total, r)
    return total


def _scale(t, w):
    if isinstance(t, dict):
        return type(t)((k, _scale(v, w)) for k, v in t.items())
    if isinstance(t, tuple) and hasattr(t, "_fields"):
        return type(t)(*(_scale(v, w) for v in t))
    if isinstance(t, (list, tuple)):
        return type(t)(_scale(v, w) for v in t)
    if isinstance(t, float):
        return t * w
    if hasattr(t, "dtype") and hasattr(t, "shape"):
        return (t * w).astype(t.dtype, copy=False)
    raise UsageError(
        f"data_parallel cannot combine a gradient of type {type(t).__name__} over chunks: it "
        "combines arrays and floats, and dicts, lists and tuples of them"
    )


def _add(a, b):
    if isinstance(a, dict):
        return type(a)((k, _add(v, b[k])) for k, v in a.items())
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return type(a)(*(_add(x, y) for x, y in zip(a, b)))
    if isinstance(a, (list, tuple)):
        return type(a)(_add(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or (hasattr(a, "dtype") and hasattr(a, "shape")):
        return a + b
    raise UsageError(
        f"data_parallel cannot combine a gradient of type {type(a).__name__} over chunks: it "
        "combines arrays and floats, and dicts, lists and tuples of them"
    )


# ---- lazy results shaped like the arguments ---------------------------------------------------


def _lazy_tree(d, like):
    """The lazy gradient ``d`` (a ``Delayed``) as the argument ``like``'s structure: a dask array
    per array, a ``Delayed`` per float (and for structures other than dicts, lists and tuples)."""
    if isinstance(like, dict):
        return {k: _lazy_tree(d[k], v) for k, v in like.items()}
    if isinstance(like, (list, tuple)) and not hasattr(like, "_fields"):
        return type(like)(_lazy_tree(d[k], v) for k, v in enumerate(like))
    return _lazy_leaf(d, like)


def _lazy_leaf(d, like):
    shape, dtype = getattr(like, "shape", None), getattr(like, "dtype", None)
    if shape is None or dtype is None:
        return d
    return da.from_delayed(d, shape=tuple(shape), dtype=dtype if dtype.kind in "fc" else np.float64)
