"""Strings: f-strings and ``str`` methods as values (``name = f"layer{i}"``, ``key.upper()``,
``"_".join(parts)``), to name things and build keys (``params[f"W{i}"]``).

Expects: the walk of ``anf`` and its state. Guarantees: an f-string is one operation whose
operands are its expressions, lowered to atoms left to right as Python evaluates them, and whose
text is the f-string with the atoms in their place; a ``str`` method of a local or literal value
is one operation run as written. Both make a string, which carries no gradient: an operand that
depends on the differentiated input is refused by the gate (``gate.py``) where the string reaches
the result (``float(f"{x}")`` would drop its gradient), and allowed where it does not (a message).
"""

from __future__ import annotations

import libcst as cst

from .. import fence, ir
from .. import rules as R
from .syntax import code_of


def formatted(template, *values):
    """The primitive of an f-string or a ``%`` format (the generated code runs it as written)."""
    raise AssertionError("a string format runs as written")


def string_method(name, obj, *args, **kwargs):
    """The primitive of a ``str`` method call (the generated code runs the call itself)."""
    raise AssertionError("a string method runs as written")


# a string carries no gradient: an operand that depends on the differentiated input is refused
R.nondiff_params(formatted, {"template": "the text of a string format"})
R.nondiff_params(string_method, {"name": "the name of a str method"})

# the methods of str that no array has: ``x.partition`` (in place on an array) stays refused
STR_METHODS = frozenset(n for n in dir(str) if not n.startswith("_")) - {"partition"}


class Strings:
    """The string methods of the ``Normalizer``."""

    def _expr_FormattedString(self, node):
        atoms = []
        text = code_of(node.with_changes(parts=self._format_parts(node.parts, atoms)))
        template = ir.Const(text, repr(text))
        return ir.Op(formatted, (template, *atoms), (), text, "nondiff")

    def _format_parts(self, parts, atoms):
        """``parts`` with each expression replaced by the atom it is lowered to (in ``atoms``)."""
        out = []
        for part in parts:
            if isinstance(part, cst.FormattedStringExpression):
                if part.equal is not None:
                    fence.refuse(
                        self.src,
                        part,
                        msg='f"{x=}" is only allowed inside print(...)',
                        hint='write the name out: f"x={x}"',
                    )
                atom = self._atom(part.expression)
                atoms.append(atom)
                spec = part.format_spec
                if spec is not None:
                    spec = self._format_parts(spec, atoms)
                part = part.with_changes(
                    expression=cst.parse_expression(atom.render()), format_spec=spec
                )
            out.append(part)
        return out

    def _percent_format(self, template, values):
        """``"w%d" % i``, ``"%s_%s" % (a, b)``: a string, its operands as written (a tuple of
        values stays the tuple ``%`` reads, never an array)."""
        text = f"{template.render()} % {values.render()}"
        return ir.Op(formatted, (template, values), (), text, "nondiff")

    def _string_method(self, x, name, args, kwargs, text):
        """``s.upper()``, ``"_".join(names)``, ``key.startswith("W")``: run as written."""
        method = ir.Const(name, repr(name))
        return ir.Op(string_method, (method, x, *args), tuple(kwargs), text, "nondiff")
