"""Dicts: a local dict literal with string keys, one local variable per entry; a dict argument
read by key, looped over, or viewed as a list of its keys, values or items.

Expects: the walk of ``anf`` and its state (``dicts``: each local dict literal's entries, by
key; ``dict_keys``: the keys written so far). Guarantees: ``d = {"a": x}`` binds a variable per
key (``d_a``), which ``d["a"]`` reads and ``d["a"] = v`` rebinds; such a dict used any other way
(returned, passed, looped over, read at a key not written yet) is refused. A dict held in a
variable is looped over by a list of its keys, made without gradient, and read by key.
"""

from __future__ import annotations

import ast
import builtins

import libcst as cst
import numpy as np

from .. import fence, ir
from .syntax import tup


def _nth_key(keys, i):
    """The operation reading entry ``i`` of the list of keys ``keys`` (no gradient)."""
    return ir.Op(
        None, (ir.Name(keys), ir.Index((ir.Name(i),), False)), (), f"{keys}[{i}]", "nondiff"
    )


def _entries_changed(afn):
    """Names of which an ``ast`` function writes or deletes an entry (``d["k"] = v``,
    ``d["k"] += v``, ``del d["k"]``)."""
    out = set()
    for node in ast.walk(afn):
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            continue
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name):
                    out.add(sub.value.id)
    return out


def _sorted_keys(d):
    """``sorted(name)`` of a local: a dict's keys, or a sequence with nothing to differentiate
    (integers, strings); a float or an array could carry a gradient that sorting would drop."""
    if isinstance(d, dict):
        return sorted(d)
    values = list(d)
    if all(isinstance(v, (int, str, np.integer, np.str_)) for v in values):
        return sorted(values)
    from sourcegrad.errors import UnsupportedValueError

    raise UnsupportedValueError(
        "sorted(...) in a differentiated function sorts a dict's keys or integers and "
        "strings only: sorting floats or arrays drops their gradient; use np.sort(...)"
    )


class Dicts:
    """The dict methods of the ``Normalizer``."""

    def _dict_view(self, node):
        """``d.keys()``, ``d.values()``, ``d.items()`` as a value (a list built by a loop over the
        keys), and ``sorted(d)`` (its keys, no gradient); None for any other call."""
        func = node.func
        if (
            type(func) is cst.Name  # (isinstance with a libcst class, an ABC, is slower)
            and func.value == "sorted"
            and func.value not in self.locals
            and self._static_callee(func) is builtins.sorted
            and len(node.args) == 1
            and not node.args[0].keyword
            and not node.args[0].star
            and isinstance(node.args[0].value, cst.Name)
            and node.args[0].value.value in self.locals
        ):
            if node.args[0].value.value in self.dicts:
                self._refuse_dict_value(node.args[0].value)
            d = self._atom(node.args[0].value)
            fn = self._alias("sorted_keys", _sorted_keys)
            return ir.Op(None, (d,), (), f"{fn}({d.render()})", "nondiff")
        if (
            type(func) is cst.Attribute
            and func.attr.value == "get"
            and type(func.value) is cst.Name
            and func.value.value in self.dicts
            and func.value.value == self.star_params[1]
        ):
            return self._kwargs_get(node, func.value.value)
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("items", "keys", "values")
            and self._viewed_dict(func.value)
        ):
            return None
        if isinstance(func.value, cst.Name) and func.value.value in self.dicts:
            self._refuse_dict_value(func.value)
        if node.args:
            fence.refuse(self.src, node, msg=f".{func.attr.value}() takes no arguments")
        return self._view_list(func.attr.value, func.value, self._pos(node))

    def _viewed_dict(self, node):
        """Is ``node`` a dict whose keys, values or items a loop or a call views: a local value
        (``params.items()``), or a dict an object holds (``self.params.items()``)?"""
        if isinstance(node, cst.Name):
            return node.value in self.locals
        if type(node) in (cst.Attribute, cst.Subscript) and self._is_local_expr(node):
            k = self._peek(node)
            return k is not None and isinstance(k.value, dict)
        return False

    def _kwargs_get(self, node, name):
        """``kw.get("k", default)`` of a helper's ``**kw`` whose entries no statement writes or
        deletes: its keys are the call's, known now, so it reads the entry or is the default."""
        args = node.args
        if (
            not 1 <= len(args) <= 2
            or any(a.keyword is not None or a.star for a in args)
            or name in _entries_changed(self.src.ast_fn)
        ):
            fence.refuse(
                self.src,
                node,
                kind="Dict",
                msg=f"{name}.get(key, default) is supported with a string key, on a helper's "
                "**kwargs whose entries no statement writes or deletes",
                hint=f'read {name}["key"], or test the key with an if before the function',
            )
        key = self._dict_key(args[0].value)
        if key in self.dict_keys.get(name, set()):
            return ir.Name(self._dict_slot(name, key))
        if len(args) == 2:
            return self._atom(args[1].value)
        return ir.Const(None, "None")

    def _view_list(self, method, name, pos):
        """The list ``name.<method>()`` gives (``method``: keys, values or items)."""
        d = self._atom(name)
        keys = self.naming.temp("keys")
        self._emit(
            ir.Assign(keys, ir.Op(list, (d,), (), f"list({d.render()}.keys())", "nondiff"), pos)
        )
        if method == "keys":
            return ir.Name(keys)
        result = self.naming.temp("list")
        self._emit(ir.Assign(result, self._copy_op(tup([], True)), pos))
        i = self.naming.temp("k")
        with self._collecting() as body:
            key, value = self.naming.temp(), self.naming.temp()
            self._emit(ir.Assign(key, _nth_key(keys, i), pos))
            self._emit(ir.Assign(value, self._getitem_op(d, ir.Index((ir.Name(key),), False)), pos))
            if method == "values":
                self._emit(ir.Append(result, ir.Name(value), pos))
            else:
                pair = self.naming.temp()
                self._emit(
                    ir.Assign(pair, self._copy_op(tup([ir.Name(key), ir.Name(value)], False)), pos)
                )
                self._emit(ir.Append(result, ir.Name(pair), pos))
        self._emit(ir.For(i, self._range_len(ir.Name(keys)), tuple(body), pos))
        return ir.Name(result)

    def _dict_loop(self, method, d, target, pos):
        """``for k, v in d.items()`` (and keys/values): a loop over the keys, read by key."""
        keys = self.naming.temp("keys")
        self._emit(ir.Assign(keys, ir.Op(list, (d,), (), f"list({d.render()})", "nondiff"), pos))
        i = self.naming.temp("k")
        key_target = value_target = None
        if method == "items":
            if not isinstance(target, cst.Tuple) or len(target.elements) != 2:
                fence.refuse(
                    self.src,
                    target,
                    msg="d.items() needs two loop targets: key, value",
                    hint="for k, v in d.items():",
                )
            key_target, value_target = target.elements[0].value, target.elements[1].value
        elif method == "keys":
            key_target = target
        else:
            value_target = target

        def bind():
            key = self.naming.temp()
            self._emit(ir.Assign(key, _nth_key(keys, i), pos))
            if key_target is not None:
                self._assign_target(key_target, ir.Name(key), pos)
            if value_target is not None:
                self._bind_value(
                    value_target, self._getitem_op(d, ir.Index((ir.Name(key),), False)), pos
                )

        return self._range_len(ir.Name(keys)), i, [bind]

    def _dict_or_sequence_loop(self, it, target, s, pos, enter):
        """``for x in name``: a dict's keys when ``name`` holds a dict, its entries otherwise. The
        loop runs over a list of the keys (a dict) or over the sequence itself, read by index.
        ``enter``: as for ``_loop_iter``, called once ``name`` is read."""
        seq = self._iterated(self._atom(it), s, pos)
        keys = self.naming.temp("keys")
        self._emit(
            ir.Assign(
                keys,
                ir.Op(
                    None,
                    (seq,),
                    (),
                    f"list({seq.id}) if isinstance({seq.id}, dict) else None",
                    "nondiff",
                ),
                pos,
            )
        )
        enter()
        k = self.naming.temp("k")
        rng = ir.text(
            f"{self.captures.bind('range')}({self.captures.bind('len')}({{0}} if {{0}} is not None else {{1}}))",
            ir.Name(keys),
            seq,
        )

        def bind():
            key = self.naming.temp()
            self._emit(
                ir.If(
                    ir.text("{} is not None", ir.Name(keys)),
                    (ir.Assign(key, _nth_key(keys, k), pos),),
                    (ir.Assign(key, self._getitem_op(seq, ir.Index((ir.Name(k),), False)), pos),),
                    pos,
                )
            )
            self._assign_target(target, ir.Name(key), pos)

        return rng, k, [bind]

    def _dict_get(self, d, args, node):
        """``d.get(key, default)`` of a dict held in a variable (an argument, a dict
        comprehension's): its entry when it has the key, else the default (both evaluated
        first, as for any call); the choice is a branch, so the entry keeps its gradient."""
        key, default = args[0], args[1] if len(args) == 2 else ir.Const(None, "None")
        pos, got = self._pos(node), self.naming.temp()
        found = ir.Assign(got, self._getitem_op(d, ir.Index((key,), False)), pos)
        otherwise = ir.Assign(got, self._copy_op(default), pos)
        test = ir.text("{} in {}.keys()", key, d)  # (a list or an array has no keys: it raises)
        self._emit(ir.If(test, (found,), (otherwise,), pos))
        return ir.Name(got)

    def _local_dict(self, name, node, pos):
        """``d = {"a": x, "b": y}`` (and ``d = {}``): every key a string constant, so each entry is
        a local variable of its own; ``d["a"]`` reads it and ``d["a"] = v`` rebinds it."""
        if name in self.params or self.bind_counts.get(name, 0) != 1:
            fence.refuse(
                self.src,
                node,
                kind="Dict",
                msg=f"a local dict literal must be the only value the name "
                f"{name!r} is ever given (it is bound elsewhere too)",
                hint="give the local dict a name of its own, assigned once",
            )
        self.dicts.setdefault(name, {})
        for el in node.elements:
            if isinstance(el, cst.StarredDictElement):
                fence.refuse(
                    self.src,
                    el,
                    kind="Dict",
                    msg="**unpacking in a dict literal is not supported",
                    hint='write the entries out: {"a": x, "b": y}',
                )
            key = self._dict_key(el.key)
            value = self._atom(el.value)
            self._emit(ir.Assign(self._dict_slot(name, key), self._copy_op(value), pos))
            self._wrote_key(name, key)

    def _dict_key(self, node):
        """The string a key node writes (refused unless a string literal, or the key a loop over
        a local dict binds: ``namespaces``)."""
        key = self._const_key(node)
        if key is not None:
            return key
        fence.refuse(
            self.src,
            node,
            kind="Dict",
            msg='a local dict literal\'s keys must be string constants (d["name"]) known when the function is compiled',
            hint="write the key as a string literal, or keep the values in a list and index it",
        )

    def _dict_slot(self, name, key):
        """The local variable holding entry ``key`` of the local dict ``name``."""
        slots = self.dicts[name]
        if key not in slots:
            safe = "".join(c if c.isalnum() or c == "_" else "_" for c in key)
            slots[key] = self.naming.unique(f"{self._local(name)}_{safe}")
            self.locals.add(slots[key])
        return slots[key]

    def _dict_base(self, node):
        """The local dict a subscript indexes, or None."""
        base = node.value
        if isinstance(base, cst.Name) and base.value in self.dicts:
            return base.value
        return None

    def _dict_entry(self, node, read):
        """The variable of the entry a subscript of a local dict names (``read``: it must exist)."""
        name = self._dict_base(node)
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            fence.refuse(
                self.src,
                node,
                kind="Dict",
                msg="a local dict is indexed by one string key",
                hint='d["name"]',
            )
        key = self._dict_key(node.slice[0].slice.value)
        known = self.dict_keys.setdefault(name, set())
        if read and key not in known:
            fence.refuse(
                self.src,
                node,
                kind="Dict",
                msg=f"the local dict {name!r} has no entry {key!r} here",
                hint=f"assign {name}[{key!r}] = ... before reading it",
            )
        if not read:
            self._wrote_key(name, key)
        return self._dict_slot(name, key)

    def _dict_write(self, target, value, pos):
        self._emit(ir.Assign(self._dict_entry(target, read=False), self._copy_op(value), pos))

    def _refuse_dict_value(self, node):
        """Refuse a local dict literal used other than by key."""
        name = node.value
        fence.refuse(
            self.src,
            node,
            kind="Dict",
            msg=f'the local dict {name!r} can only be read and written by string key ({name}["key"]); '
            "it cannot be returned, passed to a function, looped over or used as a whole",
            hint="return or pass the entries themselves, or take a dict as a parameter instead",
        )
