"""hetlab's offload evaluation suite: loop kernels nobody wrote for the tool, with answer keys.

Every kernel is a plain Python function of ``for`` loops over NumPy arrays, written the way a
scientist writes it (styles deliberately varied: ``range(n)`` / ``range(0, n)`` /
``range(1, n - 1)``, ``x[i] = x[i] + …`` / ``+=``, ``alpha`` inside or outside the product,
scalar temporaries, ``from math import sqrt`` / ``math.sqrt`` / ``np.sqrt``, sizes as
arguments or from ``A.shape``), paired with the numba version an expert would write (array
expressions, ``@``, ``prange``) as its answer key. Families: dense linear algebra and BLAS-like,
data mining, stencils, and dynamic programming that must stay serial. The kernels are this
project's own code, not taken from a public benchmark suite.

``benchmarks/offload.py --suite`` runs ``hetlab.offload.search`` on each and compares the plan
with serial njit and with the hand-written version; ``tests/test_offload_suite.py`` checks the
answer keys against the plain functions.

>>> from offload_suite import SUITE        # with benchmarks/ on sys.path
>>> k = SUITE["gemm_beta_first"]
>>> args = k.make_args(k.tiny, 0)
>>> k.fn(*args)                             # the plain loops, in Python, in place on C

Importing the suite imports numba (the answer keys are ``numba.njit`` functions, compiled on
first call).
"""

from __future__ import annotations

from . import blas, dynprog, linalg, matvec, mining, stencils
from ._spec import SuiteKernel

__all__ = ["SUITE", "SuiteKernel", "FAMILIES"]

#: every kernel of the suite by name, in family order
SUITE: dict[str, SuiteKernel] = {
    k.name: k for mod in (linalg, matvec, blas, mining, stencils, dynprog) for k in mod.KERNELS
}

#: kernel families, in the order the suite lists them
FAMILIES = ("linalg", "blas", "datamining", "stencil", "dynprog")
