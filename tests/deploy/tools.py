"""Debian's validation tools (kubectl, promtool, prometheus): found or the test is skipped with
the make target that installs them."""

from __future__ import annotations

import shutil

import pytest


def require(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.skip(f"{binary} not installed (make deploy-tools)")
    return path
