"""Python source of a planned sparse einsum (:mod:`.einsum_plan`), serial or row-parallel.

One source shape for both variants; the parallel one differs in its outermost loop only
(``prange`` instead of ``range``), and only for plans whose outermost loop may run in
parallel (:func:`row_parallel`): a dense loop over the output's first index (each iteration
writes its own output row: ``out[i, …]``, the positions of sparse row ``i``, or output slots
reserved for row ``i``), or over any index of a full contraction (per-row partial sums added
in a parallel reduction).

Sparse outputs (``append``: a join; ``workspace``: Gustavson's merge) never share a running
counter between rows: row ``i`` writes its entries from ``off[i]`` on, where ``off`` are
offsets of per-row upper bounds computed before the call; the caller compacts the rows
afterwards (:func:`hetlab.kernels.sparse._einsum_compact.compact`). Gustavson's row workspace
(``w``, ``mark``, ``touched``) has one row per thread, picked with
``numba.get_thread_id()``; ``mark[j] == i`` says column ``j`` is already in row ``i``'s
workspace, which holds across rows since a thread never runs the same row twice.
"""

from __future__ import annotations

from .einsum_plan import Plan

__all__ = ["emit", "row_parallel"]


def row_parallel(p: Plan) -> bool:
    """Whether the outermost loop of ``p`` may run as ``prange`` (rows write disjoint slots,
    or add into a reduction)."""
    first = p.loops[0]
    return first.kind == "dense" and (p.mode == "scalar" or p.output[:1] == first.index)


def emit(p: Plan, parallel: bool = False) -> str:
    """Python source of the kernel for plan ``p`` (``prange`` rows when ``parallel`` and
    :func:`row_parallel`)."""
    par = parallel and row_parallel(p)
    names = p.names
    ndim = {n: len(s) for n, s in zip(names, p.subs, strict=True)}
    sparse = dict(zip(names, p.sparse, strict=True))
    args = []
    for n in names:
        if sparse[n]:
            for lv in range(1, ndim[n]):
                args += [f"{n}_ptr{lv}", f"{n}_idx{lv}"]
            args.append(f"{n}_vals")
        else:
            args.append(n)
    args += [f"n_{c}" for c in sorted({c for lp in p.loops for c in lp.index})]
    if p.mode == "dense":
        args.append("out")
    elif p.mode == "aligned":
        args.append("out_vals")
    elif p.mode in ("append", "workspace"):
        args += ["off", "out_counts", "out_cols", "out_vals"]
    if p.mode == "workspace":
        args += ["w_all", "mark_all", "touched_all"]
    lines = [f"def kernel({', '.join(args)}):"]
    lines += [f"    # {ln}" for ln in p.describe().splitlines()]
    lines.append(f"    # {'rows in parallel (prange)' if par else 'serial'}")
    if p.mode == "scalar":
        lines.append("    acc = 0.0")
    product = " * ".join(
        f"{n}_vals[p{n}{ndim[n] - 1}]" if sparse[n]
        else f"{n}[{', '.join('x_' + c for c in s)}]"
        for n, s in zip(names, p.subs, strict=True)
    )
    depth = 1
    row_depth = 2
    epilogue: list[tuple[int, list[str]]] = []
    for li, lp in enumerate(p.loops):
        pad = "    " * depth
        x = f"x_{lp.index}"
        dense_levels = [n for n, lv in lp.levels if lv == 0]
        comp = [(n, lv) for n, lv in lp.levels if lv > 0]
        if lp.kind == "dense":
            loop = "prange" if par and li == 0 else "range"
            lines.append(f"{pad}for {x} in {loop}(n_{lp.index}):")
            inner = "    " * (depth + 1)
            depth += 1
        elif lp.kind == "fiber":
            (n, lv), = comp
            lines.append(f"{pad}for p{n}{lv} in range({n}_ptr{lv}[p{n}{lv - 1}], "
                         f"{n}_ptr{lv}[p{n}{lv - 1} + 1]):")
            inner = "    " * (depth + 1)
            lines.append(f"{inner}{x} = {n}_idx{lv}[p{n}{lv}]")
            depth += 1
        else:  # join: two-pointer intersection of two sorted fibers
            (a, la), (b, lb) = comp
            q = f"_{lp.index}"
            lines += [f"{pad}qa{q} = {a}_ptr{la}[p{a}{la - 1}]",
                      f"{pad}ea{q} = {a}_ptr{la}[p{a}{la - 1} + 1]",
                      f"{pad}qb{q} = {b}_ptr{lb}[p{b}{lb - 1}]",
                      f"{pad}eb{q} = {b}_ptr{lb}[p{b}{lb - 1} + 1]",
                      f"{pad}while qa{q} < ea{q} and qb{q} < eb{q}:",
                      f"{pad}    xa{q} = {a}_idx{la}[qa{q}]",
                      f"{pad}    xb{q} = {b}_idx{lb}[qb{q}]",
                      f"{pad}    if xa{q} < xb{q}:",
                      f"{pad}        qa{q} += 1",
                      f"{pad}    elif xb{q} < xa{q}:",
                      f"{pad}        qb{q} += 1",
                      f"{pad}    else:"]
            inner = "    " * (depth + 2)
            lines += [f"{inner}{x} = xa{q}", f"{inner}p{a}{la} = qa{q}",
                      f"{inner}p{b}{lb} = qb{q}"]
            epilogue.append((depth + 2, [f"qa{q} += 1", f"qb{q} += 1"]))
            depth += 2
        for n in dense_levels:
            lines.append(f"{inner}p{n}0 = {x}")
        if li == 0:  # the start of a row (an iteration of the outermost loop)
            row_depth = depth
            if p.mode == "scalar":
                lines.append(f"{inner}row_acc = 0.0")
            elif p.mode == "append":
                lines.append(f"{inner}nout = off[{x}]")
            elif p.mode == "workspace":
                lines += [f"{inner}tid = get_thread_id()", f"{inner}w = w_all[tid]",
                          f"{inner}mark = mark_all[tid]", f"{inner}touched = touched_all[tid]",
                          f"{inner}nt = 0"]
    pad = "    " * depth
    lines.append(f"{pad}v = {product}")
    o = p.output
    if p.mode == "scalar":
        lines.append(f"{pad}row_acc += v")
    elif p.mode == "dense":
        lines.append(f"{pad}out[{', '.join('x_' + c for c in o)}] += v")
    elif p.mode == "aligned":
        s = p.aligned_with
        lines.append(f"{pad}out_vals[p{s}{len(o) - 1}] += v")
    elif p.mode == "append":
        lines += [f"{pad}out_cols[nout] = x_{o[1]}", f"{pad}out_vals[nout] = v",
                  f"{pad}nout += 1"]
    else:  # workspace: merge into the row accumulator
        j = f"x_{o[1]}"
        lines += [f"{pad}if mark[{j}] != x_{o[0]}:", f"{pad}    mark[{j}] = x_{o[0]}",
                  f"{pad}    touched[nt] = {j}", f"{pad}    nt += 1", f"{pad}    w[{j}] = v",
                  f"{pad}else:", f"{pad}    w[{j}] += v"]
    for d, stmts in reversed(epilogue):
        lines += ["    " * d + st for st in stmts]
    pad = "    " * row_depth
    x0 = f"x_{p.loops[0].index}"
    if p.mode == "scalar":
        lines.append(f"{pad}acc += row_acc")
    elif p.mode == "append":
        lines.append(f"{pad}out_counts[{x0}] = nout - off[{x0}]")
    elif p.mode == "workspace":
        lines += [f"{pad}cols = np.sort(touched[:nt])", f"{pad}nout = off[{x0}]",
                  f"{pad}for t in range(nt):",
                  f"{pad}    out_cols[nout + t] = cols[t]",
                  f"{pad}    out_vals[nout + t] = w[cols[t]]",
                  f"{pad}out_counts[{x0}] = nt"]
    lines.append("    return acc" if p.mode == "scalar" else "    return 0")
    return "\n".join(lines) + "\n"
