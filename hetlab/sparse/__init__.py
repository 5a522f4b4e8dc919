"""Sparse matrices for hetlab's kernels: CSR (what the kernels run on), COO, BSR, ELL, SELL-C-σ.

>>> import numpy as np
>>> from hetlab import sparse
>>> A = sparse.coo([0, 1, 1], [1, 0, 1], [2.0, 3.0, 4.0], shape=(2, 2)).tocsr()
>>> A.indptr, A.indices, A.data
(array([0, 1, 3], dtype=int32), array([1, 0, 1], dtype=int32), array([2., 3., 4.]))
>>> round(A.bytes_per_nonzero, 2)
16.0

Policies (each documented where it applies):

* index dtype: int32 while ``max(nnz, n_rows, n_cols) < 2**31``, else int64
  (``index_dtype=`` overrides);
* canonical CSR: column indices strictly increasing within a row; a raw-array CSR that is not
  is refused, COO and scipy input are sorted;
* duplicates: added up (``duplicates="sum"``, default) or refused (``duplicates="refuse"``);
* values: float32/float64, finite (NaN/inf refused), integers converted to float64;
  wider floats narrowed only when every value fits;
* ownership: a container never shares a writable array with its caller: validated
  construction copies, NumPy arrays are exposed read-only (copy one to modify it), and
  ``to_scipy`` returns copies; indices are range-checked before any narrowing to int32.

scipy and CuPy are imported only when a conversion needs them. The code lives with the
sparse kernels, in :mod:`hetlab.kernels.sparse`; this module is its public face.
"""

from ..kernels.sparse.blocked import BSR, ELL, SELL
from ..kernels.sparse.convert import coo, csr
from ..kernels.sparse.csf import CSF
from ..kernels.sparse.einsum import einsum, explain
from ..kernels.sparse.formats import COO, CSR
from ..kernels.sparse.generate import make_matrix

__all__ = ["CSR", "COO", "BSR", "ELL", "SELL", "CSF", "csr", "coo", "make_matrix", "einsum",
           "explain"]
