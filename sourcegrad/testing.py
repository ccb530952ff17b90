"""Tools for users' own gradient tests: ``check_grad``, a hypothesis strategy and settings.

``check_jvp`` and ``check_hvp`` check forward mode and Hessian-vector products the same way.

A property-based gradient test is four lines::

    @given(sourcegrad.testing.arrays(shape=(3, 4)))
    @sourcegrad.testing.settings
    def test_my_loss(x):
        sourcegrad.check_grad(my_loss, x)

``check_grad`` compares the compiled gradient with central finite differences computed here,
independently of the compiler, in float64 whatever the argument's dtype, and raises
``AssertionError`` with a report of the worst entry.

``settings`` are hypothesis's settings without a per-example deadline: the first call of a
gradient compiles it (about a second), and so does the first call with arrays of new shapes, which
hypothesis's default 200 ms deadline reports as a failure. They are also registered as the
hypothesis profile ``"sourcegrad"``. hypothesis is imported only when they are first used.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "check_grad",
    "check_jvp",
    "check_hvp",
    "numerical_grad",
    "numerical_jvp",
    "arrays",
    "settings",
    "GradientMismatch",
    "PROFILE",
]

PROFILE = "sourcegrad"


def __getattr__(name):
    if name == "settings":  # built on first use, so that only tests import hypothesis
        return _hypothesis_settings()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _hypothesis_settings():
    """The settings: the loaded profile's, with no deadline; registered as profile ``PROFILE``."""
    global settings
    import hypothesis

    settings = hypothesis.settings(deadline=None)
    hypothesis.settings.register_profile(PROFILE, settings)
    return settings


class GradientMismatch(AssertionError):
    """The compiled gradient disagrees with finite differences."""


def _as_float64(a):
    """A float64 copy of ``a``; a dict, list or tuple of arrays (or floats) leaf by leaf."""
    if isinstance(a, float):
        return a
    if isinstance(a, (dict, list, tuple)) or _structure(a):
        return _rebuild(a, [_as_float64(leaf) for _, leaf in _leaves(a)])
    return np.array(a, dtype=np.float64)


def _structure(a):
    """A dataclass or a registered object (namedtuples are tuples here)."""
    from .runtime import structures

    return structures.is_structure(a) and not structures.is_namedtuple(a)


def _children(a):
    from .runtime import structures

    return structures.differentiable_children(a)


def _leaves(a, path=()):
    """``(path, leaf)`` for every leaf of a dict/list/tuple tree, in order (a dataclass or
    registered object by its differentiable attributes); an array is one leaf."""
    if _structure(a):
        return [item for k, v in _children(a).items() for item in _leaves(v, path + (k,))]
    if isinstance(a, dict):
        return [item for k, v in a.items() for item in _leaves(v, path + (k,))]
    if isinstance(a, (list, tuple)):
        return [item for i, v in enumerate(a) for item in _leaves(v, path + (i,))]
    return [(path, a)]


def _rebuild(a, leaves):
    """A tree shaped like ``a`` holding ``leaves`` (in ``_leaves`` order)."""
    leaves = iter(leaves)

    def build(node):
        if _structure(node):
            from .runtime import structures

            return structures.replace_children(
                node, {k: build(v) for k, v in _children(node).items()}
            )
        if isinstance(node, dict):
            return {k: build(v) for k, v in node.items()}
        if isinstance(node, (list, tuple)):
            items = [build(v) for v in node]
            return type(node)(*items) if hasattr(node, "_fields") else type(node)(items)
        return next(leaves)

    return build(a)


def _path_name(name, path):
    return name + "".join(f"[{k!r}]" for k in path)


def numerical_grad(f, args, index, eps=None):
    """Central finite differences of scalar ``f`` in argument ``index``, in float64. The argument
    may be an array, a float, or a dict, list or tuple of them (the result has its structure)."""
    args = list(args)
    tree = args[index]
    leaves = [leaf for _, leaf in _leaves(tree)]
    grads = []
    for k, leaf in enumerate(leaves):

        def f_leaf(x, k=k):
            args[index] = _rebuild(tree, leaves[:k] + [x] + leaves[k + 1 :])
            return f(*args)

        grads.append(_numerical_leaf(f_leaf, leaf, eps))
    args[index] = tree
    return _rebuild(tree, grads)


def _numerical_leaf(f, x0, eps):
    scalar = isinstance(x0, float)
    x = np.array(x0, dtype=np.float64)
    step = eps if eps is not None else 1e-6
    out = np.zeros_like(x)
    flat = x.reshape(-1)
    gflat = out.reshape(-1)
    for i in range(flat.size):
        orig = flat[i]
        h = step * max(1.0, abs(orig))
        flat[i] = orig + h
        fp = float(f(float(x) if scalar else x.copy()))
        flat[i] = orig - h
        fm = float(f(float(x) if scalar else x.copy()))
        flat[i] = orig
        gflat[i] = (fp - fm) / (2 * h)
    return float(out) if scalar else out


def _tolerances(dtype, rtol, atol):
    if rtol is not None and atol is not None:
        return rtol, atol
    low = dtype is not None and np.dtype(dtype).itemsize <= 4
    return (
        rtol if rtol is not None else (2e-3 if low else 1e-5),
        atol if atol is not None else (2e-3 if low else 1e-6),
    )


def check_grad(f, *args, wrt=0, rtol=None, atol=None, eps=None):
    """Check ``sourcegrad.grad(f, wrt)`` at ``args`` against central finite differences.

    The finite differences evaluate ``f`` itself (the user's function, not generated code) on
    float64 copies of the arguments. Tolerances default by dtype: ``rtol=1e-5, atol=1e-6`` for
    float64, ``2e-3`` for float32 and smaller. Checks shape and dtype as well as values. An
    argument may be a dict, list or tuple of arrays (an nn-style ``params`` dict), as ``grad``
    accepts: each entry is checked. Raises ``GradientMismatch`` naming the worst entry; returns
    the compiled gradient."""
    from .api import grad
    from .errors import SourcegradError, hide_internal_frames

    try:
        df = grad(f, wrt=wrt)
        g = df(*args)
    except SourcegradError as e:
        raise hide_internal_frames(e)  # SOURCEGRAD_TRACEBACK=full shows sourcegrad's frames
    grads = g if isinstance(wrt, (tuple, list)) else (g,)
    hi = [_as_float64(a) if i in df.positions else a for i, a in enumerate(args)]
    for name, pos, gi in zip(df.names, df.positions, grads):
        _check_structure(name, args[pos], gi)
        num = numerical_grad(f, hi, pos, eps)
        for (path, a), (_, g_leaf), (_, n_leaf) in zip(
            _leaves(args[pos]), _leaves(gi), _leaves(num)
        ):
            leaf_name = _path_name(name, path)
            _check_kind(leaf_name, a, g_leaf)
            r, t = _tolerances(getattr(a, "dtype", None), rtol, atol)
            _compare(leaf_name, np.asarray(g_leaf, dtype=np.float64), np.asarray(n_leaf), r, t, f)
    return g


def _check_structure(name, a, g):
    """The gradient of a dict/list/tuple argument has its keys, lengths and container types."""

    def skeleton(node):
        if _structure(node):
            return (
                type(node).__name__,
                tuple((k, skeleton(v)) for k, v in _children(node).items()),
            )
        if isinstance(node, dict):
            return ("dict", tuple((k, skeleton(v)) for k, v in node.items()))
        if isinstance(node, (list, tuple)):
            return (type(node).__name__, tuple(skeleton(v) for v in node))
        return "leaf"

    if skeleton(g) != skeleton(a):
        raise GradientMismatch(
            f"gradient for {name!r} is structured as {_describe_tree(g)}, the argument "
            f"as {_describe_tree(a)}"
        )


def _describe_tree(a):
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_describe_tree(v)}" for k, v in a.items()) + "}"
    if isinstance(a, (list, tuple)):
        inner = ", ".join(_describe_tree(v) for v in a)
        return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
    return type(a).__name__


def _check_kind(name, a, g):
    if isinstance(a, float):
        if not isinstance(g, float):
            raise GradientMismatch(
                f"gradient for {name!r} should be a Python float, got {type(g).__name__}"
            )
        return
    if np.shape(g) != np.shape(a):
        raise GradientMismatch(
            f"gradient for {name!r} has shape {np.shape(g)}, the argument {np.shape(a)}"
        )
    if getattr(a, "dtype", None) is not None and getattr(g, "dtype", None) != a.dtype:
        raise GradientMismatch(
            f"gradient for {name!r} has dtype {getattr(g, 'dtype', type(g))}, the argument {a.dtype}"
        )


def _compare(name, got, want, rtol, atol, f, what=None):
    what = what or f"gradient of {getattr(f, '__qualname__', f)} with respect to {name!r}"
    if got.shape != want.shape:
        raise GradientMismatch(f"{what} has shape {got.shape}, finite differences {want.shape}")
    err = np.abs(got - want)
    bound = atol + rtol * np.abs(want)
    bad = ~(err <= bound)  # NaN counts as bad
    if not bad.any():
        return
    excess = np.where(bad, np.nan_to_num(err - bound, nan=np.inf), -np.inf)
    worst = np.unravel_index(int(np.argmax(excess)), got.shape) if got.shape else ()
    raise GradientMismatch(
        f"{what} disagrees with central finite differences at {int(bad.sum())} of {got.size} entries\n"
        f"  worst entry {name}{list(worst) if worst else ''}: sourcegrad {got[worst]!r}, "
        f"finite differences {want[worst]!r}, |diff| {err[worst]:.3g} > atol {atol:g} + rtol {rtol:g} * |fd|"
    )


def _directions(xs, given, single, seed):
    """The tangent of each ``wrt`` argument: ``given`` (one, or a tuple for a tuple ``wrt``), or
    random normal values of each argument's shape and structure (a fixed ``seed``)."""
    if given is not None:
        return [given] if single else list(given)
    rng = np.random.default_rng(seed)
    out = []
    for x in xs:
        leaves = [
            float(rng.normal())
            if isinstance(leaf, float)
            else rng.normal(size=np.shape(leaf)).astype(np.result_type(leaf, np.float32))
            for _, leaf in _leaves(x)
        ]
        out.append(_rebuild(x, leaves))
    return out


def numerical_jvp(f, args, positions, tangents, eps=None):
    """The derivative of ``f`` at ``args`` along ``tangents`` (one per argument in ``positions``)
    by central differences in float64: ``(f(x + h t) - f(x - h t)) / 2h``, ``h`` scaled to the
    arguments' and tangents' sizes. Any output shape."""

    def at(sign, h):
        moved = list(args)
        for pos, t in zip(positions, tangents):
            pairs = zip(_leaves(args[pos]), _leaves(t))
            moved[pos] = _rebuild(args[pos], [_shifted(x, u, sign * h) for (_, x), (_, u) in pairs])
        return np.asarray(f(*moved), dtype=np.float64)

    xs = [
        abs(np.asarray(x, dtype=np.float64)).max(initial=1.0)
        for p in positions
        for _, x in _leaves(args[p])
    ]
    ts = [
        abs(np.asarray(t, dtype=np.float64)).max(initial=0.0)
        for t0 in tangents
        for _, t in _leaves(t0)
    ]
    scale = max(ts, default=0.0)
    if scale == 0.0:
        return np.zeros_like(at(1, 0.0))
    h = (eps if eps is not None else 1e-6) * max(xs, default=1.0) / scale
    return (at(1, h) - at(-1, h)) / (2 * h)


def _shifted(x, t, h):
    if isinstance(x, float):
        return x + h * float(t)
    return np.asarray(x, dtype=np.float64) + h * np.asarray(t, dtype=np.float64)


def _low_precision(args, positions):
    return any(
        getattr(leaf, "dtype", None) is not None and np.dtype(leaf.dtype).itemsize <= 4
        for p in positions
        for _, leaf in _leaves(args[p])
    )


def check_jvp(f, *args, wrt=0, tangent=None, rtol=None, atol=None, eps=None, seed=0):
    """Check ``sourcegrad.jvp(f, wrt)`` at ``args`` against central finite differences of ``f``
    along ``tangent`` (shaped like the ``wrt`` argument, a tuple of them for a tuple ``wrt``;
    random normal values by default), and its value against ``f(*args)``.

    The finite differences evaluate ``f`` itself on float64 copies of the arguments moved along
    the tangent. Tolerances default by dtype as ``check_grad``'s. Raises ``GradientMismatch``
    naming the worst entry; returns ``(value, tangent_out)``."""
    from .api import jvp
    from .errors import SourcegradError, hide_internal_frames

    try:
        jf = jvp(f, wrt=wrt)
        xs = [args[p] for p in jf.positions]
        tangents = _directions(xs, tangent, jf.single, seed)
        value, out = jf(*args, tangents[0] if jf.single else tuple(tangents))
    except SourcegradError as e:
        raise hide_internal_frames(e)
    name = getattr(f, "__qualname__", f)
    low = _low_precision(args, jf.positions)
    r, t = _tolerances(np.float32 if low else np.float64, rtol, atol)
    hi = [_as_float64(a) if i in jf.positions else a for i, a in enumerate(args)]
    _compare(
        "value",
        np.asarray(value, dtype=np.float64),
        np.asarray(f(*args), dtype=np.float64),
        r,
        t,
        f,
        what=f"the value jvp({name}) returns",
    )
    want = numerical_jvp(f, hi, jf.positions, tangents, eps)
    if np.shape(out) != np.shape(value):
        raise GradientMismatch(
            f"the tangent jvp({name}) returns has shape {np.shape(out)}, its value {np.shape(value)}"
        )
    _compare(
        "tangent",
        np.asarray(out, dtype=np.float64),
        want,
        r,
        t,
        f,
        what=f"the tangent of {name} (jvp with respect to {', '.join(jf.names)})",
    )
    return value, out


def check_hvp(f, *args, wrt=0, v=None, rtol=None, atol=None, eps=None, seed=0):
    """Check ``sourcegrad.hvp(f, wrt)`` at ``args`` against finite differences: the central
    difference, along ``v`` (random normal values by default), of ``f``'s gradient, itself
    computed by central differences of ``f`` (``numerical_grad``), so no code of sourcegrad's is
    in the reference (``eps``: the outer step, 1e-4 by default). Nested differences are less precise than single ones: tolerances default to
    ``rtol=atol=1e-4`` for float64 and ``1e-2`` for float32. Raises ``GradientMismatch`` naming the
    worst entry; returns ``H @ v`` (a tuple for a tuple ``wrt``)."""
    from .api import hvp
    from .errors import SourcegradError, hide_internal_frames

    try:
        hf = hvp(f, wrt=wrt)
        xs = [args[p] for p in hf.positions]
        vs = _directions(xs, v, hf.single, seed)
        got = hf(*args, vs[0] if hf.single else tuple(vs))
    except SourcegradError as e:
        raise hide_internal_frames(e)
    low = _low_precision(args, hf.positions)
    r = rtol if rtol is not None else (1e-2 if low else 1e-4)
    t = atol if atol is not None else (1e-2 if low else 1e-4)
    hi = [_as_float64(a) if i in hf.positions else a for i, a in enumerate(args)]
    parts = got if not hf.single else (got,)
    for name, pos, part in zip(hf.names, hf.positions, parts):

        def gradient(*a, pos=pos):
            return np.concatenate(
                [np.ravel(leaf) for _, leaf in _leaves(numerical_grad(f, a, pos, 1e-5))]
            )

        want = numerical_jvp(gradient, hi, hf.positions, vs, 1e-4 if eps is None else eps)
        flat = np.concatenate(
            [np.ravel(np.asarray(leaf, dtype=np.float64)) for _, leaf in _leaves(part)]
        )
        _compare(
            name,
            flat,
            want,
            r,
            t,
            f,
            what=f"the Hessian-vector product of {getattr(f, '__qualname__', f)} for {name!r} (flattened)",
        )
    return got


def arrays(
    shape=None, dtype=np.float64, min_value=-3.0, max_value=3.0, min_side=1, max_side=4, max_dims=3
):
    """A hypothesis strategy for finite float arrays in ``[min_value, max_value]``.

    ``shape`` fixes the shape; otherwise shapes are drawn with up to ``max_dims`` axes."""
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    shapes = (
        st.just(shape)
        if shape is not None
        else hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=min_side, max_side=max_side)
    )
    width = 32 if np.dtype(dtype).itemsize <= 4 else 64
    elements = st.floats(min_value, max_value, allow_nan=False, allow_infinity=False, width=width)
    return hnp.arrays(dtype, shapes, elements=elements)
