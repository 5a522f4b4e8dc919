"""Graded exercises of the notebook series: one checker per exercise.

Each notebook holds 2 stubs (functions that ``raise NotImplementedError("your code here")``);
the learner fills one in and calls its checker. A checker runs the function on hand-made
cases, stops at the first wrong one and gives a hint: which input, what was expected, what
came, and what to look at. Where speed is the point (FPS, SpMV, ball query, kNN) it then runs
``hl.check``'s generated cases and shows the learner's time beside hetlab's backends.
Solutions live in ``notebooks/solutions/``, not in the notebooks.

>>> from hetlab.exercises import check_pipelined_cycles
>>> def pipelined_cycles(depth, ii, trip):
...     raise NotImplementedError("your code here")
>>> print(check_pipelined_cycles(pipelined_cycles, raise_on_fail=False))  # doctest: +ELLIPSIS
NOT YET · 05.1 pipelined_cycles: 0/4 cases right
HINT (case 1 of 4: depth=3, ii=1, trip=100): your function is still the stub ...
"""

from __future__ import annotations

from ._core import Verdict
from .attention import check_best_axis_order, check_online_softmax_step
from .fpga import check_fps_by_hand, check_pipelined_cycles
from .memoff import check_layer_time, check_smallest_prefetch
from .offload import PUZZLE, check_parallel_saxpy, check_verdicts
from .pays import check_break_even, check_pareto_names
from .pointcloud import check_ball_query, check_knn
from .quant import check_bits_per_weight, check_pack3
from .scaling import check_resources_for, check_units_to_run
from .sparse import check_csr_arrays, check_spmv
from .tour import check_fastest_verified, check_fps

__all__ = [
    "EXERCISES", "Verdict", "PUZZLE",
    "check_fps", "check_fastest_verified", "check_verdicts", "check_parallel_saxpy",
    "check_bits_per_weight", "check_pack3", "check_csr_arrays", "check_spmv",
    "check_ball_query", "check_knn", "check_pipelined_cycles", "check_fps_by_hand",
    "check_units_to_run", "check_resources_for", "check_online_softmax_step",
    "check_best_axis_order", "check_break_even", "check_pareto_names", "check_layer_time",
    "check_smallest_prefetch",
]

#: notebook → {name of the learner's function: its checker}, in the order the notebook asks
EXERCISES = {
    "00-tour": {"my_fps": check_fps, "fastest_verified": check_fastest_verified},
    "01-offload-extraction": {"predict_verdicts": check_verdicts,
                              "saxpy_loop": check_parallel_saxpy},
    "02-quantization": {"bits_per_weight": check_bits_per_weight, "my_pack3": check_pack3},
    "03-sparse": {"csr_arrays": check_csr_arrays, "my_spmv": check_spmv},
    "04-point-clouds": {"my_ball_query": check_ball_query, "my_knn": check_knn},
    "05-fpga-overlays": {"pipelined_cycles": check_pipelined_cycles,
                         "fps_by_hand": check_fps_by_hand},
    "06-scaling-out": {"units_to_run": check_units_to_run, "resources_for": check_resources_for},
    "07-attention": {"online_softmax_step": check_online_softmax_step,
                     "best_axis_order": check_best_axis_order},
    "08-which-device-pays": {"break_even": check_break_even, "pareto_names": check_pareto_names},
    "09-memory-offload": {"layer_time": check_layer_time,
                          "smallest_prefetch": check_smallest_prefetch},
}
