"""Loop transformations before parallelization: what is legal (:mod:`.plan`) and the rewrite
of the generated source (:mod:`.rewrite`).

* **interchange** (fixed pass): a band of perfectly nested rectangular loops is permuted so
  the innermost loop walks the last subscript of most accesses (unit stride, row-major),
  when every dependence vector of the band stays lexicographically positive and no loop
  that is parallel starts carrying a dependence; loops whose other statements stand in the
  way are distributed first when they carry no dependence;
* **privatized array reductions** and **privatized temporaries** (with the loop's gene): a
  loop kept sequential only by ``y[j] += …`` updates, or by a temporary array each iteration
  writes before it reads, runs over chunks, one private copy per chunk;
* **scalar replacement** (fixed pass): array reads that do not change in an innermost loop
  are read once before it, reads repeated in one iteration once per iteration;
* **collapse** (fixed pass on a chosen loop): ``for i in prange: for j: <loop>`` with both
  loops carrying nothing becomes one ``prange`` over the ``(i, j)`` pairs, so a short ``i``
  still feeds every thread (the div/mod per pair stays outside the innermost loop).

* **tiling** (a gene, :mod:`.tiling`): a fully permutable rectangular band of perfectly
  nested loops with reuse is strip-mined and its tile loops moved outside, tile size
  {none, 32, 64, 128} chosen by the search (offered only when the band's working set at the
  search's arguments exceeds L2); the tile loop of a ``prange`` loop stays the ``prange``.

Every transformation is a line of ``report.transforms`` and ``str(report)`` and a comment in
the generated source.
"""

from __future__ import annotations

import ast
import copy
from typing import TYPE_CHECKING

from ...front.loops import LoopTree
from .plan import Interchange, Transforms, plan_transforms
from .privatize import Privatization
from .rewrite import apply_transforms, loop_id, tag_loops
from .tiling import TILE_SIZES, Tiling, plan_tiling, tile_genes, tile_size

if TYPE_CHECKING:
    from ..aliases import AliasInfo
    from ..report import LoopReport

__all__ = ["Interchange", "Privatization", "Transforms", "plan_transforms",
           "apply_transforms", "tag_loops", "loop_id", "find_transforms", "Tiling",
           "TILE_SIZES", "tile_genes", "tile_size"]


def find_transforms(func: ast.FunctionDef, tree: LoopTree, reps: list[LoopReport],
                    aliases: AliasInfo, fortran: frozenset[str] = frozenset()) -> Transforms:
    """The legal transformations of ``func``'s loops, with the lines of the fixed passes as
    the numba variant applies them (a rewrite of a copy of ``func``); ``fortran``: array
    parameters stored column-major (their first subscript is the unit-stride one)."""
    xf = plan_transforms(tree, reps, aliases, fortran)
    xf.tilings = plan_tiling(tree, reps, aliases, xf.refused)
    probe = copy.deepcopy(func)
    tag_loops(probe, [r.id for r in reps])
    skip = frozenset(r.id for r in reps if r.verdict == "unsupported")
    notes = apply_transforms(probe, xf, aliases, skip=skip)
    xf.rewrite_notes = [n for n in notes if "scalar replacement" in n]
    par = {r.id for r in reps if r.verdict == "parallel"}
    outer = tuple(r.id for r in reps if r.id in par and not _enclosed(r, reps, par))
    probe = copy.deepcopy(func)
    nodes = tag_loops(probe, [r.id for r in reps])
    for key in outer:
        if isinstance(nodes[key].iter, ast.Call):
            nodes[key].iter.func = ast.Name("prange", ast.Load())
    for line in apply_transforms(probe, xf, aliases, skip=skip, parallel=outer,
                                 collapsible=frozenset(par)):
        if "collapsed" in line:
            xf.rewrite_notes.append(f"{line} (when {line.split('/')[0]} runs in parallel)")
    return xf


def _enclosed(rep: LoopReport, reps: list[LoopReport], ids: set[str]) -> bool:
    parent = rep.parent
    while parent is not None:
        if reps[parent].id in ids:
            return True
        parent = reps[parent].parent
    return False
