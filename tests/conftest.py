"""Shared fixtures: a ``backend`` fixture over every registered backend, marked and skipped
from one probe, and seeded generators."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab.core.registry import get_backend


def backend_params(kernel: str | None = None) -> list:
    """pytest params over the backends (optionally those implementing ``kernel``).

    Unavailable backends stay in the list, skipped with the backend's own reason, so the
    report shows why a device was not tested.
    """
    from hetlab.core.registry import supported_backends

    params = []
    names = hl.backend_names() if kernel is None else supported_backends(kernel)
    for name in names:
        b = get_backend(name)
        marks = [getattr(pytest.mark, b.kind)] if b.kind in ("gpu", "fpga") else []
        reason = b.why_not()
        if reason is not None:
            marks.append(pytest.mark.skip(reason=f"{name}: {reason}"))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)
