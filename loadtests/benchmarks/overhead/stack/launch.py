"""What a gateway under test is: how it is started, where it listens, which version it is.

``GatewayLaunch`` is plain data; ``duet.py`` and ``peers.py`` build one per gateway and
``measure/run.py`` starts it pinned to the gateway core.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

VERSION_SCRIPT = "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))"


@dataclass(frozen=True, slots=True)
class GatewayLaunch:
    """A gateway ready to start: the command (without taskset), its env, its URL and version."""

    name: str
    command: tuple[str, ...]
    base_url: str
    version: str
    env: Mapping[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 60.0
    # Processes the gateway needs beside it (Envoy's endpoint picker), started first on its core.
    companions: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A gateway that cannot run here, and why (shown in the table instead of numbers)."""

    name: str
    reason: str


def distribution_version(python: Path, distribution: str) -> str:
    """The installed version of ``distribution`` in the environment of ``python``."""
    done = subprocess.run([str(python), "-c", VERSION_SCRIPT, distribution],
                          capture_output=True, text=True, timeout=60, check=False)
    return done.stdout.strip() if done.returncode == 0 else "unknown"
