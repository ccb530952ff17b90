"""Run-time pieces of adjoint rules too long to read well inline in generated code, one module
per module of ``transforms/rules/`` (a rule's text there, its helpers here under the same name),
and ``common`` for what several kinds share. Generated code reads them from ``sourcegrad.runtime``,
which re-exports every public name of these modules."""

from .common import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .products import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .fft import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
