"""Function blocks (Yamato 2020/2024): loop nests that compute a known routine, as library calls.

Recognition is by shape, not by text: each nest is normalized into tensor statements
(:mod:`.contraction`: loops ``range(n)``, ``range(0, n)``, ``range(len(x))``,
``range(A.shape[0])`` or ``range(a, b)`` with invariant bounds; scalar factors anywhere in a
product; ``x = x + …`` as ``+=``; scalar temporaries; an init ``C[i,j] = 0`` / ``*= beta``
before the reduction and a write-back after it), checked for legality (each statement may run
over its whole index set, one after the other; no output read by its own contraction; no two
arrays that may share storage) and matched against the catalogue (:mod:`.catalogue`: GEMM and
GEMV with α, β and transposes, dot, outer products, rank-1 and rank-2k updates, batched
products, tensor contractions, sums and means along axes, axpy, scal, transpose); several
statements become several calls, an elementwise epilogue a fused loop. Triangular bounds
(``range(i + 1)``, ``range(i, n)`` …) keep the loop over rows around exact row-wise calls
(:mod:`.triangular`); an argmin/argmax over candidates becomes chunked direct-form distances
and ``np.argmin`` with the loop's NaN and tie behaviour (:mod:`.argmin`); a mirrored Gram
product (``C[a, b] = C[b, a] = Σ X[i, a] Y[i, b]`` over ``b ≥ a``, a covariance) one product
and row-wise copies (:mod:`.gram`). Offset or indirect
subscripts, and reductions that are none of these, are no match: the nest stays a loop nest.
A block is only a candidate: the search measures and verifies it like every other variant.

A slice equal to the whole extent is written ``:``; a sliced operand of ``@`` is wrapped in
``np.ascontiguousarray`` (in the numba form only when a run-time check finds it partial,
:mod:`.nocopy`; there a product's output is also written in one fused pass, :mod:`.epilogue`);
the code is plain NumPy that numba's ``njit`` compiles (float arrays: numba has no integer
``@``).

>>> from hetlab import offload
>>> from hetlab.offload.examples import EXAMPLES
>>> print(offload.analyze(EXAMPLES["axpy"].fn).blocks[0])
B1: axpy at L1 (line 33) → y[:x.shape[0]] += a * x
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..front.loops import Loop
from .argmin import match_argmin
from .catalogue import emit
from .contraction import normalize
from .dots import expand_dots
from .gram import match_gram
from .legality import legal
from .scalars import live_after
from .symm import match_symm
from .triangular import match_triangular
from .zeroed import zeroed_locals

__all__ = ["Block", "find_blocks"]


@dataclass(frozen=True)
class Block:
    """One recognized function block: the nest it replaces and the statements replacing it."""

    index: int
    nest: str
    loops: tuple[str, ...]
    line: int
    pattern: str
    call: str
    #: the numba variant's replacement when it differs from ``call`` (:mod:`.loopform`)
    numba_call: str = ""

    @property
    def id(self) -> str:
        return f"B{self.index + 1}"

    def __str__(self) -> str:
        call = self.call.replace("\n", "; ")
        return f"{self.id}: {self.pattern} at {self.nest} (line {self.line}) → {call}"


def match_nest(root: ast.For, may_alias: Callable[[str, str], bool] | None = None,
               live: Callable[[str], bool] | None = None,
               numba: bool = False,
               sizes: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """(catalogue entry, replacement source) for the nest rooted at ``root``, or None.

    Parameters
    ----------
    root : ast.For
        Outermost loop of the nest.
    may_alias : callable, optional
        ``may_alias(x, y)``: whether two names may share storage.
    live : callable, optional
        ``live(name)``: whether a name's value after the nest may be read; loop variables and
        scalar temporaries must be dead.
    numba : bool, default False
        The numba form of the replacement (:func:`.catalogue.emit`).
    sizes : frozenset of str, optional
        Names that always hold a size (never negative; :func:`.catalogue.emit`).
    """
    nest = normalize(root)
    if nest is None:
        return match_triangular(root, may_alias, live, numba) \
            or match_argmin(root, may_alias, live, numba) \
            or match_gram(root, may_alias, live, numba) \
            or match_symm(root, may_alias, live, numba) \
            or _with_zeroed(root, may_alias, live, numba, sizes)
    if legal(nest, may_alias) is not None:
        return _with_zeroed(root, may_alias, live, numba, sizes)
    if live is not None:
        private = set(nest.bounds) | set(nest.temps)
        if any(live(v) for v in private):
            return None
    return emit(nest, numba, sizes) or _with_zeroed(root, may_alias, live, numba, sizes)


def _with_zeroed(root: ast.For, may_alias: Callable[[str, str], bool] | None,
                 live: Callable[[str], bool] | None, numba: bool,
                 sizes: frozenset[str]) -> tuple[str, str] | None:
    """The nest's block with its per-iteration ``s = np.zeros(n)`` read as a zeroed shared
    temporary (:mod:`.zeroed`), ``s`` bound once before the block; None when that does not
    apply or ``s`` may be read after the nest."""
    got = zeroed_locals(root)
    if got is None or live is None:
        return None
    fresh, prelude, names = got
    if any(live(s) for s in names):
        return None
    found = match_nest(fresh, may_alias, live, numba, sizes)
    if found is None:
        return None
    return found[0], "\n".join([*prelude, found[1]])


def find_blocks(loops: list[Loop], aliases: object = None,
                sizes: frozenset[str] = frozenset(),
                ndims: Mapping[str, int] | None = None) -> list[Block]:
    """The function blocks among ``loops`` (a function's loop tree, pre-order).

    Parameters
    ----------
    loops : list of Loop
        :func:`~hetlab.offload.front.loops.build_tree`'s loops; each nest is tried from its
        outermost loop, and loops inside a recognized block are not tried again.
    aliases : AliasInfo, optional
        The function's :class:`~hetlab.offload.analysis.aliases.AliasInfo`: arrays that may
        share storage are never a block's output and operand.
    sizes : frozenset of str, optional
        Names every assignment of which is a size (``n = A.shape[0]``): slices up to them
        need no ``max(n, 0)``.
    ndims : mapping of str to int, optional
        Ranks of the numeric array parameters (``search`` knows them): a nest computing
        ``np.dot`` of two vectors is also tried as the sum it is (:mod:`.dots`).

    Returns
    -------
    list of Block
        In source order, ids ``B1, B2, …``; empty when nothing matches.
    """
    found: list[Block] = []
    covered: set[int] = set()
    may_alias = getattr(aliases, "may_alias", None)
    for lp in loops:
        if lp.index in covered:
            continue
        inside = [x for x in loops if x.index == lp.index or _under(x, lp, loops)]
        if any(x.unsupported for x in inside):
            continue
        def live(v: str, p: list = lp.path) -> bool:
            return live_after(p, v)

        node = lp.node
        got = match_nest(node, may_alias, live, sizes=sizes)
        if got is None and (dotted := expand_dots(node, ndims or {})) is not None:
            node = dotted  # row-wise np.dot calls read as their sums
            got = match_nest(node, may_alias, live, sizes=sizes)
        if got is None:
            continue
        alt = match_nest(node, may_alias, live, numba=True, sizes=sizes)
        fast = alt[1] if alt is not None and alt[1] != got[1] else ""
        covered |= {x.index for x in inside}
        found.append(Block(len(found), lp.id, tuple(x.id for x in inside), lp.line, *got,
                           numba_call=fast))
    return found


def _under(x: Loop, root: Loop, loops: list[Loop]) -> bool:
    p = x.parent
    while p is not None:
        if p == root.index:
            return True
        p = loops[p].parent
    return False
