"""Attribute reads: ``x.shape`` of an array, ``p.w`` of an object, ``eigh(a).eigenvectors``.

Expects: the walk of ``anf``, name resolution (``resolve``) and its state. Guarantees: an
attribute of a module-level or closure value is a constant; an array attribute with a rule is an
``Op`` keyed by it (``x.T``), one without is ``ATTRIBUTE_READ`` (no gradient); a named field of a
numpy namedtuple result is the entry at its index; any other attribute of a local value is the
primitive ``structures.field``, differentiated as a dict's entry is. Array attributes no rule
reads (``.flat``, ``.strides``) are refused.
"""

from __future__ import annotations

import libcst as cst
import numpy as np

from sourcegrad.runtime import structures as _structures

from .. import fence, ir
from .. import rules as R
from ..ir import ATTRIBUTE_READ
from .objects import MISSING, is_data, static_attribute
from .syntax import code_of

# An attribute read ``p.w`` of a local value (a dataclass, namedtuple or registered object) is the
# primitive ``structures.field``: its adjoint gives ``p`` a ``FieldAdjoint`` (a namedtuple: the
# ``SeqAdjoint`` of that entry), which ``structures.finalize`` turns into ``p``'s structure.
R.internal_rule(
    _structures.field,
    ["y", "obj", "name"],
    "d[obj] += field_adjoint(d[y], obj, name)",
    {"field_adjoint": _structures.field_adjoint},
    {"name": "an attribute name"},
    "attribute read",
)

# ndarray attributes no rule reads: refused where written, rather than read as an object's field
_ARRAY_ONLY_ATTRIBUTES = frozenset(
    {"base", "ctypes", "flags", "flat", "imag", "itemsize", "nbytes", "strides"}
)

# Library functions whose result is a namedtuple: field name -> the index ``result.field`` reads.
# A keyword that changes what the call returns (``svd(compute_uv=False)``, ``qr(mode="r")``) is
# refused with a field read; these keywords keep the namedtuple.
_RESULT_FIELDS = {
    np.linalg.eigh: (("eigenvalues", "eigenvectors"), ("UPLO",)),
    np.linalg.eig: (("eigenvalues", "eigenvectors"), ()),
    np.linalg.slogdet: (("sign", "logabsdet"), ()),
    np.linalg.svd: (("U", "S", "Vh"), ("full_matrices", "hermitian")),
    np.linalg.qr: (("Q", "R"), ()),
}


def _result_fields(callee):
    """(field names, keywords that keep the namedtuple) of a library function's result, or None."""
    try:
        return _RESULT_FIELDS.get(callee)
    except TypeError:  # an unhashable callable
        return None


class Attributes:
    """The attribute methods of the ``Normalizer``."""

    def _expr_Attribute(self, node):
        base = node.value
        if self._is_local_expr(base):
            attr = node.attr.value
            if not (isinstance(base, cst.Call) and not self._is_local_expr(base.func)):
                x = self._atom(base)
                k = self._known(x)
                if k is not None and (k.value is MISSING or not is_data(k.value)):
                    # an object's attribute (its class known now: a property, a field, a
                    # callable it holds), whatever its name
                    return self._field_read(node, self._named_atom(x, node), attr)
                return self._attribute_of(node, base, x, attr)
            if (
                attr not in R.ATTRIBUTES
                and isinstance(base, cst.Call)
                and not self._is_local_expr(base.func)
                and _result_fields(self._static_callee(base.func)) is not None
            ):
                return self._result_field(node, base, attr)  # np.linalg.eigh(a).eigenvectors
            return self._attribute_of(node, base, self._atom(base), attr)
        return self._static_const(node)

    def _attribute_of(self, node, base, x, attr):
        """``x.attr`` of the local value ``x`` (``base`` lowered): an array attribute, a field."""
        if (
            attr not in R.ATTRIBUTES
            and isinstance(base, cst.Call)
            and self._static_callee(base.func) in R.CONSTANT_OBJECTS
        ):
            # np.finfo(x.dtype).eps
            return ir.Op(ATTRIBUTE_READ, (x,), (), f"{x.render()}.{attr}", "nondiff")
        if attr not in R.ATTRIBUTES and isinstance(base, cst.Call):
            fence.refuse(
                self.src,
                node,
                msg=f"{code_of(node)}: an attribute of a call's result is read only for "
                "the named fields of numpy's namedtuple results (np.linalg.eigh(a).eigenvectors, "
                f"svd(a).S, qr(a).R, slogdet(a).logabsdet) and the array attributes "
                f"{', '.join(sorted(R.ATTRIBUTES))}",
                hint="assign the result to a variable first, or index it: result[0]",
            )
        if attr in _ARRAY_ONLY_ATTRIBUTES and attr not in R.ATTRIBUTES:  # .imag has a rule now
            fence.refuse(
                self.src,
                node,
                msg=f"{code_of(node)}: sourcegrad reads only the array attributes "
                f"{', '.join(sorted(R.ATTRIBUTES))}; .{attr} is not differentiated through (an object's "
                f"field named {attr!r} neither: it would be read as the array attribute)",
                hint="compute what you need from the array's values, or rename the field",
            )
        if attr not in R.ATTRIBUTES:
            return self._field_read(node, x, attr)
        key = R.ATTRIBUTES[attr]
        if key is None:
            return ir.Op(ATTRIBUTE_READ, (x,), (), f"{x.render()}.{attr}", "nondiff")
        return ir.Op(key, (x,), (), f"{x.render()}.{attr}", "call")

    def _field_read(self, node, x, attr):
        """``p.w`` of a local value: an attribute of a dataclass, namedtuple or registered object
        (``runtime/structures.py``), differentiated as a dict's entry is; a gradient reaching an
        attribute that is no differentiable field is refused when the backward runs."""
        if not isinstance(x, ir.Name):
            fence.refuse(
                self.src,
                node,
                msg=f"{code_of(node)}: an attribute of a literal is not supported",
                hint="read attributes of arguments (dataclasses, namedtuples, registered objects)",
            )
        k = self._known(x)
        if k is not None and (k.value is MISSING or not is_data(k.value)):
            found = static_attribute(k.value, attr, k.cls)
            if found is not None and found[0] == "property":
                got = self._property_read(node, x, k, found[1])  # inlined, as a method is
                if got is not None:
                    return got
            shadow = self._read_location(node, x, attr)  # written by the function: its value
            if shadow is not None:
                return ir.Name(shadow)
        elif k is None:
            self._read_location(node, x, attr)  # (refused where it may be a written object)
        return ir.Op(
            _structures.field,
            (x, ir.Const(attr, repr(attr))),
            (),
            f"{x.render()}.{attr}",
            self._read_kind(self._attribute_known(k, attr), _structures.field),
        )

    def _result_field(self, node, call, attr):
        """``np.linalg.eigh(a).eigenvectors``: a named field of a library function's namedtuple
        result is the entry at its index (``np.linalg.eigh(a)[1]``)."""
        fields, keywords = _result_fields(self._static_callee(call.func))
        other = [a for a in call.args[1:] if a.keyword is None or a.keyword.value not in keywords]
        if (
            attr not in fields
            or other
            or not call.args
            or call.args[0].keyword is not None
            or any(a.star for a in call.args)
        ):
            what = (
                f"has no field {attr!r} (its fields: {', '.join(fields)})"
                if attr not in fields
                else f"is read by field name only when called with the array and {', '.join(keywords) or 'nothing else'}, "
                "which keep it a namedtuple"
            )
            fence.refuse(
                self.src,
                node,
                msg=f"{code_of(node)}: the result of {code_of(call.func)}(...) {what}",
                hint="assign the result to a variable and index it: result[0]",
            )
        result = self._atom(call)
        index = ir.Index((ir.Const(fields.index(attr), str(fields.index(attr))),), False)
        return self._getitem_op(result, index)
