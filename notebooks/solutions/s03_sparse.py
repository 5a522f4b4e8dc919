"""Solutions of notebook 03 (sparse)."""

import numpy as np


def csr_arrays(dense):
    """CSR's (indptr, indices, data) of a dense matrix, columns ascending in each row."""
    indptr, indices, data = [0], [], []
    for row in dense:
        cols = np.flatnonzero(row)
        indices.extend(cols)
        data.extend(row[cols])
        indptr.append(len(indices))
    return np.array(indptr), np.array(indices, dtype=np.int64), np.array(data, dtype=dense.dtype)


def my_spmv(A, x):
    """y = A @ x for a CSR matrix, one row at a time."""
    indptr, indices, data = A.indptr, A.indices, A.data
    y = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        lo, hi = indptr[i], indptr[i + 1]
        y[i] = np.dot(data[lo:hi].astype(np.float64), x[indices[lo:hi]])
    return y
