"""A panel row's elementwise statements as one loop in the numba form
(:mod:`hetlab.offload.analysis.rowfuse`): when it applies, that results equal the loops (and
the untouched triangle stays bit-identical), and what keeps the slice form."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.analysis.rowfuse import fused_row
from hetlab.offload.analysis.tensor import Ref, Stmt, Term

from ._offload_triangular_cases import strict_lower_product


def syr2k_scaled_first(alpha, beta, C, A, B):
    n = C.shape[0]
    for i in range(n):
        for j in range(i + 1):
            C[i, j] = C[i, j] * beta
        for k in range(A.shape[1]):
            for j in range(i + 1):
                C[i, j] += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]


def syrk_scaled_first(alpha, beta, C, A):
    for i in range(C.shape[0]):
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(A.shape[1]):
            for j in range(i + 1):
                C[i, j] += alpha * A[i, k] * A[j, k]


def syrk_divided(alpha, d, C, A):
    for i in range(C.shape[0]):
        for j in range(i + 1):
            C[i, j] /= d
        for k in range(A.shape[1]):
            for j in range(i + 1):
                C[i, j] += alpha * A[i, k] * A[j, k]


def _args(fn, n, m, seed=0):
    g = np.random.default_rng(seed)
    C = g.random((n, n))
    A, B = g.random((n, m)), g.random((n, m))
    if fn is syr2k_scaled_first:
        return 1.5, 1.2, C, A, B
    if fn is syrk_scaled_first:
        return 1.5, 1.2, C, A
    if fn is syrk_divided:
        return 1.5, 3.0, C, A
    return C, A, B.T.copy()


def _block_variant(fn, target="numba", **kw):
    rep = offload.analyze(fn)
    assert rep.blocks, fn.__name__
    return offload.transform(rep, blocks=[b.id for b in rep.blocks], target=target, **kw)


@pytest.mark.parametrize("fn", [syr2k_scaled_first, syrk_scaled_first, syrk_divided])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 70])
def test_fused_row_equals_the_loops(fn, n):
    v = _block_variant(fn)
    body = v.source.split("def ")[1]
    assert "for j in range(0, i + 1):" in body and ":i + 1] =" not in body, v.source
    args = _args(fn, n, 5)
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    fn(*want)
    v.compile()(*got)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12, atol=1e-12)
    upper = np.triu_indices(n, 1)
    assert np.array_equal(got[2][upper], args[2][upper])  # untouched, bit for bit


def test_temporaries_keep_the_slice_form():
    v = _block_variant(strict_lower_product)
    args = _args(strict_lower_product, 9, 4)
    want, got = [a.copy() for a in args], [a.copy() for a in args]
    strict_lower_product(*want)
    v.compile()(*got)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)


def test_the_numpy_form_keeps_slices():
    v = _block_variant(syr2k_scaled_first, target="cupy", array_module=np)
    assert "for j in range(0, i + 1):" not in v.source


OUT = Ref("C", ("j",), ((0, "i"),))
B = {"j": ("0", "i + 1")}


def _add(ref: Ref, coef: tuple[str, ...] = ()) -> Stmt:
    return Stmt((0,), ("j",), OUT, "+=", [Term(coef, (ref,))], None)


@pytest.mark.parametrize("row, why", [
    ([_add(Ref("P", ("j",), ((0, "i"),))), _add(Ref("C", ("j",), ((1, "i"),)))],
     "reads C[j, i]: another element of the written array"),
    ([Stmt((0,), ("j",), OUT, "/=", None, None, "C[i, i]", (OUT,)),
      _add(Ref("P", ("j",), ((0, "i"),)))], "a factor reads the written array"),
    ([_add(Ref("P", ("j",), ((0, "i"),)), ("C[0, 0]",)), _add(Ref("P", ("j",), ((0, "i"),)))],
     "a coefficient reads the written array"),
    ([_add(Ref("P", ("j",), ((0, "i"),)))], "one statement: nothing to fuse"),
    ([Stmt((0, 0), ("j", "k"), OUT, "+=", [Term((), (Ref("A", ("k",), ((0, "i"),)),
                                                     Ref("A", ("k", "j"))))], None),
      _add(Ref("P", ("j",), ((0, "i"),)))], "a summed remainder"),
    ([Stmt((0,), ("j",), OUT, "=", None, None, None, (OUT,)),
      _add(Ref("P", ("j",), ((0, "i"),)))], "a statement kept as written"),
    ([Stmt((0,), ("j",), Ref("s", ()), "+=", [Term((), (Ref("P", ("j",), ((0, "i"),)),))],
           None), _add(Ref("P", ("j",), ((0, "i"),)))], "a scalar output"),
])
def test_refused(row, why):
    assert fused_row(row, B, {}) is None, why


def test_temps_refused_and_two_outputs_fused():
    row = [_add(Ref("P", ("j",), ((0, "i"),))),
           Stmt((0,), ("j",), Ref("D", ("j",), ((0, "i"),)), "=",
                [Term(("2.0",), (OUT,))], None)]
    assert fused_row(row, B, {}, {"_hb0"}) is None
    assert fused_row(row, B, {"P": {0: "r0"}}) == (
        "for j in range(0, i + 1):\n    C[i, j] += P[i - r0, j]\n    D[i, j] = 2.0 * C[i, j]")
