"""How ``duet up`` launches a real replica (``gateway.cli.local.replicas.real_launch``): private
temp dirs per run, torch.compile's kernels kept between runs per CPU class."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.cli.local.replicas import real_launch
from gateway.cli.local.up import DEMO_CONFIG, read_policy
from serving.hardware import cpu_class
from serving.launch import by_variant, load_profiles
from serving.launch.local import host_cpu_flags
from serving.local_model import LocalModelPaths


@pytest.fixture(autouse=True)
def no_user_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)


def launch_env(tmp_path: Path, run: str) -> dict[str, str]:
    profile = by_variant(load_profiles(), "cpu", "standard")
    launch = real_launch(profile, 0, LocalModelPaths(tmp_path / "cache"), read_policy(DEMO_CONFIG),
                         Path("/no/python"), tmp_path / run)
    return dict(launch.env)


def test_each_run_gets_private_temp_dirs_and_shares_the_compiled_kernels_of_its_cpu_class(tmp_path: Path) -> None:
    first, second = launch_env(tmp_path, "run-1"), launch_env(tmp_path, "run-2")
    assert first["TMPDIR"] != second["TMPDIR"] and first["TMPDIR"].startswith(str(tmp_path / "run-1"))
    kernels = tmp_path / "cache" / "compile" / cpu_class(host_cpu_flags())
    assert first["TORCHINDUCTOR_CACHE_DIR"] == second["TORCHINDUCTOR_CACHE_DIR"] == str(kernels)
    assert kernels.is_dir()  # made before the replica starts


def test_a_users_own_kernel_cache_stands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    assert launch_env(tmp_path, "run")["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")
