"""``DeviceArray``: a numpy-backed stand-in for ``cupy.ndarray``, so CI proves backend neutrality
without a GPU.

It holds an ``np.ndarray`` and behaves the way generated code sees a cupy array:

- numpy functions and ufuncs dispatch to it (``__array_function__``, ``__array_ufunc__``) and
  return ``DeviceArray`` s; reductions return 0-d arrays, never host scalars (as cupy does);
  ``np.add.at`` and other ufunc methods work on the wrapped buffer in place;
- it has the ndarray methods and attributes that adjoint rules use, and views share memory;
- it REFUSES to move data behind the user's back, as cupy does: ``np.asarray(x)`` (``__array__``)
  raises ``TypeError``, and so does mixing a host float array into a device computation
  (``device * np.ones(3)``, ``np.concatenate([host, device])``, ``device[i] = host``), which cupy
  answers with ``TypeError: Unsupported type <class 'numpy.ndarray'>``. Host *index* arrays
  (integer or boolean; cupy copies them over) and numpy scalars are accepted;
- ``bool()``, ``float()``, ``int()``, ``operator.index()``, ``.item()`` and ``.tolist()`` of a
  0-d array are allowed (cupy allows them: they synchronize and copy one value to the host) but
  every one is recorded, with the line that asked for it, so tests can assert that the backward
  pass adds none; on an array with ``ndim > 0`` they raise;
- ``flags`` has only what cupy's has (``c_contiguous``, ``f_contiguous``, ``owndata``: no
  ``writeable``), and there is no ``setflags``.

``.get()`` is the explicit copy to the host (cupy's spelling). ``to_device``/``to_host`` convert
whole argument trees (dicts, lists, tuples).

``runtime.array_module`` finds the module through ``__array_namespace__``, which answers
``devicearray.xp``: numpy itself (whose functions dispatch back here, as they would to any duck
array) except that the functions making new arrays from Python values (``xp.asarray(1.0)``,
``xp.zeros(shape)``, ``xp.arange(n)``) make device arrays, as ``cupy.asarray`` and friends do.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import os
import sys
import types

import numpy as np

__all__ = [
    "DeviceArray",
    "to_device",
    "to_host",
    "is_device",
    "host_syncs",
    "track_host_syncs",
    "reset_host_syncs",
    "HostSync",
    "xp",
]

_HERE = os.path.abspath(__file__)
IMPLICIT_MSG = (
    "Implicit conversion to a NumPy array is not allowed. "
    "Please use `.get()` to construct a NumPy array explicitly."
)


# ---- host synchronizations -----------------------------------------------------------------------


class HostSync(tuple):
    """One value copied to the host: ``(kind, where)``, ``where`` being ``file:line: source``."""

    __slots__ = ()

    @property
    def kind(self):
        return self[0]

    @property
    def where(self):
        return self[1]

    def __repr__(self):
        return f"{self[0]} at {self[1]}"


_SYNCS: list[HostSync] = []


def _caller():
    """The first frame outside this file: the code that asked for the host value."""
    f = sys._getframe(2)
    while f is not None and os.path.abspath(f.f_code.co_filename) == _HERE:
        f = f.f_back
    if f is None:
        return "?"
    filename, lineno = f.f_code.co_filename, f.f_lineno
    line = linecache.getline(filename, lineno).strip()  # generated code is in linecache too
    return f"{filename}:{lineno}: {line}"


def _record(kind):
    _SYNCS.append(HostSync((kind, _caller())))


def host_syncs():
    """Every host synchronization recorded so far (a copy)."""
    return list(_SYNCS)


def reset_host_syncs():
    del _SYNCS[:]


@contextlib.contextmanager
def track_host_syncs():
    """``with track_host_syncs() as syncs:`` -- ``syncs`` fills with the block's host syncs."""
    start = len(_SYNCS)
    got: list[HostSync] = []
    try:
        yield got
    finally:
        got.extend(_SYNCS[start:])


# ---- unwrapping and wrapping ---------------------------------------------------------------------

# what a host np.ndarray may be where it meets device arrays:
_REFUSE_ALL = 0  # an operand of a ufunc or an operator: cupy raises for any host array
_REFUSE_DATA = 1  # an argument of a function or method: float/complex host data is refused,
#                   integer and boolean host arrays (indices, axes, sections) are accepted
_ACCEPT = 2  # an index: cupy copies host index arrays to the device


def _refuse(x, where):
    raise TypeError(
        f"Unsupported type {type(x)}: a host numpy.ndarray (shape {x.shape}, dtype {x.dtype}) "
        f"met device arrays in {where}; cupy refuses to mix host and device arrays "
        "(the host array must be moved with cupy.asarray explicitly)"
    )


def _unwrap(x, policy, where):
    t = type(x)
    if t is DeviceArray:
        return x._a
    if isinstance(x, np.ndarray):
        if policy == _REFUSE_ALL or (policy == _REFUSE_DATA and x.dtype.kind not in "biu"):
            _refuse(x, where)
        return x
    if t is tuple or t is list:
        return t(_unwrap(v, policy, where) for v in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a namedtuple
        return t(*(_unwrap(v, policy, where) for v in x))
    if t is dict:
        return {k: _unwrap(v, policy, where) for k, v in x.items()}
    return x


def _wrap(r):
    if isinstance(r, np.ndarray):
        return DeviceArray(r)
    if isinstance(r, (np.number, np.bool_)):  # cupy answers 0-d arrays, never host scalars
        return DeviceArray(np.asarray(r))
    t = type(r)
    if t is tuple or t is list:
        return t(_wrap(v) for v in r)
    if isinstance(r, tuple) and hasattr(r, "_fields"):  # e.g. slogdet's result
        return t(*(_wrap(v) for v in r))
    return r


def _name(fn):
    mod = getattr(fn, "__module__", None) or "numpy"
    return f"{mod.split('.')[0]}.{getattr(fn, '__name__', fn)}"


# ---- the array -----------------------------------------------------------------------------------


class _Flags:
    """cupy's ``ndarray.flags``: contiguity and ownership only (no ``writeable``)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, a):
        self.c_contiguous = bool(a.flags.c_contiguous)
        self.f_contiguous = bool(a.flags.f_contiguous)
        self.owndata = bool(a.flags.owndata)

    def __getitem__(self, name):
        key = {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous", "OWNDATA": "owndata"}
        if name not in key:
            raise KeyError(f"{name} is not defined for cupy.ndarray.flags")
        return getattr(self, key[name])


def _ufunc_op(ufunc):
    def op(self, other):
        return ufunc(self, other)

    def rop(self, other):
        return ufunc(other, self)

    def iop(self, other):
        return ufunc(self, other, out=(self,))

    return op, rop, iop


def _method(name, policy=_REFUSE_DATA):
    def method(self, *args, **kwargs):
        where = f"ndarray.{name}"
        return _wrap(
            getattr(self._a, name)(*_unwrap(args, policy, where), **_unwrap(kwargs, policy, where))
        )

    method.__name__ = name
    return method


class DeviceArray:
    """A numpy array pretending to live on a device (see the module docstring)."""

    __slots__ = ("_a", "__weakref__")
    __hash__ = None

    def __init__(self, a):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"DeviceArray wraps an np.ndarray, not {type(a).__name__}")
        self._a = a

    # -- explicit transfer (cupy's API) --
    def get(self):
        """The explicit copy to the host."""
        return self._a.copy()

    # -- refused implicit conversions --
    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT_MSG)

    def _scalar(self, kind):
        if self._a.ndim != 0:
            raise TypeError(
                f"{kind}() of a device array of shape {self._a.shape} would copy it to the host; "
                "only 0-d arrays convert (and each conversion synchronizes)"
            )
        _record(kind)
        return self._a[()]

    def __bool__(self):
        return bool(self._scalar("bool"))

    def __float__(self):
        return float(self._scalar("float"))

    def __int__(self):
        return int(self._scalar("int"))

    def __complex__(self):
        return complex(self._scalar("complex"))

    def __index__(self):
        if self._a.dtype.kind not in "iu":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._scalar("index"))

    def item(self):
        return self._scalar("item").item()

    def tolist(self):
        return self._scalar("tolist").item()

    # -- dispatch protocols --
    def __array_namespace__(self, api_version=None):
        return xp

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        where = f"{_name(ufunc)}{'' if method == '__call__' else '.' + method}"
        if method == "at":
            target, index, *values = inputs
            if type(target) is not DeviceArray:
                raise TypeError(
                    f"{where}: the target is a host {type(target).__name__} but the values are device "
                    "arrays; scatter-add into a host array would copy them to the host"
                )
            ufunc.at(
                target._a, _unwrap(index, _ACCEPT, where), *_unwrap(values, _REFUSE_ALL, where)
            )
            return None
        out = kwargs.pop("out", None)
        if out is not None and all(o is None for o in out):
            out = None
        ins = _unwrap(inputs, _REFUSE_ALL, where)
        kw = _unwrap(kwargs, _REFUSE_ALL, where)
        if out is not None:
            kw["out"] = _unwrap(tuple(out), _REFUSE_ALL, where)
        result = getattr(ufunc, method)(*ins, **kw)
        if out is not None:
            return out[0] if len(out) == 1 else tuple(out)
        return _wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        for t in types:
            if not issubclass(t, (DeviceArray, np.ndarray)):
                return NotImplemented
        where = _name(func)
        return _wrap(
            func(*_unwrap(args, _REFUSE_DATA, where), **_unwrap(kwargs, _REFUSE_DATA, where))
        )

    # -- attributes --
    shape = property(lambda self: self._a.shape)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    dtype = property(lambda self: self._a.dtype)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    T = property(lambda self: DeviceArray(self._a.T))
    mT = property(lambda self: DeviceArray(np.swapaxes(self._a, -1, -2)))
    real = property(lambda self: DeviceArray(self._a.real))
    imag = property(lambda self: DeviceArray(self._a.imag))
    flags = property(lambda self: _Flags(self._a))
    device = property(lambda self: "device:0")

    def __len__(self):
        if self._a.ndim == 0:
            raise TypeError("len() of unsized object")
        return self._a.shape[0]

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        a = self._a
        return (
            DeviceArray(a[i]) if a.ndim > 1 else DeviceArray(a[i : i + 1].reshape(()))
            for i in range(a.shape[0])
        )

    def __getitem__(self, index):
        return _wrap(self._a[_unwrap(index, _ACCEPT, "ndarray.__getitem__")])

    def __setitem__(self, index, value):
        self._a[_unwrap(index, _ACCEPT, "ndarray.__setitem__")] = _unwrap(
            value, _REFUSE_ALL, "ndarray.__setitem__"
        )

    def __repr__(self):  # no data: printing a cupy array synchronizes
        return f"DeviceArray(shape={self._a.shape}, dtype={self._a.dtype})"

    __str__ = __repr__

    def __copy__(self):
        return DeviceArray(self._a.copy())

    def __deepcopy__(self, memo):
        return DeviceArray(self._a.copy())

    # -- methods (the ones adjoint rules and user code use) --
    for _n in (
        "reshape",
        "transpose",
        "sum",
        "mean",
        "max",
        "min",
        "prod",
        "dot",
        "copy",
        "astype",
        "ravel",
        "flatten",
        "squeeze",
        "swapaxes",
        "clip",
        "cumsum",
        "cumprod",
        "var",
        "std",
        "take",
        "repeat",
        "diagonal",
        "trace",
        "argmax",
        "argmin",
        "argsort",
        "any",
        "all",
        "nonzero",
        "round",
        "conj",
        "conjugate",
        "view",
        "fill",
        "sort",
        "put",
        "choose",
        "ptp",
    ):
        locals()[_n] = _method(
            _n, _ACCEPT if _n in ("take", "put", "repeat", "choose") else _REFUSE_DATA
        )
    del _n

    # -- operators --
    __add__, __radd__, __iadd__ = _ufunc_op(np.add)
    __sub__, __rsub__, __isub__ = _ufunc_op(np.subtract)
    __mul__, __rmul__, __imul__ = _ufunc_op(np.multiply)
    __truediv__, __rtruediv__, __itruediv__ = _ufunc_op(np.true_divide)
    __floordiv__, __rfloordiv__, __ifloordiv__ = _ufunc_op(np.floor_divide)
    __mod__, __rmod__, __imod__ = _ufunc_op(np.remainder)
    __pow__, __rpow__, __ipow__ = _ufunc_op(np.power)
    __matmul__, __rmatmul__, __imatmul__ = _ufunc_op(np.matmul)
    __and__, __rand__, __iand__ = _ufunc_op(np.bitwise_and)
    __or__, __ror__, __ior__ = _ufunc_op(np.bitwise_or)
    __xor__, __rxor__, __ixor__ = _ufunc_op(np.bitwise_xor)
    __lshift__, __rlshift__, __ilshift__ = _ufunc_op(np.left_shift)
    __rshift__, __rrshift__, __irshift__ = _ufunc_op(np.right_shift)
    __lt__ = _ufunc_op(np.less)[0]
    __le__ = _ufunc_op(np.less_equal)[0]
    __gt__ = _ufunc_op(np.greater)[0]
    __ge__ = _ufunc_op(np.greater_equal)[0]
    __eq__ = _ufunc_op(np.equal)[0]
    __ne__ = _ufunc_op(np.not_equal)[0]

    def __divmod__(self, other):
        return np.divmod(self, other)

    def __neg__(self):
        return np.negative(self)

    def __pos__(self):
        return np.positive(self)

    def __abs__(self):
        return np.absolute(self)

    def __invert__(self):
        return np.invert(self)


# ---- the array module ----------------------------------------------------------------------------

# numpy functions that make a new array from Python values rather than from an array argument:
# cupy's versions make device arrays, numpy's (which do not dispatch) host arrays
_CREATORS = (
    "asarray",
    "asanyarray",
    "array",
    "ascontiguousarray",
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "identity",
    "tri",
    "indices",
    "fromiter",
    "frombuffer",
)


class _DeviceNumpy(types.ModuleType):
    """What ``DeviceArray.__array_namespace__`` answers (see the module docstring)."""

    def __getattr__(self, name):
        obj = getattr(np, name)
        if name in _CREATORS:

            @functools.wraps(obj)
            def create(*args, **kwargs):
                where = f"xp.{name}"
                return _wrap(obj(*_unwrap(args, _ACCEPT, where), **_unwrap(kwargs, _ACCEPT, where)))

            return create
        return obj


xp = _DeviceNumpy(
    "devicearray.xp", "numpy with device-array creation functions (like the cupy module)"
)


# ---- trees ---------------------------------------------------------------------------------------


def _tree_map(fn, x):
    """``x`` with ``fn`` applied to every leaf inside its dicts, lists and tuples."""
    if isinstance(x, dict):
        return {k: _tree_map(fn, v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_tree_map(fn, v) for v in x)
    return fn(x)


def to_device(x):
    """A copy of ``x`` with every np.ndarray (in dicts, lists, tuples) made a ``DeviceArray``."""
    return _tree_map(lambda a: DeviceArray(a.copy()) if isinstance(a, np.ndarray) else a, x)


def to_host(x):
    """``x`` with every ``DeviceArray`` copied back to the host (explicitly, with ``.get()``)."""
    return _tree_map(lambda a: a.get() if isinstance(a, DeviceArray) else a, x)


def is_device(x):
    """Is every array in the tree ``x`` a ``DeviceArray`` (and no leaf a host array)?"""
    if isinstance(x, DeviceArray):
        return True
    if isinstance(x, dict):
        return all(is_device(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return all(is_device(v) for v in x)
    return False
