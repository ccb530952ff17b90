"""The public entry points: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``jacfwd``,
``jacobian``, ``hvp``, ``hessian`` and ``source``.

Compilation is lazy: the first call compiles (so helpers defined later in a module resolve) and
the result is cached per function object and ``wrt``. Concurrent first calls compile once.
The pieces live by concern: ``arguments.py`` (``wrt`` and the checks of a call's arguments),
``compiled.py`` (the compiled-code cache, specialization and the per-call fast path) and
``transformations.py`` (the callables these functions return).
"""

from __future__ import annotations

import functools

import numpy as np

from .arguments import _all_positional, _wrt_values, parameters_of
from .compiled import (
    MAX_SPECIALIZATIONS,
    RECOMPILE_WARNING,
    _any_lazy,
    _Compiled,
    signature_of,
)
from .errors import SourcegradError, UsageError, hide_internal_frames
from .transformations import Grad, Hvp, Jvp, Pullback, ValueAndGrad, Vjp

__all__ = [
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "jacfwd",
    "jacobian",
    "hvp",
    "hessian",
    "source",
    "Grad",
    "ValueAndGrad",
    "Vjp",
    "Pullback",
    "Jvp",
    "Hvp",
    "parameters_of",
    "signature_of",
    "MAX_SPECIALIZATIONS",
    "RECOMPILE_WARNING",
]


def _decorator(cls, mode, kind):
    def make(
        f=None,
        wrt=0,
        check_finite=False,
        unroll=8,
        specialize=True,
        has_aux=False,
        checkpoint=None,
        backend="numpy",
    ):
        if f is None:
            return lambda g: make(
                g, wrt, check_finite, unroll, specialize, has_aux, checkpoint, backend
            )
        if isinstance(f, _Compiled) and not has_aux:  # grad(grad(f)): second derivatives
            if backend == "numba":
                raise UsageError(
                    "a derivative of a gradient runs on the numpy backend only: drop backend='numba'"
                )
            from .higher import of_gradient

            return of_gradient(f, wrt, kind)
        try:
            return cls(
                f, wrt, mode, kind, check_finite, unroll, specialize, has_aux, checkpoint, backend
            )
        except SourcegradError as e:
            raise hide_internal_frames(e)  # SOURCEGRAD_TRACEBACK=full shows sourcegrad's frames

    return make


def grad(
    f=None,
    wrt=0,
    check_finite=False,
    unroll=8,
    specialize=True,
    has_aux=False,
    checkpoint=None,
    backend="numpy",
):
    """The gradient of a scalar-valued function, compiled from its source.

    ``wrt`` selects the arguments to differentiate: an index, a parameter name, or a tuple of
    them (the gradient is then a tuple). Usable as ``@grad``, ``@grad(wrt=(0, 1))`` or
    ``grad(f, wrt="w1")``::

        >>> df = sourcegrad.grad(lambda x: np.sum(np.sin(x) ** 2))
        >>> df(np.array([0.5, 1.0]))
        array([0.84147098, 0.90929743])

    The gradient has each argument's shape and dtype (a Python float for a float argument). A
    function whose value is not a scalar raises ``NonScalarOutputError``: use ``vjp`` for those.

    ``check_finite=True`` (for debugging) checks every intermediate adjoint as it is computed and
    raises ``FloatingPointError`` naming the first one that holds a NaN or inf and the line of
    your code it belongs to.

    ``unroll`` (default 8): a ``for`` loop over ``range`` whose bounds are literals or
    module-level constants and that runs at most this many times is unrolled at compile time
    (no tape); ``unroll=0`` keeps every loop a loop. ``source()`` shows which form was chosen.

    ``specialize`` (default True): the first call with arrays of new shapes compiles a version
    for those shapes (as ``jax.jit`` does), in which shape inference removes the ``unbroadcast``
    calls and rank dispatch that shapes make unnecessary. Up to ``MAX_SPECIALIZATIONS`` (8)
    signatures per function; other calls, and calls with keyword arguments, run the general
    code. ``source(df, *args)`` shows the code specialized for ``args``.

    ``has_aux=True`` (as in JAX): ``f`` returns a pair ``(loss, aux)``; the scalar ``loss`` is
    differentiated, ``aux`` (any value) is returned as computed, with no gradient, and the
    gradient function returns ``(gradient, aux)``.

    ``checkpoint`` trades time for memory in long loops: ``True`` or a number of snapshots. Every
    loop outside other loops then keeps snapshots of its state instead of what every iteration
    overwrites, and the backward runs iterations again from them. A ``for`` loop follows the
    binomial schedule (Griewank's revolve): with ``n`` snapshots and ``T`` iterations it runs
    about ``(r - 1) * T`` iterations again, where ``C(n + r, n) >= T``; ``True`` takes the fewest
    snapshots with which that is at most ``T`` (about ``sqrt(2 * T)``). A ``while`` loop keeps a
    snapshot every so many iterations (``True``: about ``sqrt`` of them). The gradient is the
    same to the last bit. ``for t in sourcegrad.checkpointed(range(T)):`` checkpoints one loop
    without this keyword. ``sourcegrad.memory`` shows what is kept either way.

    ``backend``: ``"numpy"`` (default); ``"numba"`` compiles the code specialized to each
    signature with numba (``pip install "sourcegrad[numba]"``), keeping numpy, with one
    ``BackendWarning`` naming the reason, for anything it cannot compile exactly; ``"auto"``
    compiles with numba for small arrays and keeps whichever ran faster. See the README's Backends.
    """
    return _decorator(Grad, "value_and_grad", "grad")(
        f, wrt, check_finite, unroll, specialize, has_aux, checkpoint, backend
    )


def value_and_grad(
    f=None,
    wrt=0,
    check_finite=False,
    unroll=8,
    specialize=True,
    has_aux=False,
    checkpoint=None,
    backend="numpy",
):
    """Like ``grad``, but returns ``(value, gradient)`` from one run of the forward; with
    ``has_aux=True``, ``((loss, aux), gradient)``."""
    return _decorator(ValueAndGrad, "value_and_grad", "value_and_grad")(
        f, wrt, check_finite, unroll, specialize, has_aux, checkpoint, backend
    )


def vjp(
    f=None,
    wrt=0,
    check_finite=False,
    unroll=8,
    specialize=True,
    has_aux=False,
    checkpoint=None,
    backend="numpy",
):
    """Vector-Jacobian products: ``vf(*args)`` returns ``(value, pullback)``; ``pullback(ct)``
    returns the gradient of ``sum(value * ct)`` with respect to ``wrt``. Any output shape.
    A pullback can be called once (it consumes the forward's tape).

    ``has_aux=True`` (as in JAX): ``f`` returns a pair ``(value, aux)``; ``vf(*args)`` returns
    ``(value, pullback, aux)``, ``aux`` as computed, with no gradient."""
    return _decorator(Vjp, "vjp", "vjp")(
        f, wrt, check_finite, unroll, specialize, has_aux, checkpoint, backend
    )


def source(g, *args, **kwargs):
    """The generated Python source of anything made by ``grad``, ``value_and_grad`` or ``vjp``:
    the general code, or, given example arguments, the code specialized for their shapes (what a
    call with those arguments runs; keyword-only parameters by keyword, defaults applied; with
    dask arrays, the code that persists before data-dependent tests)."""
    if not isinstance(g, _Compiled):
        raise UsageError(
            f"sourcegrad.source needs a function made by grad, value_and_grad, vjp or jvp, got {g!r}"
        )
    try:
        return _current_compiled(g, args, kwargs).source
    except SourcegradError as e:
        raise hide_internal_frames(e)  # SOURCEGRAD_TRACEBACK=full shows sourcegrad's frames


def _current_compiled(g, args, kwargs=None):
    """The ``emit.Compiled`` a call of ``g`` with ``args`` runs (the general code without them)."""
    kwargs = kwargs or {}
    if isinstance(g, (Jvp, Hvp)):  # forward mode has one code, for every shape
        args, kwargs = (), {}
    if g.bound is not None and (args or kwargs):
        args = (g.bound,) + args
    if (args or kwargs) and g.fn.__code__.co_kwonlyargcount:  # bound as a call binds them (_run)
        args, kwargs = _all_positional(g.fn, args, kwargs)
    if kwargs:
        raise UsageError(
            "sourcegrad.source takes keyword arguments only for keyword-only parameters; "
            "pass the others by position"
        )
    signature = signature_of(args) if args and g.specialize else None
    # the examples the compile decides from (the objects' classes, a function passed in): the
    # arguments, defaults applied, or a bound method's object alone
    if args:
        examples = args if g.fn.__code__.co_kwonlyargcount else _all_positional(g.fn, args, {})[0]
    else:
        examples = (g.bound,) if g.bound is not None and not isinstance(g, (Jvp, Hvp)) else None
    c = g._current(signature, examples)
    if c.tests and not isinstance(g, (Jvp, Hvp)) and _any_lazy(args, {}):
        c = g._for_lazy(
            signature, c, examples
        )  # dask arguments: the code that persists before its tests
    return c


def jvp(f=None, wrt=0, unroll=8, backend="numpy"):
    """Jacobian-vector products (forward mode), compiled from the source as readable code:
    ``jf = jvp(f)``; ``jf(*args, tangent)`` returns ``(f(*args), J @ tangent)``, the derivative
    of ``f`` at ``args`` in the direction ``tangent`` (shaped like the ``wrt`` argument; a tuple of
    tangents, one per argument, for a tuple ``wrt``)::

        >>> jf = sourcegrad.jvp(lambda x: np.sin(x) * 2.0)
        >>> jf(np.array([0.0, 1.0]), np.array([1.0, 0.0]))
        (array([0.        , 1.68294197]), array([2., 0.]))

    ``source(jf)`` shows the generated code: each line of ``f`` followed by its tangent line.
    A primitive without a tangent rule reached by the tangent is refused when ``jf`` compiles.
    ``backend``: ``"numpy"`` (default), ``"numba"`` or ``"auto"``, as for ``grad``: the code
    compiled with ``numba.njit``, each new combination of argument dtypes and shapes checked
    against numpy on its first call (``sourcegrad.backends``)."""
    if f is None:
        return lambda g: jvp(g, wrt, unroll, backend)
    try:
        return Jvp(f, wrt, "jvp", "jvp", unroll=unroll, specialize=False, backend=backend)
    except SourcegradError as e:
        raise hide_internal_frames(e)


def jacfwd(f, wrt=0, unroll=8):
    """The Jacobian by forward mode, one ``jvp`` per entry of the ``wrt`` argument (by columns):
    ``jacfwd(f)(*args)`` has shape ``f(*args).shape + x.shape`` (a tuple of them for a tuple
    ``wrt``). Best when the input is smaller than the output; see ``jacobian``."""
    jf = jvp(f, wrt, unroll)

    def jacobian_by_columns(*args, **kwargs):
        xs = _wrt_values(jf, args, kwargs)
        columns = []
        for k, x in enumerate(xs):
            cols = []
            for e in _basis(x):
                ts = tuple(e if j == k else _zeros_of(x2) for j, x2 in enumerate(xs))
                _, t = jf(*args, ts[0] if jf.single else ts, **kwargs)
                cols.append(np.asarray(t))
            out = np.stack(cols, axis=-1) if cols else np.zeros((0,))
            columns.append(out.reshape(out.shape[:-1] + np.shape(x)))
        return columns[0] if jf.single else tuple(columns)

    return functools.update_wrapper(jacobian_by_columns, f, updated=())


def jacobian(f, wrt=0, unroll=8):
    """The Jacobian by reverse mode, one pullback per entry of the output (by rows):
    ``jacobian(f)(*args)`` has shape ``f(*args).shape + x.shape`` (a tuple of them for a tuple
    ``wrt``). Best when the output is smaller than the input; see ``jacfwd``."""
    vf = vjp(f, wrt=wrt, unroll=unroll)

    def jacobian_by_rows(*args, **kwargs):
        value, pullback = vf(*args, **kwargs)
        shape = np.shape(value)
        rows = []
        for k in range(int(np.prod(shape))):
            if k:
                value, pullback = vf(*args, **kwargs)  # a pullback runs once
            e = np.zeros(
                shape,
                dtype=np.result_type(value, np.float64) if np.iscomplexobj(value) else np.float64,
            )
            e[np.unravel_index(k, shape)] = 1.0
            g = pullback(e)
            rows.append(g if isinstance(g, tuple) else (g,))
        xs = _wrt_values(vf, args, kwargs)
        out = []
        for j, x in enumerate(xs):
            r = (
                np.stack([np.asarray(row[j]) for row in rows])
                if rows
                else np.zeros((0,) + np.shape(x))
            )
            out.append(r.reshape(shape + np.shape(x)))
        return out[0] if vf.single else tuple(out)

    return functools.update_wrapper(jacobian_by_rows, f, updated=())


def hvp(f=None, wrt=0, unroll=8):
    """Hessian-vector products of a scalar function: ``hvp(f)(*args, v)`` is ``H @ v``, shaped like
    the ``wrt`` argument (a tuple of vectors and of products for a tuple ``wrt``). Computed as the
    gradient of the forward-mode tangent ``grad f . v`` (reverse over forward), both generated as
    readable code: ``source(hf)`` shows it."""
    if f is None:
        return lambda g: hvp(g, wrt, unroll)
    try:
        return Hvp(f, wrt, "hvp", "hvp", unroll=unroll)
    except SourcegradError as e:
        raise hide_internal_frames(e)


def hessian(f, wrt=0, unroll=8):
    """The Hessian of a scalar function, one ``hvp`` per entry of the ``wrt`` argument:
    ``hessian(f)(*args)`` has shape ``x.shape + x.shape`` (one ``wrt`` argument)."""
    hf = hvp(f, wrt, unroll)
    if not hf.single:
        raise UsageError("hessian takes one wrt argument; use hvp for several")

    def hessian_by_columns(*args, **kwargs):
        (x,) = _wrt_values(hf, args, kwargs)
        cols = [np.asarray(hf(*args, e, **kwargs)) for e in _basis(x)]
        out = np.stack(cols, axis=-1) if cols else np.zeros(np.shape(x) + (0,))
        return out.reshape(np.shape(x) + np.shape(x))

    return functools.update_wrapper(hessian_by_columns, f, updated=())


def _basis(x):
    if isinstance(x, float):
        yield 1.0
        return
    for k in range(np.size(x)):
        e = np.zeros(np.shape(x), dtype=x.dtype)
        e[np.unravel_index(k, np.shape(x))] = 1.0
        yield e


def _zeros_of(x):
    return 0.0 if isinstance(x, float) else np.zeros(np.shape(x), dtype=x.dtype)
