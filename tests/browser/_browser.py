"""What the browser tests share: the Chromium binary and a free local port."""

from __future__ import annotations

import shutil
import socket

import pytest


def chromium() -> str:
    """Path of the system Chromium (scripts/install_browser.sh); skip the test without one."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("chromium is not installed (run scripts/install_browser.sh)")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
