"""machine.cpu_isa names the instruction sets the CPU reports (figures name their CPU)."""

from __future__ import annotations

import pathlib

import pytest

from hetlab import machine

_CPUINFO = pathlib.Path("/proc/cpuinfo")
# /proc/cpuinfo flag → LLVM feature name, for the sets cpu_isa reports
_FLAGS = {"avx2": "avx2", "avx512f": "avx512f", "avx512bw": "avx512bw",
          "avx512_vnni": "avx512vnni", "amx_int8": "amx-int8"}


def test_cpu_isa_known_names_only():
    isa = machine.cpu_isa()
    assert set(isa) <= set(machine._ISA)
    assert list(isa) == [f for f in machine._ISA if f in isa]  # in the documented order


@pytest.mark.skipif(not _CPUINFO.exists(), reason="needs Linux /proc/cpuinfo")
def test_cpu_isa_agrees_with_proc_cpuinfo():
    flags: set[str] = set()
    for line in _CPUINFO.read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    isa = set(machine.cpu_isa())
    for flag, name in _FLAGS.items():
        if name == "amx-int8" and flag in flags:
            continue  # LLVM may leave AMX out where the kernel grants no tile state
        assert (flag in flags) == (name in isa), (flag, name)
