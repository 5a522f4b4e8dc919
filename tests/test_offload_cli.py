"""The offload sub-command, through the hook the lead wires into hetlab/cli.py."""

from __future__ import annotations

import argparse

import pytest

import hetlab as hl
from hetlab.offload import register_offload_cli

KERNEL = '''
import numpy as np


def scale(x, y):
    for i in range(x.shape[0]):
        y[i] = 2.0 * x[i]


def args_scale():
    return np.arange(50.0), np.zeros(50)
'''


def _parser():
    p = argparse.ArgumentParser(prog="hetlab")
    register_offload_cli(p.add_subparsers(dest="command", required=True))
    return p


def test_offload_command_analyzes_and_searches(tmp_path, capsys):
    path = tmp_path / "kern.py"
    path.write_text(KERNEL)
    args = _parser().parse_args(["offload", f"{path}:scale", "--targets", "numba", "--quiet",
                                 "--repeats", "1", "--show-source"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "1 loops, 1 parallelizable" in out
    assert "offload.search(scale, target=numba)" in out and "verified=True" in out
    assert "@njit(parallel=" in out


def test_offload_command_bad_targets(tmp_path):
    path = tmp_path / "kern.py"
    path.write_text(KERNEL)
    p = _parser()
    for spec, text in [("nofile.py:f", "not found"), (f"{path}", "must look like"),
                       (f"{path}:nothere", "no function 'nothere'"),
                       (f"{path}:args_scale", "no args_args_scale()")]:
        a = p.parse_args(["offload", spec, "--analyze-only"])
        with pytest.raises(hl.InvalidInputError, match=text):
            a.func(a)
