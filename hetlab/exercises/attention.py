"""Checkers of notebook 07 (attention): one online-softmax tile update, and the PARO axis
order with the most block-diagonal mass."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..kernels.attention import paro
from ._core import Case, Verdict, finish, run_cases

__all__ = ["check_online_softmax_step", "check_best_axis_order", "online_softmax_step_ref",
           "block_diag_mass"]


def online_softmax_step_ref(m: np.ndarray, lsum: np.ndarray, acc: np.ndarray, s: np.ndarray,
                            v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One online-softmax tile update in float64 (the answer of exercise 07.1).

    Parameters
    ----------
    m : ndarray of shape (rows,)
        Running maximum of each row's scores so far (−inf before the first tile).
    lsum : ndarray of shape (rows,)
        Running sum of ``exp(s − m)`` so far.
    acc : ndarray of shape (rows, d_v)
        Running sum of ``exp(s − m) · v`` so far.
    s : ndarray of shape (rows, cols)
        The new tile's scores (−inf where masked; every row has a finite score in its first
        tile).
    v : ndarray of shape (cols, d_v)
        The new tile's values.

    Returns
    -------
    (m_new, lsum_new, acc_new) of the same shapes, float64

    Examples
    --------
    >>> m, l, a = online_softmax_step_ref(np.array([-np.inf]), np.zeros(1), np.zeros((1, 1)),
    ...                                   np.array([[0.0, 0.0]]), np.array([[1.0], [3.0]]))
    >>> m.tolist(), l.tolist(), a.tolist()
    ([0.0], [2.0], [[4.0]])
    """
    m, lsum, acc, s, v = (np.asarray(x, dtype=np.float64) for x in (m, lsum, acc, s, v))
    m_new = np.maximum(m, s.max(axis=1))
    alpha = np.exp(m - m_new)
    p = np.exp(s - m_new[:, None])
    return m_new, lsum * alpha + p.sum(axis=1), acc * alpha[:, None] + p @ v


def block_diag_mass(attn: np.ndarray, grid: tuple[int, int, int], block: int,
                    name: str) -> float:
    """Block-diagonal mass of one head's attention map ``attn`` (n, n), tokens row-major in
    ``grid``, when flattened in axis order ``name``: the mean over queries of the weight on
    keys in the query's own block of ``block`` consecutive positions.

    >>> block_diag_mass(np.eye(4), (1, 2, 2), 2, "FHW")
    1.0
    """
    perm = paro.grid_permutation(tuple(grid), name)
    p = np.asarray(attn, dtype=np.float64)[np.ix_(perm, perm)]
    bid = np.arange(p.shape[0]) // block
    return float((p * (bid[:, None] == bid[None, :])).sum() / p.shape[0])


def _tile_same(got: Any, expected: tuple[np.ndarray, ...]) -> bool:
    if not isinstance(got, tuple | list) or len(got) != 3:
        return False
    return all(np.shape(g) == e.shape and np.allclose(np.asarray(g, np.float64), e,
                                                      rtol=1e-9, atol=1e-12)
               for g, e in zip(got, expected, strict=True))


def check_online_softmax_step(fn: Callable[..., Any], *,
                              raise_on_fail: bool = True) -> Verdict:
    """Exercise 07.1: ``fn(m, lsum, acc, s, v)`` folds one tile of scores into the running
    maximum, sum and output accumulator of flash attention's online softmax.

    Parameters
    ----------
    fn : callable
        ``fn(m: (rows,), lsum: (rows,), acc: (rows, d_v), s: (rows, cols), v: (cols, d_v))
        -> (m_new, lsum_new, acc_new)``, all float64.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    ninf = -np.inf
    rng = np.random.default_rng(7)
    big_s = rng.standard_normal((4, 16)) * 3
    big_v = rng.standard_normal((16, 8))
    start = (np.array([1.0, -0.5, 0.0, 2.0]), np.array([1.5, 2.0, 1.0, 3.0]),
             rng.standard_normal((4, 8)))
    specs = [
        ("first tile: m=-inf, l=0, acc=0; s=[[0, ln 3]], v=[[1], [2]]",
         (np.array([ninf]), np.zeros(1), np.zeros((1, 1)), np.array([[0.0, np.log(3.0)]]),
          np.array([[1.0], [2.0]])),
         "m_new = max(m, max of the tile's row); l_new = l·exp(m − m_new) + Σ exp(s − m_new)."),
        ("m=5, l=1, acc=[[2]]; a tile of lower scores s=[[1, 2]] (the max stays 5)",
         (np.array([5.0]), np.ones(1), np.array([[2.0]]), np.array([[1.0, 2.0]]),
          np.array([[1.0], [1.0]])),
         "when the max does not change, exp(m − m_new) = 1 and the new weights are "
         "exp(s − m), below 1."),
        ("m=0, l=2, acc=[[4]]; a tile that raises the max: s=[[3, 1]]",
         (np.zeros(1), np.array([2.0]), np.array([[4.0]]), np.array([[3.0, 1.0]]),
          np.array([[1.0], [-1.0]])),
         "a larger max rescales BOTH the old sum and the old accumulator by exp(m − m_new)."),
        ("a masked score (-inf) in the tile: s=[[1, -inf]]",
         (np.zeros(1), np.ones(1), np.ones((1, 1)), np.array([[1.0, ninf]]),
          np.array([[1.0], [100.0]])),
         "exp(-inf − m) is 0: a masked key adds nothing (let NumPy compute it; do not skip "
         "the tile)."),
        ("4 rows, 16 keys, d_v = 8 (random)", (*start, big_s, big_v),
         "every row has its own max, sum and accumulator row; p @ v adds the tile."),
    ]
    cases = [Case(label, dict(zip(("m", "lsum", "acc", "s", "v"), args, strict=True)),
                  online_softmax_step_ref(*args), nudge) for label, args, nudge in specs]
    verdict = run_cases("07.1 online_softmax_step", fn, cases, _tile_same)
    return finish(verdict, raise_on_fail)


def _planted_map(grid: tuple[int, int, int], name: str, seed: int) -> np.ndarray:
    q, k, _ = paro.planted_grid(grid, [name], 8, np.random.default_rng(seed))
    s = q[0] @ k[0].T / np.sqrt(8)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def check_best_axis_order(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 07.2: ``fn(attn, grid, block)`` names the axis order (one of
    ``paro.AXIS_ORDERS``, slowest axis first) whose flattening of the token grid puts the most
    attention mass in diagonal blocks of ``block`` tokens; ties go to the first in
    ``AXIS_ORDERS``.

    Parameters
    ----------
    fn : callable
        ``fn(attn: (n, n) float64 softmax map, tokens row-major in (F, H, W),
        grid: (F, H, W), block: int) -> str``.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    specs = [
        ("identity map on a (1, 2, 2) grid, block 2 (every order is perfect: a tie)",
         np.eye(4), (1, 2, 2), 2,
         "on a tie return the FIRST order of AXIS_ORDERS ('FHW'): use a strict '>' or argmax."),
        ("grid (2, 2, 2), each token attends to its neighbour along F, block 2",
         np.kron(np.full((2, 2), 0.5), np.eye(4)), (2, 2, 2), 2,
         "flatten with paro.grid_permutation(grid, name) and index the map with it on both "
         "axes: attn[np.ix_(perm, perm)]; F must be the fastest axis."),
        ("planted local map on a (4, 4, 4) grid, local along W then H, block 8",
         _planted_map((4, 4, 4), "FHW", 1), (4, 4, 4), 8,
         "mass = mean over queries of the weight on keys in the query's own block "
         "(position // block equal)."),
        ("planted local map on a (4, 4, 4) grid, block 8", _planted_map((4, 4, 4), "WHF", 2),
         (4, 4, 4), 8, "compare all 6 orders, not only the given one."),
        ("planted local map on a (2, 4, 6) grid (not a cube), block 6",
         _planted_map((2, 4, 6), "HWF", 3), (2, 4, 6), 6,
         "the grid's axes have different lengths: reshape with grid, transpose by the order."),
    ]
    cases = []
    for label, attn, grid, block, nudge in specs:
        masses = [block_diag_mass(attn, grid, block, nm) for nm in paro.AXIS_ORDERS]
        cases.append(Case(label, {"attn": attn, "grid": grid, "block": block},
                          paro.AXIS_ORDERS[int(np.argmax(masses))], nudge))
    verdict = run_cases("07.2 best_axis_order", fn, cases, lambda g, e: g == e)
    return finish(verdict, raise_on_fail)
