"""Render the forward and backward sweeps as Python source, compile it, and load it.

Guarantees: the code is compiled under a name like ``<sourcegrad: module.f vjp>`` and registered
in ``linecache``, so tracebacks, ``pdb`` and ``inspect.getsource`` show the generated lines; no
file is written. The generated function's globals are the user function's globals and its
closure holds the user's own cells (of the function and of inlined helpers), so it reads every
captured value live, as the user's code does; the names the adjoint templates use (``np``,
``unbroadcast``, ...) are bound as closure cells of a factory, renamed where they would shadow a
name of the user's. ``guard`` compiles the check that what the compile decided from captured
values still holds (``captures.py``); a ``vjp``'s pullback refuses to run when a captured operand
was rebound after its forward.
"""

from __future__ import annotations

import builtins
import itertools
import linecache
import os
import types
import weakref
from dataclasses import dataclass, replace
from functools import lru_cache

from sourcegrad.errors import PullbackError
from sourcegrad.runtime.private import private_pullback

from . import ir
from .captures import KEY as _CAPTURES, ArgRoot, Item


_counter = itertools.count()


@dataclass
class Compiled:
    function: object  # the generated function
    source: str  # its source as the user reads it
    filename: str  # the linecache name
    line_map: dict  # generated line -> ir.Pos of the user's statement
    first_line: int  # line of the displayed function within the compiled text
    guard: object = None  # () -> bool: do the captured values the compile decided from still hold?
    reads: tuple = ()  # the captures.Read values the guard checks
    # (args) -> bool: do the call's arguments (all of them, by position) hold what the compile
    # decided from (the class of an object whose method it inlined, a function passed in)?
    arg_guard: object = None
    arg_reads: tuple = ()  # the captures.Read values arg_guard checks
    # compiled without the call's arguments where it would have decided from them (a method of
    # self resolved from the class defining the method): a call with arguments compiles anew
    blind: bool = False
    sites: list = None  # a metered compile's save sites: (ir.Pos, the value saved), by number
    tests: bool = (
        False  # does the forward compute an if, while or break test (lazy arrays: persist there)?
    )

    def changed(self, args=None):
        """The captured names (and, given the call's ``args``, the parts of the arguments) whose
        values no longer hold what the compile decided from."""
        out = [r.describe() for r in self.reads if not _holds(r)]
        if args is not None:
            out += [r.describe() for r in self.arg_reads if not guard((r,))(args)]
        return out

    def user_line(self, line):
        """The user's position a generated line comes from (the nearest mapped line above)."""
        while line > 0 and line not in self.line_map:
            line -= 1
        return self.line_map.get(line)


# linecache name -> Compiled, for error notes and the profiler
REGISTRY = weakref.WeakValueDictionary()


def annotate(exc, tb):
    """Add a note to an exception raised in generated code: the generated line and the user's."""
    frames = []
    while tb is not None:
        compiled = REGISTRY.get(tb.tb_frame.f_code.co_filename)
        if compiled is not None:
            frames.append((compiled, tb.tb_lineno))
        tb = tb.tb_next
    if not frames or not hasattr(exc, "add_note"):
        return
    compiled, line = frames[-1]
    pos = compiled.user_line(line)
    generated = linecache.getline(compiled.filename, line).strip()
    note = f"in sourcegrad's generated code, line {line}: {generated}"
    if pos is not None:
        user = linecache.getline(pos.filename, pos.line).strip()
        note += f"\n  which comes from {pos.filename}:{pos.line}: {user}"
    note += f"\n  (see sourcegrad.source(...) for the generated code)"
    if note not in getattr(exc, "__notes__", ()):
        exc.add_note(note)


def render(
    name,
    rev,
    mode,
    naming,
    bind,
    result_pos=None,
    aux=None,
    signature=None,
    releases=True,
    scalar_result=False,
):
    """Source lines of the generated function, ``(text, pos)`` each, from a ``reverse.Reversed``.
    ``mode``: 'value_and_grad' or 'vjp'. ``aux``: the variable holding ``has_aux``'s auxiliary
    value; the value is then rendered ``(loss, aux)``. ``signature``: the parameter list as
    written in the header (default: the parameters by position). ``releases=False`` leaves out
    the ``del`` statements that release dead values (numba compiles no ``del``).
    ``scalar_result``: the result is known to be a scalar (shape ``()``), so the gradient starts
    from 1.0; otherwise from ``seed_of`` it (a result of shape ``(1,)`` is a scalar too)."""
    lines = []  # (text, pos)
    last = [None]  # the user line the last comment named
    generated = {}  # filename -> is it code sourcegrad generated? (asked once per file)

    def add(depth, text, pos=None, comment=False):
        mapped = pos
        if pos is not None:
            known = generated.get(pos.filename)
            if known is None:
                known = generated[pos.filename] = pos.filename in REGISTRY
            if known:
                mapped = _user_pos(pos)
        # lines of generated code (hvp's, from jvp code) that come from one user line: one comment
        repeat = (
            mapped is not pos and mapped is not None and (mapped.filename, mapped.line) == last[0]
        )
        pos = mapped
        if comment and pos is not None and not repeat:
            text = f"{text}  # {_basename(pos.filename)}:{pos.line}"
            last[0] = (pos.filename, pos.line)
        lines.append(("    " * depth + text, pos))

    if mode == "jvp":  # forward mode: ``rev`` is a ``forward.Forward``; returns (value, tangent)
        add(0, f"def {name}_jvp({', '.join([*rev.params, *rev.tangent_params])}):")
        _add_lines(add, rev.body, 1)
        pair = [rev.result.render(), rev.tangent_out.render()]
        add(1, f"return {', '.join(pair[::-1] if rev.tangent_first else pair)}", result_pos)
        return lines
    if not releases:
        rev = replace(rev, forward=_kept(rev.forward), backward=_kept(rev.backward))
    suffix = "value_and_grad" if mode == "value_and_grad" else "vjp"
    add(0, f"def {name}_{suffix}({signature if signature is not None else ', '.join(rev.params)}):")
    _add_lines(add, rev.forward, 1)
    res = rev.result.render()
    out_expr = _outputs(rev.outputs)
    if mode == "value_and_grad":
        add(1, f"{bind('check_scalar')}({res}, {name!r})", result_pos)
        if isinstance(rev.result, ir.Name) and rev.result.id in rev.restored:
            value = naming.temp("value")  # the backward restores the result's variable
            add(1, f"{value} = {res}")
            res = value
        if rev.seed:  # (an array of one entry, where the result's shape is not known: its shape)
            seed = "1.0" if scalar_result else f"{bind('seed_of')}({res})"
            add(1, f"{rev.seed} = {seed}")
        if aux is not None and rev.mutates:  # the backward may restore arrays aux holds in place
            add(1, f"{aux} = {bind('copy_arrays')}({aux})")
        _add_lines(add, rev.backward, 1)
        if aux is not None:
            res = f"({res}, {aux})"
        add(1, f"return {res}, {out_expr}")
    else:
        add(1, f"def {name}_pullback({rev.seed or '_seed'}):")
        nonlocals = sorted(rev.restored)
        if nonlocals:
            add(2, f"nonlocal {', '.join(nonlocals)}")
        _add_lines(add, rev.backward, 2)
        add(2, f"return {out_expr}")
        value = f"{bind('copy_value')}({res})" if rev.mutates else res
        if aux is not None:  # has_aux: the value is (loss, aux), aux copied as the value is
            value = (
                f"({value}, {bind('copy_arrays')}({aux}))" if rev.mutates else f"({value}, {aux})"
            )
        add(1, f"return {value}, {name}_pullback")
    return lines


@lru_cache(maxsize=256)
def _basename(filename):
    return os.path.basename(filename)


def _user_pos(pos):
    """``pos`` in the user's source: a position in code sourcegrad generated (``hvp`` compiles the
    generated jvp code) is followed back to the user's line it comes from, so the comments, error
    notes and profiles of second derivatives name your lines."""
    for _ in range(4):  # a generated function of a generated function at most a few levels deep
        compiled = REGISTRY.get(pos.filename) if pos is not None else None
        mapped = compiled.user_line(pos.line) if compiled is not None else None
        if mapped is None:
            return pos
        pos = mapped
    return pos


def _kept(body):
    """``body`` without its releases (``code.delete``)."""
    return [st for st in body if not (st.info and st.info.get("release"))]


def _outputs(outputs):
    exprs = [e.render() for _, e in outputs]
    if len(exprs) == 1:
        return exprs[0]
    return "(" + ", ".join(exprs) + ")"


def _add_lines(add, body, depth):
    last = None
    for line in body:
        new_line = line.pos is not None and (last is None or line.pos.line != last)
        add(depth + line.depth, line.text, line.pos, comment=new_line)
        if line.pos is not None:
            last = line.pos.line


def load(fn, qualname, mode, lines, names, replace_objects=None):
    """Compile the rendered lines and return a ``Compiled``. ``names``: what the generated code
    needs bound beyond the user's globals (runtime helpers, template names, defaults), each under
    the name the code reads it by, and under ``captures.KEY`` the ``Captures`` of the compile:
    the helpers' cells it reads and the modules it reads other modules' globals through.
    ``replace_objects``: {id(object): stand-in} for helpers bound differently (numba's ``reversed``)."""
    names = dict(names)
    captures = names.pop(_CAPTURES, None)
    fn = _underlying(fn)
    code = fn.__code__
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    if captures is not None:
        cells.update(captures.cells)
        names.update(captures.objects)
        names.update(captures.bound)
    if replace_objects:
        names = {k: replace_objects.get(id(v), v) for k, v in names.items()}
    clash = set(names) & set(cells)
    if clash:  # the naming module keeps them apart: a clash is our bug
        raise AssertionError(
            f"generated names {sorted(clash)} are both bound and read from the user's closure"
        )
    g = fn.__globals__
    texts = [t for t, _ in lines]
    factory_params = sorted(set(names) | set(cells))
    header = f"def _factory({', '.join(factory_params)}):"
    inner_name = texts[0][4 : texts[0].index("(")]
    full = f"{header}\n    " + "\n    ".join(texts) + f"\n    return {inner_name}\n"
    filename = f"<sourcegrad: {fn.__module__}.{qualname} {mode} #{next(_counter)}>"
    linecache.cache[filename] = (len(full), None, full.splitlines(True), filename)
    module_code = compile(full, filename, "exec")
    factory_code = next(c for c in module_code.co_consts if isinstance(c, types.CodeType))
    factory = types.FunctionType(factory_code, g, "_factory")
    made = factory(**{k: names.get(k) for k in factory_params})
    # The same code, with the user's own cells where it reads a closure variable: live reads.
    closure = tuple(
        cells.get(n, c) for n, c in zip(made.__code__.co_freevars, made.__closure__ or ())
    )
    generated = types.FunctionType(
        made.__code__, g, made.__name__, fn.__defaults__, closure or None
    )
    generated.__qualname__ = made.__qualname__
    line_map = {i + 2: pos for i, (_, pos) in enumerate(lines) if pos is not None}
    every = tuple(captures.reads.values()) if captures is not None else ()
    reads = tuple(r for r in every if not r.of_arguments())
    arg_reads = tuple(r for r in every if r.of_arguments())
    if mode == "vjp":
        generated = _pullback_checked(_pullback_private(generated), reads, filename)
    compiled = Compiled(
        generated,
        "\n".join(texts) + "\n",
        filename,
        line_map,
        2,
        guard(reads, filename),
        reads,
        guard(arg_reads, filename),
        arg_reads,
    )
    REGISTRY[filename] = compiled
    weakref.finalize(compiled, _forget, filename)
    return compiled


def _forget(filename):
    """A compiled gradient was collected: its source goes from ``linecache`` too."""
    linecache.cache.pop(filename, None)


def _underlying(fn):
    """The function whose source is read: a ``functools.wraps`` wrapper's wrapped function."""
    while isinstance(getattr(fn, "__wrapped__", None), types.FunctionType):
        fn = fn.__wrapped__
    return fn


_CHECKS = {
    "is": "{read} is {value}",
    "eq": "(type({read}) is {type} and {read} == {value})",
    "type": "type({read}) is {value}",
    "absent": "{name!r} not in {where}",
    "len": "len({read}) == {value}",
    # (a function made again by the same def: the same code, globals and defaults, no closure)
    "code": "(not {read}.__closure__ and ({read}.__code__, {read}.__globals__, {read}.__defaults__, "
    "{read}.__kwdefaults__) == {value})",
}


def guard(reads, filename="<sourcegrad guard>"):
    """A function that is True while every read holds what the compile saw (one expression of
    dict lookups and identity tests), or None when there is nothing to check. Of no arguments,
    or, where a read is of the call's arguments (``captures.ArgRoot``), of the tuple of them."""
    if not reads:
        return None
    params, terms, wheres = {}, [], {}

    def where_of(r):
        if type(r.where) is ArgRoot:
            return "_a"
        where = wheres.get(id(r.where))
        if where is None:
            where = wheres[id(r.where)] = f"_w{len(wheres)}"
            params[where] = r.where
        return where

    for k, r in enumerate(reads):
        if r.check in ("distinct", "same"):
            objects = ", ".join(f"id({_read_text(m, where_of(m))})" for m in r.value)
            terms.append(f"len({{{objects}}}) == {len(r.value) if r.check == 'distinct' else 1}")
            continue
        where = where_of(r)
        read = _read_text(r, where)
        params[f"_v{k}"] = r.value
        if r.check == "eq":
            params[f"_t{k}"] = type(r.value)
        terms.append(
            _CHECKS[r.check].format(
                read=read, value=f"_v{k}", type=f"_t{k}", name=r.name, where=where
            )
        )
    of_args = "_a" if any(r.of_arguments() for r in reads) else ""
    text = (
        f"def _factory({', '.join(params)}):\n"
        f"    def guard({of_args}):\n"
        f"        try:\n"
        f"            return {' and '.join(terms)}\n"
        f"        except Exception:\n"
        f"            return False\n"
        f"    return guard\n"
    )
    return _made(text, filename, params)


def _pullback_private(vjp):
    """``vjp`` whose pullback reads its own copies of the arrays the caller can still write into
    in place (its arguments, the value returned, the user's globals): ``runtime/private.py``."""

    own_cells = frozenset(vjp.__code__.co_cellvars)

    def private_vjp(*args, **kwargs):
        value, pullback = vjp(*args, **kwargs)
        return value, private_pullback(pullback, (args, kwargs, value), own_cells)

    return private_vjp


def _pullback_checked(vjp, reads, filename):
    """``vjp`` whose pullback refuses to run when a captured value it reads (an operand: a float,
    an array, an integer) was rebound after the forward ran: the backward reads captured values
    when it runs, and would pair the old forward with the new value."""
    operands = tuple(r for r in reads if r.check in ("type", "eq"))
    if not operands:
        return vjp
    current = _reader(operands, filename)

    def checked_vjp(*args, **kwargs):
        before = current()
        value, pullback = vjp(*args, **kwargs)

        def checked_pullback(cotangent):
            now = current()
            changed = [
                r.describe() for r, a, b in zip(operands, before, now) if not _same_value(a, b)
            ]
            if changed:
                raise PullbackError(
                    f"{', '.join(changed)} changed between the forward and this pullback: the backward would read "
                    "the new value against the old forward. Call the vjp function again after rebinding it."
                )
            return pullback(cotangent)

        return value, checked_pullback

    return checked_vjp


def _same_value(a, b):
    # (a bound method, ``MyFunction.apply``, is a new object at each read: equal ones are the same)
    return a is b or (
        type(a) is type(b)
        and type(a) in (int, float, bool, str, complex, types.MethodType)
        and a == b
    )


def _reader(reads, filename):
    """A function of no arguments that returns the current value of each read (None where it
    cannot be read)."""
    params, items, wheres = {}, [], {}
    for r in reads:
        where = wheres.get(id(r.where))
        if where is None:
            where = wheres[id(r.where)] = f"_w{len(wheres)}"
            params[where] = r.where
        items.append(_read_text(r, where))
    text = (
        f"def _factory({', '.join(params)}):\n"
        f"    def read():\n"
        f"        try:\n"
        f"            return ({', '.join(items)},)\n"
        f"        except Exception:\n"
        f"            return ({'None, ' * len(items)})\n"
        f"    return read\n"
    )
    return _made(text, filename, params)


def _read_text(r, where):
    if type(r.where) is ArgRoot:
        read = f"{where}[{r.where.index}]"
    elif isinstance(r.where, types.CellType):
        read = f"{where}.cell_contents"
    else:
        read = f"{where}[{r.name!r}]" if type(r.where) is dict else f"{where}.{r.name}"
    return read + "".join(f"[{a.key!r}]" if type(a) is Item else f".{a}" for a in r.attrs)


def _made(text, filename, params):
    code = compile(text, filename.replace("<sourcegrad:", "<sourcegrad guard:"), "exec")
    factory = types.FunctionType(
        next(c for c in code.co_consts if isinstance(c, types.CodeType)), {"__builtins__": builtins}
    )
    return factory(**params)


def _holds(read):
    """Does one read still hold? (The slow path, for messages.)"""
    return guard((read,))()
