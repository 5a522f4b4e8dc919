"""A small genetic algorithm over bit genes, and the exhaustive search that checks it.

Each gene is a tuple of 0/1 (one per parallelizable loop: 1 = offload it). Fitness is computed
once per distinct gene (cached); ``budget`` bounds the number of distinct genes evaluated.
Selection by tournament or roulette wheel, one-point crossover, bit-flip mutation, elitism.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...errors import InvalidInputError

__all__ = ["GAResult", "genetic_search", "exhaustive_search"]

Gene = tuple[int, ...]


@dataclass
class GAResult:
    """Best gene, its fitness, distinct evaluations made and best fitness per generation."""

    best: Gene
    fitness: float
    evaluations: int
    history: list[float] = field(default_factory=list)
    cache: dict[Gene, float] = field(default_factory=dict)
    #: the GA stopped before ``generations`` because its best stalled (``patience``)
    stopped_early: bool = False


class _Cached:
    def __init__(self, fitness: Callable[[Gene], float], cache: dict[Gene, float] | None,
                 budget: int, on_new: Callable[[], None] | None) -> None:
        self.fitness, self.cache, self.budget = fitness, dict(cache or {}), budget
        self.new, self.on_new = 0, on_new

    def exhausted(self) -> bool:
        return self.new >= self.budget

    def prefetch(self, genes: list[Gene], many: Callable[[list[Gene]], list[float]]) -> None:
        """Evaluate the new genes among ``genes`` together (within budget), e.g. on a cluster."""
        fresh = [g for g in dict.fromkeys(genes) if g not in self.cache]
        fresh = fresh[: max(self.budget - self.new, 0)]
        if not fresh:
            return
        for gene, value in zip(fresh, many(fresh), strict=True):
            self.cache[gene] = float(value)
            self.new += 1
            if self.on_new is not None:
                self.on_new()

    def __call__(self, gene: Gene) -> float:
        if gene not in self.cache:
            if self.exhausted():
                return -1.0  # over budget: not measured, never selected over a measured one
            self.cache[gene] = float(self.fitness(gene))
            self.new += 1
            if self.on_new is not None:
                self.on_new()
        return self.cache[gene]


def _check(name: str, value: float, lo: float, hi: float) -> None:
    if not lo <= value <= hi:
        raise InvalidInputError(f"offload.search: {name} must be in [{lo}, {hi}]; got {value!r}.")


def _pick(rng: random.Random, scored: list[tuple[float, Gene]], selection: str,
          tournament: int) -> Gene:
    weights = [max(s, 0.0) for s, _ in scored]
    if selection == "roulette" and sum(weights) > 0:
        return rng.choices([g for _, g in scored], weights=weights)[0]
    group = rng.sample(scored, min(tournament, len(scored)))
    return max(group, key=lambda t: t[0])[1]


def _seeded(seeds: Sequence[Gene], n_genes: int, population: int) -> list[Gene]:
    """The distinct valid ``seeds`` (at most ``population``), as tuples of ints."""
    out: list[Gene] = []
    for g in seeds:
        gene = tuple(int(b) for b in g)
        if len(gene) != n_genes or any(b not in (0, 1) for b in gene):
            raise InvalidInputError(f"offload.search: a seed gene must be {n_genes} bits of 0/1; "
                                    f"got {tuple(g)!r}.")
        if gene not in out:
            out.append(gene)
    return out[:population]


def genetic_search(n_genes: int, fitness: Callable[[Gene], float], *, budget: int = 64,
                   population: int = 8, generations: int = 30, elite: int = 1,
                   selection: str = "tournament", tournament: int = 3,
                   crossover_rate: float = 0.9, mutation_rate: float | None = None,
                   seed: int = 0, cache: dict[Gene, float] | None = None,
                   on_evaluation: Callable[[], None] | None = None,
                   evaluate_many: Callable[[list[Gene]], list[float]] | None = None,
                   seeds: Sequence[Gene] = (), patience: int | None = None) -> GAResult:
    """Maximize ``fitness`` over ``n_genes``-bit genes; at most ``budget`` new evaluations.

    ``seeds`` (genes of ``n_genes`` bits 0/1) open the first population, in order, before
    the random members (a seeded GA: :func:`hetlab.offload.search` passes the static rule's
    answer, every outermost parallelizable loop, so the search starts no worse than it).

    ``cache`` (gene → fitness from an earlier run) resumes a stopped search: those genes are
    not measured again and do not count against ``budget``. ``evaluate_many``, when given,
    evaluates each generation's new genes together (one call per generation, e.g. as tasks
    on a cluster); it returns their fitness in order. ``patience``: stop after this many
    generations in a row without a better best fitness (None: all ``generations``); the
    result's ``stopped_early`` says whether it did.

    Examples
    --------
    >>> r = genetic_search(3, lambda g: float(sum(g)), population=4, generations=50,
    ...                    patience=2)
    >>> r.best, r.fitness
    ((1, 1, 1), 3.0)
    """
    if selection not in ("tournament", "roulette"):
        raise InvalidInputError("offload.search: selection must be 'tournament' or 'roulette'; "
                                f"got {selection!r}.")
    _check("crossover_rate", crossover_rate, 0.0, 1.0)
    mutation_rate = 1.0 / max(n_genes, 1) if mutation_rate is None else mutation_rate
    _check("mutation_rate", mutation_rate, 0.0, 1.0)
    _check("population", population, 2, 10_000)
    _check("elite", elite, 0, population - 1)
    rng = random.Random(seed)
    f = _Cached(fitness, cache, budget, on_evaluation)
    space = 2 ** n_genes
    pop = _seeded(seeds, n_genes, population)
    pop += [tuple(rng.randint(0, 1) for _ in range(n_genes)) for _ in range(population - len(pop))]
    history: list[float] = []
    stopped = False
    for _ in range(generations):
        if evaluate_many is not None:
            f.prefetch(pop, evaluate_many)
        scored = sorted(((f(g), g) for g in pop), key=lambda t: t[0], reverse=True)
        history.append(max(f.cache.values(), default=0.0))
        if f.exhausted() or len(f.cache) >= space:
            break
        if patience is not None and len(history) > patience \
                and history[-1] <= history[-1 - patience]:
            stopped = True
            break
        nxt = [g for _, g in scored[:elite]]
        while len(nxt) < population:
            a, b = _pick(rng, scored, selection, tournament), \
                _pick(rng, scored, selection, tournament)
            if n_genes > 1 and rng.random() < crossover_rate:
                cut = rng.randint(1, n_genes - 1)
                a = a[:cut] + b[cut:]
            child = tuple(bit ^ (rng.random() < mutation_rate) for bit in a)
            nxt.append(child)
        pop = nxt
    best = max(f.cache.items(), key=lambda kv: kv[1])
    return GAResult(best[0], best[1], f.new, history, f.cache, stopped)


def exhaustive_search(n_genes: int, fitness: Callable[[Gene], float], *,
                      cache: dict[Gene, float] | None = None,
                      on_evaluation: Callable[[], None] | None = None,
                      evaluate_many: Callable[[list[Gene]], list[float]] | None = None
                      ) -> GAResult:
    """Evaluate all ``2**n_genes`` genes (those in ``cache`` are not measured again)."""
    f = _Cached(fitness, cache, 2 ** n_genes, on_evaluation)
    genes = list(itertools.product((0, 1), repeat=n_genes))
    if evaluate_many is not None:
        f.prefetch(genes, evaluate_many)
    for gene in genes:
        f(gene)
    best = max(f.cache.items(), key=lambda kv: kv[1])
    return GAResult(best[0], best[1], f.new, [best[1]], f.cache)
