"""Solutions of notebook 07 (attention)."""

import numpy as np

from hetlab.kernels.attention.paro import AXIS_ORDERS, grid_permutation


def online_softmax_step(m, lsum, acc, s, v):
    """Fold a tile of scores s (rows, cols) and values v (cols, d_v) into (m, l, acc)."""
    m_new = np.maximum(m, s.max(axis=1))
    alpha = np.exp(m - m_new)                 # rescale of what was summed so far
    p = np.exp(s - m_new[:, None])            # the tile's weights against the new max
    return m_new, lsum * alpha + p.sum(axis=1), acc * alpha[:, None] + p @ v


def best_axis_order(attn, grid, block):
    """Axis order whose flattening puts the most attention in diagonal blocks (ties: first)."""
    n = attn.shape[0]
    same_block = (np.arange(n)[:, None] // block) == (np.arange(n)[None, :] // block)
    best, best_mass = None, -1.0
    for name in AXIS_ORDERS:
        perm = grid_permutation(tuple(grid), name)
        mass = (attn[np.ix_(perm, perm)] * same_block).sum() / n
        if mass > best_mass + 1e-12:
            best, best_mass = name, mass
    return best
