"""Render the forward and backward sweeps as Python source, compile it, and load it.

Guarantees: the code is compiled under a name like ``<sourcegrad: module.f vjp>`` and registered
in ``linecache``, so tracebacks, ``pdb`` and ``inspect.getsource`` show the generated lines; no
file is written. The generated function's globals are the user function's globals (so the
forward reads module names live, as the user's code does); the names the adjoint templates use
(``np``, ``unbroadcast``, ...) and the user function's closure values are bound as closure cells
of a factory, renamed where they would shadow a name of the user's.
"""

from __future__ import annotations

import itertools
import linecache
import os
import re
import types
from dataclasses import dataclass

from . import ir


_counter = itertools.count()


@dataclass
class Compiled:
    function: object  # the generated function
    source: str  # its source as the user reads it
    filename: str  # the linecache name
    line_map: dict  # generated line -> ir.Pos of the user's statement
    first_line: int  # line of the displayed function within the compiled text

    def user_line(self, line):
        """The user's position a generated line comes from (the nearest mapped line above)."""
        while line > 0 and line not in self.line_map:
            line -= 1
        return self.line_map.get(line)


REGISTRY = {}  # linecache name -> Compiled, for error notes and the profiler


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


def render(name, params, rev, fwd, bwd, outputs, mode, result, fn_filename, result_pos=None):
    """Source text of the generated function. ``mode``: 'value_and_grad' or 'vjp'."""
    lines = []  # (text, pos)
    def add(depth, text, pos=None, comment=False):
        if comment and pos is not None:
            text = f"{text}  # {os.path.basename(pos.filename)}:{pos.line}"
        lines.append(("    " * depth + text, pos))

    suffix = "value_and_grad" if mode == "value_and_grad" else "vjp"
    add(0, f"def {name}_{suffix}({', '.join(params)}):")
    _add_lines(add, fwd, 1)
    res = result.render()
    out_expr = _outputs(outputs)
    if mode == "value_and_grad":
        add(1, f"check_scalar({res}, {name!r})", result_pos)
        if isinstance(result, ir.Name) and result.id in rev.restored:
            value = rev.naming.temp("value")  # the backward restores the result's variable
            add(1, f"{value} = {res}")
            res = value
        if rev.seed_name:
            add(1, f"{rev.seed_name} = 1.0")
        _add_lines(add, bwd, 1)
        add(1, f"return {res}, {out_expr}")
    else:
        add(1, f"def {name}_pullback({rev.seed_name or '_seed'}):")
        nonlocals = sorted(rev.restored)
        if nonlocals:
            add(2, f"nonlocal {', '.join(nonlocals)}")
        _add_lines(add, bwd, 2)
        add(2, f"return {out_expr}")
        value = f"copy_value({res})" if rev.mutates else res
        add(1, f"return {value}, {name}_pullback")
    return lines


def _outputs(outputs):
    exprs = [e for _, e in outputs]
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


def load(fn, qualname, mode, lines, names, user_names):
    """Compile the rendered lines and return a ``Compiled``. ``names``: what the generated code
    needs bound beyond the user's globals (runtime helpers, template names, inlined functions'
    module-level values)."""
    namespace = {}
    renames = {}
    g = fn.__globals__
    for n in sorted(names):
        obj = names[n]
        if n in user_names or (n in g and g[n] is not obj):
            renames[n] = f"_sg_{n}"
        namespace[renames.get(n, n)] = obj
    closure = {}
    code = fn.__code__
    for n, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            closure[n] = cell.cell_contents
        except ValueError:
            continue
    texts = [t for t, _ in lines]
    if renames:
        pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, renames)) + r")\b")
        texts = [pattern.sub(lambda m: renames[m.group(1)], t) for t in texts]
    factory_params = sorted(set(namespace) | set(closure))
    header = f"def _factory({', '.join(factory_params)}):"
    body = ["    " + t for t in texts]
    inner_name = texts[0][4: texts[0].index("(")]
    full = "\n".join([header] + body + [f"    return {inner_name}", ""])
    filename = f"<sourcegrad: {fn.__module__}.{qualname} {mode} #{next(_counter)}>"
    linecache.cache[filename] = (len(full), None, full.splitlines(True), filename)
    module_code = compile(full, filename, "exec")
    factory_code = next(c for c in module_code.co_consts if isinstance(c, types.CodeType))
    factory = types.FunctionType(factory_code, g, "_factory")
    args = {**closure, **namespace}
    generated = factory(**{k: args[k] for k in factory_params})
    generated.__defaults__ = fn.__defaults__
    line_map = {i + 2: pos for i, (_, pos) in enumerate(lines) if pos is not None}
    compiled = Compiled(generated, "\n".join(texts) + "\n", filename, line_map, 2)
    REGISTRY[filename] = compiled
    return compiled
