"""The notebooks' graded exercises: every solution passes its checker, every stub left in a
notebook fails it with a hint, and typical wrong answers get a hint that points at the bug."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import hetlab as hl
from hetlab.errors import InvalidInputError, VerificationError
from hetlab.exercises import EXERCISES, check_fps, check_fps_by_hand, check_pack3

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "notebooks" / "src"
SOLUTIONS = ROOT / "notebooks" / "solutions"
STUB = "your code here"


def _solution_module(notebook: str):
    name = "s" + notebook.split("-", 1)[0] + "_" + notebook.split("-", 1)[1].replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, SOLUTIONS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _is_stub(node: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Raise) and STUB in ast.unparse(n) for n in ast.walk(node))


def _stubs(notebook: str) -> dict[str, object]:
    """The stub functions exactly as the notebook's source defines them."""
    tree = ast.parse((SOURCES / f"{notebook}.py").read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and _is_stub(node):
            namespace = {"np": np, "hl": hl}
            exec(compile(ast.Module([node], []), f"{notebook}.py", "exec"), namespace)
            found[node.name] = namespace[node.name]
    return found


CASES = [(nb, name) for nb, names in EXERCISES.items() for name in names]


def test_every_notebook_has_two_or_three_exercises():
    notebooks = sorted(p.stem for p in SOURCES.glob("*.py"))
    assert sorted(EXERCISES) == notebooks
    assert all(2 <= len(names) <= 3 for names in EXERCISES.values())


@pytest.mark.parametrize("notebook", sorted(EXERCISES))
def test_notebook_holds_the_stubs_and_calls_each_checker(notebook):
    stubs = _stubs(notebook)
    assert set(stubs) == set(EXERCISES[notebook]), "each exercise's stub is in its notebook"
    text = (SOURCES / f"{notebook}.py").read_text(encoding="utf-8")
    for name, checker in EXERCISES[notebook].items():
        assert f"{checker.__name__}({name}, raise_on_fail=False)" in text


@pytest.mark.parametrize(("notebook", "name"), CASES)
def test_solution_passes(notebook, name):
    solution = getattr(_solution_module(notebook), name)
    verdict = EXERCISES[notebook][name](solution)  # raises VerificationError when it fails
    assert verdict.passed and not verdict.hint, str(verdict)
    assert str(verdict).startswith("PASS")


@pytest.mark.parametrize(("notebook", "name"), CASES)
def test_untouched_stub_fails_with_a_hint(notebook, name):
    stub, checker = _stubs(notebook)[name], EXERCISES[notebook][name]
    verdict = checker(stub, raise_on_fail=False)
    assert not verdict.passed
    assert "(case 1 of" in verdict.hint and "still the stub" in verdict.hint
    assert STUB in verdict.hint and "Start here:" in verdict.hint
    with pytest.raises(VerificationError, match="HINT"):
        checker(stub)


def test_wrong_fps_gets_the_case_and_a_nudge():
    def no_ties(points, n_samples, start=0):  # argmax over -dist: ties to the highest index
        dist = np.full(len(points), np.inf)
        picked = [start]
        for _ in range(n_samples - 1):
            dist = np.minimum(dist, ((points - points[picked[-1]]) ** 2).sum(axis=1))
            picked.append(len(points) - 1 - int(np.argmax(dist[::-1])))
        return np.array(picked)

    verdict = check_fps(no_ties, raise_on_fail=False)
    assert "case 2 of 4: 4 points on a line" in verdict.hint
    assert "expected int64 array of shape (3,): [0, 3, 1]" in verdict.hint
    assert "got int64 array of shape (3,): [0, 3, 2]" in verdict.hint
    assert "lowest index" in verdict.hint


def test_pack3_without_the_high_plane_names_the_word():
    pack3 = _solution_module("02-quantization").my_pack3

    def low_only(codes):
        words = pack3(codes)
        words[:, 2::3] = 0
        return words

    verdict = check_pack3(low_only, raise_on_fail=False)
    assert "case 4 of 7: code 5 is 4" in verdict.hint
    assert "row 0, word 2: expected 00000000000000000000000000100000" in verdict.hint


def test_forgotten_flush_is_diagnosed():
    def no_flush(emu, points, n_samples):
        ip = emu.load("fps")
        inp, out = emu.allocate(points.shape, np.float32), emu.allocate((n_samples,), np.uint32)
        inp[:] = points                                           # no inp.flush()
        for offset, buf in ((0x10, inp), (0x1C, out)):
            ip.write(offset, buf.device_address & 0xFFFFFFFF)
            ip.write(offset + 4, buf.device_address >> 32)
        for offset, value in ((0x28, len(points)), (0x30, n_samples), (0x38, 0), (0x00, 1)):
            ip.write(offset, value)
        while not ip.read(0x00) & 0b10:
            pass
        out.invalidate()
        result = np.array(out, dtype=np.int64)
        emu.free(inp)
        emu.free(out)
        return result

    verdict = check_fps_by_hand(no_flush, raise_on_fail=False)
    assert not verdict.passed
    assert "On a coherent emulator the same code is RIGHT" in verdict.hint
    assert "flush()" in verdict.hint


def test_checker_refuses_a_called_function():
    with pytest.raises(InvalidInputError, match="without calling it"):
        check_fps(None)


def test_solutions_stay_out_of_the_notebooks():
    for notebook in EXERCISES:
        text = (SOURCES / f"{notebook}.py").read_text(encoding="utf-8")
        solution = (SOLUTIONS / f"{_solution_module(notebook).__name__}.py").read_text()
        bodies = [ast.unparse(n) for n in ast.parse(solution).body
                  if isinstance(n, ast.FunctionDef)]
        body_lines = {ln.strip() for b in bodies for ln in b.splitlines()[2:] if len(ln) > 30}
        assert not [ln for ln in body_lines if ln in text], notebook


def test_break_even_at_the_crossing_is_not_yet_paying():
    import math

    from hetlab.exercises import check_break_even

    def ceil_break_even(home_overhead_s, home_slope_s, dev_overhead_s, dev_slope_s):
        gap = home_slope_s - dev_slope_s
        return math.ceil((dev_overhead_s - home_overhead_s) / gap) if gap > 0 else None

    verdict = check_break_even(ceil_break_even, raise_on_fail=False)
    assert not verdict.passed and verdict.n_passed == 1
    assert "(case 2 of 5" in verdict.hint and "expected 2049, got 2048" in verdict.hint
    assert "strictly" in verdict.hint


def test_pareto_with_strict_dominance_names_the_tie():
    from hetlab.exercises import check_pareto_names

    def strict(rows):  # forgets that a tie on one axis and a loss on the other is dominated
        return [n for n, t, e in rows if not any(t2 < t and e2 < e for _, t2, e2 in rows)]

    verdict = check_pareto_names(strict, raise_on_fail=False)
    assert not verdict.passed and "(case 3 of 5: fpga ties" in verdict.hint
    assert "<= in both, < in one" in verdict.hint


def test_online_softmax_without_rescale_is_caught_at_the_raised_max():
    from hetlab.exercises import check_online_softmax_step

    def no_rescale(m, lsum, acc, s, v):  # forgets exp(m_old - m_new) on the old sums
        m_new = np.maximum(m, s.max(axis=1))
        p = np.exp(s - m_new[:, None])
        return m_new, lsum + p.sum(axis=1), acc + p @ v

    verdict = check_online_softmax_step(no_rescale, raise_on_fail=False)
    assert "case 3 of 5: m=0, l=2" in verdict.hint
    assert "rescales BOTH" in verdict.hint


def test_best_axis_order_without_permuting_keys_is_caught():
    from hetlab.exercises import check_best_axis_order
    from hetlab.kernels.attention.paro import AXIS_ORDERS, grid_permutation

    def rows_only(attn, grid, block):  # permutes the queries but not the keys
        n = attn.shape[0]
        same = (np.arange(n)[:, None] // block) == (np.arange(n)[None, :] // block)
        masses = [(attn[grid_permutation(tuple(grid), nm)] * same).sum() for nm in AXIS_ORDERS]
        return AXIS_ORDERS[int(np.argmax(masses))]

    verdict = check_best_axis_order(rows_only, raise_on_fail=False)
    assert not verdict.passed and "(case 2 of 5" in verdict.hint
    assert "np.ix_(perm, perm)" in verdict.hint
