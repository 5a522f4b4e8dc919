"""Solutions of notebook 08 (which device pays)."""

import math


def break_even(home_overhead_s, home_slope_s, dev_overhead_s, dev_slope_s):
    """Smallest n >= 1 with dev_overhead + dev_slope·n < home_overhead + home_slope·n."""
    extra_overhead = dev_overhead_s - home_overhead_s   # what the device pays up front
    saved_per_item = home_slope_s - dev_slope_s         # what it wins back per item
    if extra_overhead < 0:
        return 1 if extra_overhead < saved_per_item else None
    if saved_per_item <= 0:
        return None
    return max(math.floor(extra_overhead / saved_per_item) + 1, 1)


def pareto_names(rows):
    """Rows that no other row beats in both time and energy (<= in both, < in one)."""
    front = []
    for name, time_s, energy_j in rows:
        beaten = any(t <= time_s and e <= energy_j and (t < time_s or e < energy_j)
                     for _, t, e in rows)
        if not beaten:
            front.append(name)
    return front
