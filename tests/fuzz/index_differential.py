"""Differential fuzzing of index scalars (:mod:`hetlab.offload.front.indices`) on generated
kernels (``offload_programs``).

Each element write of a generated kernel (``x[2 * i + 1] = …``, ``A[i, j - 1] += …``) is, with
probability 0.6, rewritten to name its index first (``ix = 2 * i + 1`` then ``x[ix] = …``;
``ix = i; iy = j - 1`` then ``A[ix, iy] += …``), reads of the same element in its right-hand
side too. Each rewritten kernel then goes through the offload differential check
(:func:`tests.fuzz.offload_differential.check`: every parallelizable loop and loop set
offloaded, compiled and compared with Python on several sizes). The run also counts the loops
judged parallel in the rewritten kernels against the original ones: substitution should
recover them.

    python -m tests.fuzz.index_differential --seed 0 --count 200
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from dataclasses import dataclass

from hetlab import offload
from tests.fuzz.offload_differential import Stats, check
from tests.fuzz.offload_programs import Program, generate, load

_WRITE = re.compile(r"^(\s*)(x|y|z|A|B|C|tmp0)\[([^\[\]]+)\] (\+?=) (.+)$")


def _split_top(sub: str) -> list[str]:
    """``sub`` split at its top-level commas."""
    parts, depth, cur = [], 0, ""
    for ch in sub:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*parts, cur.strip()]


def indexed_source(source: str, rnd: random.Random) -> str:
    """``source`` with some element writes given named index scalars (module docstring)."""
    out = []
    for line in source.splitlines():
        m = _WRITE.match(line)
        if m is None or rnd.random() >= 0.6:
            out.append(line)
            continue
        pad, array, sub, op, rhs = m.groups()
        parts = _split_top(sub)
        names = ["ix", "iy"][:len(parts)]
        if len(parts) > 2:
            out.append(line)
            continue
        for name, part in zip(names, parts, strict=True):
            out.append(f"{pad}{name} = {part}")
        rhs = rhs.replace(f"{array}[{sub}]", f"{array}[{', '.join(names)}]")
        out.append(f"{pad}{array}[{', '.join(names)}] {op} {rhs}")
    return "\n".join(out) + "\n"


@dataclass
class IndexedProgram(Program):
    """A generated program whose source names its write indices."""

    seed: int = 0

    def source(self) -> str:
        return indexed_source(super().source(), random.Random(self.seed))


def parallel_loops(prog: Program) -> int:
    """How many loops of ``prog`` the analysis calls parallelizable."""
    try:
        report = offload.analyze(load(prog, "index-fuzz-count"))
    except Exception:
        return 0
    return sum(1 for lp in report.loops if lp.parallelizable)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    a = ap.parse_args(argv)
    import numba

    numba.set_num_threads(2)
    t0 = time.time()
    total = Stats()
    plain_par = indexed_par = 0
    for seed in range(a.seed, a.seed + a.count):
        prog = generate(seed)
        indexed = IndexedProgram(prog.name, prog.pre, prog.body, prog.ret, seed)
        if indexed.source() == prog.source():
            continue
        plain_par += parallel_loops(prog)
        indexed_par += parallel_loops(indexed)
        st = check(indexed, seed, serial_first=False)
        total.add(st)
        for f in st.findings:
            print(f.text(), flush=True)
    print(f"kernels {total.kernels}, loops {total.loops} ({total.parallel} parallel), "
          f"variants {total.variants}, calls {total.calls}, findings {len(total.findings)}",
          flush=True)
    print(f"parallelizable loops: {indexed_par} in the rewritten kernels, {plain_par} in the "
          f"originals; {time.time() - t0:.0f} s", flush=True)
    return 1 if total.findings else 0


if __name__ == "__main__":
    sys.exit(main())
