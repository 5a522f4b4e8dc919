# %% [markdown]
# # 05 · FPGA overlays: registers, buffers and a modeled clock
#
# **You will learn** what an FPGA *overlay* is, how software drives one through its control
# registers and shared-memory buffers, why a forgotten cache flush breaks the result on a
# Zynq board, and how hetlab models an overlay's run time when there is no board.
#
# **You need** hetlab and a C++ compiler (g++): without a board, the overlay's HLS C++ source is
# compiled and run bit-accurately by the emulator. **Run time:** about 15 seconds.
#
# > Every FPGA time in this notebook is **modeled** (a timing model from the overlay's loop
# > structure and the board's published figures), never measured on hardware.

# %%
import numpy as np

import hetlab as hl
from hetlab.fpga import Emulator, FpsDriver, load_manifest, model

# %% [markdown]
# ## An overlay is a bitstream plus a register map
#
# `overlays/fps/` holds one kernel written once as Vitis-HLS C++ (`hls/fps.cpp`), the build
# scripts a Vivado/Vitis user runs to get the `.bit`/`.hwh` for a PYNQ-Z2 or a Kria KV260, and
# `overlay.toml`: the register map, the loop structure and every hardware figure with its source.
# The CPU talks to the IP through an AXI-Lite register file: `ap_ctrl` at 0x00 (bit 0
# `ap_start`, bit 1 `ap_done`, …), then the arguments from 0x10 — a 64-bit buffer address takes
# two 32-bit words.

# %%
manifest = load_manifest("fps")
print("control:", {k: hex(v) for k, v in manifest.registers.items()})
for arg in manifest.args:
    print(f"  {arg['name']:>9s} at {arg['offset']:#04x}  ({arg['kind']})")

# %% [markdown]
# ## Driving it by hand
#
# On a board, buffers live in DDR shared with the CPU, but the CPU's caches are not coherent with
# the FPGA's port: after writing input the CPU must `flush()` it to DDR, and before reading
# output it must `invalidate()` its cached copy. The emulator enforces this (strict mode), so
# the bug that bites on real hardware bites here too.

# %%
points = hl.make_cloud(1_000, np.random.default_rng(5))
emu = Emulator("pynq-z2")
ip = emu.load("fps")
inp = emu.allocate((1_000, 3), np.float32)
out = emu.allocate((8,), np.uint32)
inp[:] = points
inp.flush()                                      # CPU cache → DDR


def write_pointer(offset, address):
    ip.write(offset, address & 0xFFFFFFFF)       # low word
    ip.write(offset + 4, address >> 32)          # high word


write_pointer(0x10, inp.device_address)
write_pointer(0x1C, out.device_address)
ip.write(0x28, 1_000)                            # n
ip.write(0x30, 8)                                # n_samples
ip.write(0x38, 0)                                # start
ip.write(0x00, 1)                                # ap_start
while not ip.read(0x00) & 0b10:                  # poll ap_done
    pass
out.invalidate()                                 # DDR → CPU cache
by_hand = np.array(out, dtype=np.int64)
print(by_hand, np.array_equal(by_hand, hl.fps(points, 8)))

# %% [markdown]
# Forget the `flush()` and the IP reads stale DDR — on a board this is a silent wrong answer:

# %%
inp[:] = points[::-1]                            # new input, *not* flushed
ip.write(0x00, 1)
while not ip.read(0x00) & 0b10:
    pass
out.invalidate()
print("matches the new input's FPS:", np.array_equal(np.array(out), hl.fps(points[::-1], 8)))
emu.free(inp)
emu.free(out)

# %% [markdown]
# ## The same call through hetlab
#
# `FpsDriver` is the code above written once against the device protocol: it runs unchanged on a
# `PynqDevice` (a real board) and on the `Emulator`. `hl.fps(..., device="fpga")` uses it.

# %%
print(np.array_equal(FpsDriver(Emulator("pynq-z2"))(points, 64), hl.fps(points, 64)))
print(np.array_equal(hl.fps(points, 64, device="fpga"), hl.fps(points, 64)))

# %% [markdown]
# ## The modeled time, broken down
#
# A pipelined HLS loop takes `depth + II·(trip − 1)` cycles; loops compose; data movement is
# bounded by the narrower of the kernel's port and the board's DDR; each call pays its register
# writes from Python (about 30 µs each on a PYNQ-Z2). Sources for every figure are in
# `overlays/fps/overlay.toml`.

# %%
for board in ("pynq-z2", "kv260"):
    for n in (4_096, 16_384):
        print(model("fps", board, n=n, n_samples=1024, start=0))

# %% [markdown]
# In a comparison the FPGA's figures carry `source="modeled"` and are drawn dashed:

# %%
# NBVAL_IGNORE_OUTPUT
ds = hl.compare(hl.fps, sizes=[2_000, 8_000], devices=["numpy", "numba", "fpga"], repeats=3,
                include_recorded=True)
print(ds["source"].to_series().to_dict())
ds.hetlab.plot("time_s")

# %% [markdown]
# ## What changes on a real board
#
# * Build the bitstream with `make -C overlays/_build OVERLAY=fps` (Vitis HLS + Vivado), copy
#   `fps.bit`/`fps.hwh` to the board, and the same driver runs through `PynqDevice`.
# * `python -m hetlab.fpga.selftest --board pynq-z2` runs the overlay against the emulator bit
#   for bit and writes calibration data, so the model's figures can be checked against real runs.
# * Then the `fpga` rows of a comparison are `measured`, not `modeled`.
#
# ## Exercises
#
# Each exercise is a stub for you to fill in and a checker from `hetlab.exercises` that stops at
# the first wrong case with a hint (which input, what was expected, what came, what to look at).
# The checkers are called with `raise_on_fail=False`, so the stub's verdict is shown, not raised.
# Solutions are in `notebooks/solutions/` — try first.
#
# ### Exercise 05.1 · A pipelined loop's cycles
#
# Fill in `pipelined_cycles(depth, ii, trip)`: the cycles an HLS loop pipelined with initiation
# interval `ii` takes for `trip` iterations when one iteration is `depth` cycles deep — the
# first formula of *The modeled time, broken down* above.

# %%
from hetlab.exercises import check_fps_by_hand, check_pipelined_cycles  # noqa: E402


def pipelined_cycles(depth, ii, trip):
    """Cycles of a pipelined loop (int)."""
    raise NotImplementedError("your code here")


check_pipelined_cycles(pipelined_cycles, raise_on_fail=False)

# %% [markdown]
# ### Exercise 05.2 · Drive the overlay, and do not forget the flush
#
# Fill in `fps_by_hand(emu, points, n_samples)` from *Driving it by hand* above, as one
# function: load the `fps` IP, allocate the buffers, write the registers, start, poll, read the
# samples (start at point 0) and free the buffers. The checker runs it on a fresh **strict**
# emulator, where a forgotten `flush()` or `invalidate()` gives a wrong answer as on a board,
# and tells you if that is what went wrong.

# %%
def fps_by_hand(emu, points, n_samples):
    """Emulator, (n, 3) float32 points, n_samples → (n_samples,) int indices from the IP."""
    raise NotImplementedError("your code here")


check_fps_by_hand(fps_by_hand, raise_on_fail=False)

# %% [markdown]
# ## Try it
#
# Change `n_samples` in the model and find where the per-call launch cost stops mattering.
#
# ## Shutting down
#
# The cell below frees the emulator and the comparison; then choose **Kernel → Shut Down Kernel** (or **Shut Down**
# beside this notebook in the *Running Terminals and Kernels* panel) before opening the next
# notebook.

# %%
import gc  # noqa: E402

del emu, ip, ds, points, by_hand
print("freed; objects collected:", gc.collect() >= 0)
