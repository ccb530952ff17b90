"""A local dict literal used as a whole, where what it holds is known when the function is
compiled: ``k in d``, ``len(d)``, ``d.get(k, default)``, ``d.setdefault(k, v)``, ``d.pop(k)``,
``d.update({...})``, ``sorted(d)``, ``d.keys()``/``.values()``/``.items()``, and loops and
comprehensions over it.

Expects: the walk of ``anf`` and the local dicts of ``dicts`` (``dicts``: each dict's entries by
key, ``dict_keys``: the keys written so far on some path). Guarantees: ``dict_sure`` holds, per
dict, the keys it holds on every path, in the order Python's dict keeps them (a key written in a
branch, a loop or a comprehension is not sure; ``pop`` there is refused); each use above is
decided now from them, a key being a string constant (or the key a loop over the dict binds):
``in`` and ``len`` become constants, ``get`` the entry or the default, a loop one copy of its body
per key (its target never rebound, and no ``break``/``continue`` in it). Where the keys a use
reads are not all sure (one was written in a branch), the use is refused at its line.
"""

from __future__ import annotations

import builtins

import libcst as cst

from .. import fence, ir
from .syntax import assigned_in, find_node, literal_value, target_names, tup


class Namespaces:
    """The methods of the ``Normalizer`` for a local dict used as a whole."""

    # ---- what it holds ----------------------------------------------------------------------------

    def _top_level(self):
        """Is the walk at the top level of the function's body (not in a branch or a loop)?"""
        return self._depth == 1

    def _wrote_key(self, name, key):
        """Record that entry ``key`` of local dict ``name`` was written here."""
        self.dict_keys.setdefault(name, set()).add(key)
        if self._top_level():
            self.dict_sure.setdefault(name, {})[key] = None

    def _holds(self, name, key, node):
        """Does local dict ``name`` hold ``key`` here (True/False), decided now, or refused."""
        if key in self.dict_sure.get(name, {}):
            return True
        if key not in self.dict_keys.get(name, set()):
            return False
        fence.refuse(
            self.src,
            node,
            kind="Dict",
            msg=f"whether the local dict {name!r} holds {key!r} here is known only when it runs "
            "(the entry is written in a branch or a loop)",
            hint=f"write {name}[{key!r}] before the branch (a default value), then overwrite it",
        )

    def _sure_keys(self, name, node):
        """The keys of local dict ``name``, in order, when every key written is sure; else refused."""
        sure = list(self.dict_sure.get(name, {}))
        maybe = self.dict_keys.get(name, set()) - set(sure)
        if maybe:
            self._holds(name, min(maybe), node)
        return sure

    def _const_key(self, node):
        """The string a key expression is when known now (a literal, or the key a loop over a dict
        binds), else None."""
        if isinstance(node, cst.SimpleString):
            value = literal_value(node.value)
            return value if isinstance(value, str) else None
        if isinstance(node, cst.Name) and node.value in self.subst:
            a = self.subst[node.value]
            if isinstance(a, ir.Const) and isinstance(a.value, str):
                return a.value
        return None

    def _namespace_of(self, node):
        """The local dict literal ``node`` names, or None."""
        if isinstance(node, cst.Name) and node.value in self.dicts:
            return node.value
        return None

    # ---- uses as values ---------------------------------------------------------------------------

    def _namespace_in(self, node, c):
        """``"k" in d`` / ``"k" not in d`` of a local dict: a constant."""
        name = self._namespace_of(c.comparator)
        key = self._const_key(node.left)
        if key is None:
            fence.refuse(
                self.src,
                node.left,
                kind="Dict",
                msg=f"a key tested in the local dict {name!r} must be a string constant",
                hint='"name" in d',
            )
        held = self._holds(name, key, node)
        value = held if isinstance(c.operator, cst.In) else not held
        return ir.Const(value, repr(value))

    def _namespace_call(self, node):
        """``len(d)``, ``sorted(d)``, ``list(d)``, ``d.get``, ``d.setdefault``, ``d.pop``,
        ``d.keys()``, ``d.values()``, ``d.items()`` of a local dict; None for any other call."""
        func, args = node.func, node.args
        if type(func) is cst.Name and len(args) == 1 and self._namespace_of(args[0].value):
            fn = self._static_callee(func) if func.value not in self.locals else None
            name = args[0].value.value
            if fn is builtins.len:
                n = len(self._sure_keys(name, node))
                return ir.Const(n, str(n))
            if fn in (builtins.sorted, builtins.list, builtins.tuple):
                keys = self._sure_keys(name, node)
                keys = sorted(keys) if fn is builtins.sorted else keys
                return self._key_list(keys, fn is not builtins.tuple)
            return None
        if not (isinstance(func, cst.Attribute) and self._namespace_of(func.value)):
            return None
        name, method = func.value.value, func.attr.value
        handler = getattr(self, f"_namespace_{method}", None)
        if handler is None:
            fence.refuse(
                self.src,
                node,
                kind="Dict",
                msg=f"the method .{method}() of the local dict {name!r} is not supported",
                hint="get, setdefault, pop, update, keys, values and items are",
            )
        if any(a.star or a.keyword is not None for a in args) and method != "update":
            fence.refuse(
                self.src, node, kind="Dict", msg=f".{method}() takes its arguments by position"
            )
        return handler(name, node, [a.value for a in args])

    def _key_list(self, keys, is_list=True):
        return literal_from([ir.Const(k, repr(k)) for k in keys], is_list)

    def _namespace_key(self, name, node, key_node):
        key = self._const_key(key_node)
        if key is None:
            fence.refuse(
                self.src,
                key_node,
                kind="Dict",
                msg=f"a key of the local dict {name!r} must be a string constant known when the "
                "function is compiled",
                hint='d.get("name", default)',
            )
        return key

    def _namespace_get(self, name, node, args):
        if not 1 <= len(args) <= 2:
            fence.refuse(self.src, node, kind="Dict", msg=".get() takes a key and a default")
        key = self._namespace_key(name, node, args[0])
        default = self._atom(args[1]) if len(args) == 2 else ir.Const(None, "None")
        if self._holds(name, key, node):
            return ir.Name(self._dict_slot(name, key))
        return default

    def _namespace_setdefault(self, name, node, args):
        if not 1 <= len(args) <= 2:
            fence.refuse(self.src, node, kind="Dict", msg=".setdefault() takes a key and a value")
        key = self._namespace_key(name, node, args[0])
        value = self._atom(args[1]) if len(args) == 2 else ir.Const(None, "None")
        if not self._holds(name, key, node):
            slot = self._dict_slot(name, key)
            self._emit(ir.Assign(slot, self._copy_op(value), self._pos(node)))
            self._wrote_key(name, key)
        return ir.Name(self._dict_slot(name, key))

    def _namespace_pop(self, name, node, args):
        if not 1 <= len(args) <= 2:
            fence.refuse(self.src, node, kind="Dict", msg=".pop() takes a key and a default")
        key = self._namespace_key(name, node, args[0])
        default = self._atom(args[1]) if len(args) == 2 else None
        if not self._top_level():
            fence.refuse(
                self.src,
                node,
                kind="Dict",
                msg=f".pop() of the local dict {name!r} is supported outside branches and loops",
                hint="pop the entry where the function's body runs it in every call",
            )
        if not self._holds(name, key, node):
            if default is None:
                fence.refuse(
                    self.src, node, kind="Dict", msg=f"the local dict {name!r} has no entry {key!r}"
                )
            return default
        value = ir.Name(self._dict_slot(name, key))
        self.dict_keys[name].discard(key)
        self.dict_sure[name].pop(key)
        self.dicts[name].pop(key)  # written again, it is a new variable
        return value

    def _namespace_update(self, name, node, args):
        call = node.args
        if len(call) == 1 and call[0].keyword is None and not call[0].star:
            other = call[0].value
            if isinstance(other, cst.Dict):
                for el in other.elements:
                    if isinstance(el, cst.StarredDictElement):
                        fence.refuse(self.src, el, kind="Dict")
                    key = self._namespace_key(name, node, el.key)
                    self._namespace_write(name, key, self._atom(el.value), node)
                return ir.Const(None, "None")
            source = self._namespace_of(other)
            if source is not None:
                for key in self._sure_keys(source, node):
                    self._namespace_write(name, key, ir.Name(self._dict_slot(source, key)), node)
                return ir.Const(None, "None")
        if call and all(a.keyword is not None and not a.star for a in call):
            for a in call:  # d.update(a=x, b=y)
                self._namespace_write(name, a.keyword.value, self._atom(a.value), node)
            return ir.Const(None, "None")
        fence.refuse(
            self.src,
            node,
            kind="Dict",
            msg=f".update() of the local dict {name!r} takes a dict literal with string keys, "
            "another local dict, or keywords",
            hint=f'{name}.update({{"a": x}})',
        )

    def _namespace_write(self, name, key, value, node):
        self._emit(ir.Assign(self._dict_slot(name, key), self._copy_op(value), self._pos(node)))
        self._wrote_key(name, key)

    def _namespace_keys(self, name, node, args):
        return self._key_list(self._sure_keys(name, node))

    def _namespace_values(self, name, node, args):
        return tup([ir.Name(self._dict_slot(name, k)) for k in self._sure_keys(name, node)], True)

    def _namespace_items(self, name, node, args):
        pos = self._pos(node)
        pairs = []
        for k in self._sure_keys(name, node):
            pair = tup([ir.Const(k, repr(k)), ir.Name(self._dict_slot(name, k))], False)
            pairs.append(self._named(pair, pos))
        return tup(pairs, True)

    # ---- loops over it ----------------------------------------------------------------------------

    def _namespace_iteration(self, it):
        """(dict name, what a trip binds: "keys", "values" or "items", sorted?) of a loop over a
        local dict (``d``, ``sorted(d)``, ``d.keys()``, ``d.values()``, ``d.items()``), else None."""
        if self._namespace_of(it):
            return it.value, "keys", False
        if not isinstance(it, cst.Call):
            return None
        func = it.func
        if type(func) is cst.Name and len(it.args) == 1 and self._namespace_of(it.args[0].value):
            if func.value not in self.locals and self._static_callee(func) in (
                builtins.sorted,
                builtins.list,
            ):
                return it.args[0].value.value, "keys", self._static_callee(func) is builtins.sorted
            return None
        if (
            isinstance(func, cst.Attribute)
            and self._namespace_of(func.value)
            and func.attr.value in ("keys", "values", "items")
            and not it.args
        ):
            return func.value.value, func.attr.value, False
        return None

    def _unrolled_namespace_loop(self, s, found, pos, body_of):
        """A loop over a local dict: its body once per key, in order, the key known now.
        ``body_of()`` lowers one trip's body (a loop's statements, a comprehension's rest)."""
        name, what, by_sorting = found
        keys = self._sure_keys(name, s.iter)
        if by_sorting:
            keys = sorted(keys)
        if isinstance(s, cst.For):
            exit_ = find_node(s.body, (cst.Break, cst.Continue))
            if exit_ is not None:
                fence.refuse(
                    self.src,
                    exit_,
                    kind="Dict",
                    msg="a loop over a local dict is run once per key when the function is "
                    "compiled: it cannot break or continue",
                    hint="test the key with an if around the rest of the body instead",
                )
        target = s.target
        key_target = value_target = None
        if what == "items":
            if not isinstance(target, cst.Tuple) or len(target.elements) != 2:
                fence.refuse(self.src, target, msg="d.items() needs two loop targets: key, value")
            key_target, value_target = target.elements[0].value, target.elements[1].value
        elif what == "keys":
            key_target = target
        else:
            value_target = target
        if key_target is not None:
            if not isinstance(key_target, cst.Name):
                fence.refuse(self.src, key_target, msg="the key of a loop over a dict is a name")
            if key_target.value in set(assigned_in(s.body)) | {
                n for t in (value_target,) if t is not None for n in target_names(t)
            }:
                fence.refuse(
                    self.src,
                    key_target,
                    msg=f"the loop's key {key_target.value!r} is rebound in the loop",
                    hint="give the new value a name of its own",
                )
        for key in keys:
            held = set(self.dict_keys.get(name, ()))
            if key_target is not None:
                self._emit(
                    ir.Assign(
                        self._local(key_target.value), self._copy_op(ir.Const(key, repr(key))), pos
                    )
                )
            if value_target is not None:
                self._assign_target(value_target, ir.Name(self._dict_slot(name, key)), pos)
            saved = self.subst.get(key_target.value) if key_target is not None else None
            if key_target is not None:
                self.subst[key_target.value] = ir.Const(key, repr(key))
            try:
                body_of()
            finally:
                if key_target is not None:
                    if saved is None:
                        self.subst.pop(key_target.value, None)
                    else:
                        self.subst[key_target.value] = saved
            if set(self.dict_keys.get(name, ())) != held:
                fence.refuse(
                    self.src,
                    s.iter,
                    kind="Dict",
                    msg=f"this loop adds or removes keys of the local dict {name!r} while it "
                    "iterates over it (Python raises RuntimeError)",
                    hint=f"loop over list({name}) instead, or write the new keys after the loop",
                )


def literal_from(items, is_list):
    """A literal of constants, as one ``Const`` (``syntax.literal_const``)."""
    from .syntax import literal_const

    return literal_const(tup(items, is_list))
