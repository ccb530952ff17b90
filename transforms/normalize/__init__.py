"""Lower a libcst function to the IR: one operation per statement (A-normal form).

Expects: a parsed ``Source``. Guarantees (of ``Normalizer.lower``): every operand of every ``Op``
is an atom (a ``Name`` or a ``Const``, or an ``Index``/``Tup`` of atoms); every call is resolved
to the object whose rule applies (or refused with ``MissingAdjointError``); augmented assignment
is plain assignment; tuple unpacking is indexing; ``for`` over a sequence is ``for`` over
``range`` with indexing; the user's own functions are inlined; conditions and loop bounds, which
are never differentiated, are kept as source text. ``Break``, ``Continue`` and ``Return`` may be
anywhere: ``exits.py``, the next stage, lowers them. Anything not handled here is refused
through ``fence.refuse`` (deny by default).

Resolving names, desugaring, inlining and A-normal form happen in one walk over the tree (a name
means what it means where the walk is: inside an inlined helper, a comprehension or a loop the
walk unrolls). The ``Normalizer`` is made of one class per concern, each in its own module:

- ``resolve``: what a name means (a local, or the module-level object it holds now);
- ``anf``: the walk, and expressions lowered to atoms and temporaries;
- ``statements``, ``assign``: statements and assignments;
- ``loops``, ``dicts``: loops, comprehensions and dicts, desugared to loops over a range;
- ``namespaces``: a local dict used as a whole, decided from the keys it holds;
- ``contexts``: ``with`` blocks;
- ``attempts``: ``try`` statements, the path Python takes chosen as a branch;
- ``matches``: ``match`` statements, lowered to ``if``/``elif`` chains;
- ``calls``, ``attributes``: calls and attribute reads, resolved to what differentiates them;
- ``strings``: f-strings and ``str`` methods, values with no gradient;
- ``inline``: the user's own functions, lowered where they are called;
- ``inline``: the user's own functions, lowered where they are called (a recursion of a depth
  known when compiling, unrolled);
- ``functional``: functions as values (``functools.partial``, ``functools.reduce``, ``map``);
- ``generators``: a generator of the user's consumed by a ``for`` loop, inlined as that loop;
- ``static``: conditions known when compiling (only the branch taken is lowered), and integer
  arithmetic on constants;
- ``syntax``: what the others read off libcst nodes.

A refusal about code inside a branch is met again by a compile that lowers the branch as that
refusal, raised when it runs (``Branches``, ``deferral.py``).

``aux`` is the ``Normalizer`` of a function differentiated with ``has_aux=True``.
"""

from __future__ import annotations

import libcst as cst

from sourcegrad.runtime import structures as _structures

from .. import fence, ir
from .. import rules as R
from ..captures import KEY as _CAPTURES, Captures
from ..deferral import Branches
from ..exits import lower_function
from ..naming import Naming
from .anf import ANF
from .assign import Assignments
from .attempts import Attempts
from .attributes import Attributes
from .calls import Calls
from .contexts import Contexts
from .dicts import Dicts
from .functional import Functional
from .generators import Generators
from .inline import Inlining
from .loops import Loops
from .matches import Matches
from .namespaces import Namespaces
from .objects import Objects, ObjectState
from .resolve import Locals, Resolve, method_class
from .statements import Statements
from .strings import Strings
from .static import Static

__all__ = ["Normalizer"]

# What a compile's signature records of a None argument (``sourcegrad.compiled.signature_of``).
NONE_ARGUMENT = "None"


class Normalizer(
    Objects,
    Inlining,
    Generators,
    Functional,
    Calls,
    Attributes,
    Strings,
    Namespaces,
    Dicts,
    Loops,
    Matches,
    Attempts,
    Contexts,
    Assignments,
    Statements,
    Static,
    ANF,
    Resolve,
):
    """The lowering of one function (``parent``: the normalizer of the function it is inlined
    into, whose naming, captures and namespace it shares).

    Its state, read and written by the modules of this package: ``params``, ``locals`` (every
    name the function binds), ``assigned``, ``bind_counts``; ``rename`` (a local's name in the
    generated code) and ``subst`` (an inlined parameter read as the caller's atom); ``static_locals``
    (locals bound once to a module-level callable); ``local_defs`` and ``defs_inlining`` (the defs
    and lambdas written in the function); ``dicts`` and ``dict_keys`` (local dict literals);
    ``block`` (where statements are emitted), ``no_grad``, ``_loop_depth`` and ``_cur_pos``;
    ``objects`` (shared: what values hold, and the attributes the function writes, ``objects``);
    ``_unreachable`` (the rest of the block follows a ``return`` an ``if`` decided now took)."""

    def __init__(self, src, parent=None, options=None):
        self.src = src
        self.fn = src.fn
        _check_signature(src, parent is None)
        params = src.tree.params
        # keyword-only parameters last: the compiled code takes them by position (api.parameters_of)
        self.params = [
            p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        ]
        # an inlined helper's *args and **kwargs (``inline.py`` binds them: a tuple, a dict)
        self.star_params = tuple(
            p.name.value if isinstance(p, cst.Param) else None
            for p in (params.star_arg, params.star_kwarg)
        )
        finder = Locals(src.ast_fn)
        self.locals = set(self.params) | finder.names | (set(self.star_params) - {None})
        self.assigned = finder.names
        self.bind_counts = finder.counts
        self.local_defs = {}  # name -> (libcst def, ast def, node) of a def or lambda written in the function
        self.defs_inlining = ()  # the local functions being inlined (a recursive one: again)
        # local names bound once to a module or a function: (it, the node it was read from)
        self.static_locals = {}
        self.partials = {}  # local name -> the partial application it holds (functional.py)
        self.anonymous = {}  # id of a lambda passed as a function -> its local def's name
        self.nonlocals = set()  # a local def's names declared nonlocal: its caller's variables
        self.subst = {}  # parameter -> the caller's atom, for inlined parameters never rebound
        self.dicts = {}  # local dict literal (its keys all string constants) -> {key: local name}
        self.dict_keys = {}  # local dict -> the keys written so far (reading another is refused)
        self.dict_sure = {}  # local dict -> the keys it holds on every path, in order (namespaces)
        self.made_dicts = set()  # locals bound to a dict comprehension's dict (never written into)
        # local -> (distribution, its text, args, kwargs) of ``d = norm(loc, scale)``: d.logpdf(x)
        self.frozen = {}
        self.block = []
        self._loop_depth = 0
        self._depth = 0  # how many blocks the walk is in (1: the function's body; anf._collecting)
        self._open_contexts = []  # the managers of the with blocks the walk is in (statements)
        self._loop_contexts = 0  # how many of them are outside the innermost loop
        self._break_flag = None  # the flag ``break`` sets in a loop with an ``else`` (statements)
        self._unreachable = False  # after a branch known now to exit (static.py)
        self._yield_sink = None  # a generator's: lowers ``yield v`` (generators.py)
        self._cur_pos = None
        self.no_grad = False
        self.parent = parent
        # a method's class, when this function is one (found by its qualified name) and never
        # rebinds its first parameter: ``self.helper(z)`` is then inlined (``_self_method_call``)
        self.self_class = (
            method_class(self.fn)
            if parent is None and self.params and self.params[0] not in finder.names
            else None
        )
        self.options = parent.options if parent is not None else dict(options or {})
        if parent is None:
            self._root(finder)
        else:
            self._inlined_into(parent, finder)
        self.captures.record_function(self.fn)

    def _root(self, finder):
        """The state of the compiled function's own normalizer."""
        self.branches = self.options.get("branches") or Branches()  # (deferral.py)
        self.naming = Naming(finder.all_names | set(self.params))
        self.naming.root_locals = self.locals
        self.lengths = {}  # a name bound to a tuple or list literal -> its number of entries
        self.deleted = set()  # the names (as the generated code spells them) after ``del name``
        self.extra_ns = {}  # names the generated code needs beyond the user's globals
        self.inlining = [self.fn]
        # (the gradient's ``finalize`` also rebuilds dataclasses, namedtuples and registered objects)
        reserved = {**R.NAMESPACE, "finalize": _structures.finalize}
        self.captures = self.extra_ns[_CAPTURES] = Captures(
            self.fn, self.locals, self.naming, reserved
        )
        self.rename = {}  # the user's own names stay: sourcegrad's names make room (Captures.bind)
        self.objects = ObjectState(self.options.get("examples"), self.options.get("written"))
        self.src.shadows = self.naming.shadows  # (ir.shadows_of: the later passes ask)
        self._fixed_parameters(self.options.get("signature"))
        self._root_knowledge()

    def _fixed_parameters(self, signature):
        """A parameter the code is specialized to a bool or None for (``signature_of``), never
        rebound, is that constant: ``if verbose:`` and ``if ax is None:`` are decided now
        (``static.py``), and the path the call cannot take is not compiled."""
        for p, k in zip(self.params, signature or ()):
            if p in self.assigned:
                continue
            if k is True or k is False:
                self.subst[p] = ir.Const(k, repr(k))
            elif k == NONE_ARGUMENT:
                self.subst[p] = ir.Const(None, "None")

    def _inlined_into(self, parent, finder):
        """The state of a helper's normalizer: its parent's naming, namespace and captures."""
        self.naming = parent.naming
        self.lengths = parent.lengths
        self.deleted = parent.deleted  # (a local def reads the enclosing function's names)
        self.branches = parent.branches
        self.extra_ns = parent.extra_ns
        self.captures = parent.captures
        self.objects = parent.objects
        self.inlining = parent.inlining + [self.fn]
        self.rename = self._inline_names(finder.all_names)

    def _child(self, src):
        """The normalizer of a function inlined into this one."""
        return Normalizer(src, parent=self)

    def lower(self, implicit_none=False):
        """The function body in A-normal form (its exits not yet lowered: ``exits.py``). The root
        function's starts with the reads of the attributes it writes (``_prologue``); a helper
        inlined (a local def, a method, a module-level function) with no ``return`` at its end
        returns None there, as Python's does, and so does the root where a way through it ends
        without one (a gradient then refuses the None it returns). (``implicit_none``: the
        caller's word that the body may end so; every inlined helper may.)"""
        prologue = []
        if self.parent is None:
            with self._collecting() as prologue:
                self._prologue()
        body = self._block(self.src.tree.body)
        if self.parent is None:
            self._distinct_guards()
            if not any(isinstance(s, ir.Return) for s in ir.walk(body)):
                fence.refuse(
                    self.src,
                    self.src.tree,
                    msg="the function must end with a return statement",
                    hint="return the value to differentiate",
                )
        if _falls_through(body):  # (a branch without a return: None, as Python returns)
            pos = self.src.stmt_pos(self.src.tree) or self._cur_pos
            body.append(ir.Return(ir.Const(None, "None"), pos))
        return prologue + body

    def function(self, body):
        """The ``ir.Function`` of this function with ``body``."""
        name = self.fn.__name__ if self.fn.__name__ != "<lambda>" else "lambda"
        return ir.Function(name, self.params, tuple(body), self.src.filename, self.fn.__qualname__)

    def run(self):
        """``lower``, ``exits.lower_function`` and ``views.rewrite``, the first stages of the
        compile (``transforms._front``), for the analyses that need only the IR."""
        from .. import views

        body = lower_function(self.lower(), self.naming)
        return self.function(views.rewrite(body, self.params, self.naming))


def _falls_through(stmts):
    """May the end of ``stmts`` be reached (no return, or a branch without one)?"""
    if not stmts:
        return True
    last = stmts[-1]
    if isinstance(last, ir.Return):
        return False
    if isinstance(last, ir.If):
        return _falls_through(last.body) or _falls_through(last.orelse)
    if isinstance(last, ir.Effect) and str(last.text).startswith("raise "):
        return False
    return True


def _check_signature(src, root):
    """Refuse ``async def``, and, in the function compiled (``root``: its parameters are the
    gradient's), ``*args``, ``**kwargs`` and positional-only parameters."""
    tree = src.tree
    params = tree.params
    if root and (
        isinstance(params.star_arg, cst.Param)
        or params.star_kwarg is not None
        or params.posonly_params
    ):
        node = (
            params.star_arg
            if isinstance(params.star_arg, cst.Param)
            else (params.star_kwarg or tree)
        )
        fence.refuse(
            src,
            node,
            msg="*args, **kwargs and positional-only parameters are not supported",
            hint="list the parameters one by one",
        )
    if tree.asynchronous is not None:
        fence.refuse(src, tree, kind="AsyncFunctionDef")
