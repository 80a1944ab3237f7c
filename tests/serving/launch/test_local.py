"""A CPU profile run here: the exact argv and env of its replica, and what is missing said with the
make target that builds it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serving.launch import load_profiles
from serving.launch.local import (
    Missing,
    checkpoint_ready,
    host_cpu_flags,
    local_model_dir,
    local_replica_spec,
    missing_for,
    unsupported_here,
)
from serving.local_model import MARKER_NAME, LocalModelPaths, folder_hash
from serving.vllm_replica import replica_argv, replica_env

PROFILES = load_profiles()


def test_fast_int4_starts_with_exactly_its_profiles_argv_and_env(tmp_path: Path) -> None:
    spec = local_replica_spec(PROFILES["cpu-smollm2-int4"], Path("/c/smollm2-w4a16"), "smollm2-fast-int4",
                              port=8102, core=1, max_model_len=2048)
    assert replica_argv(spec, Path("/v/python")) == [
        "/v/python", "-m", "vllm.entrypoints.openai.api_server",
        "--model", "/c/smollm2-w4a16", "--served-model-name", "smollm2-fast-int4",
        "--host", "127.0.0.1", "--port", "8102", "--max-model-len", "2048",
        "--dtype", "bfloat16", "--seed", "0", "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
        "--scheduling-policy", "priority",
        "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}',
    ]
    env = replica_env(spec, tmp_path, {"PATH": "/bin", "OMP_NUM_THREADS": "8"})
    assert {k: env[k] for k in ("VLLM_CPU_KVCACHE_SPACE", "OMP_NUM_THREADS", "VLLM_CPU_OMP_THREADS_BIND",
                                "HF_HUB_OFFLINE", "VLLM_HOST_IP", "PATH")} == {
        "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1", "VLLM_CPU_OMP_THREADS_BIND": "1",
        "HF_HUB_OFFLINE": "1", "VLLM_HOST_IP": "127.0.0.1", "PATH": "/bin"}


def test_gpu_profiles_do_not_run_here() -> None:
    with pytest.raises(ValueError, match="only cpu profiles"):
        local_replica_spec(PROFILES["h100-70b-bf16"], Path("/m"), "x", 1, 0, 2048)


def test_each_profile_reads_its_build_of_the_local_model(tmp_path: Path) -> None:
    paths = LocalModelPaths(tmp_path)
    assert local_model_dir(PROFILES["cpu-smollm2-bf16"], paths) == paths.model_dir
    assert local_model_dir(PROFILES["cpu-smollm2-ngram"], paths) == paths.model_dir
    assert local_model_dir(PROFILES["cpu-smollm2-int4"], paths) == paths.quantized_dir("w4a16")
    assert local_model_dir(PROFILES["cpu-smollm2-int8"], paths) == paths.quantized_dir("w8a8-int8")


def fake_model(folder: Path, config: dict[str, object]) -> None:
    folder.mkdir(parents=True)
    for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_text("x")
    (folder / "config.json").write_text(json.dumps(config))


def test_missing_things_name_the_make_target_that_builds_them(tmp_path: Path) -> None:
    paths = LocalModelPaths(tmp_path)
    wanted = [PROFILES["cpu-smollm2-bf16"], PROFILES["cpu-smollm2-int4"], PROFILES["cpu-smollm2-ngram"]]
    missing = missing_for(wanted, paths, tmp_path / "no-venv" / "python")
    assert [m.make_target for m in missing] == ["vllm-env", "local-model", "checkpoints"]
    assert "run `make checkpoints`" in str(missing[2]) and "fast-int4" in str(missing[2])


def test_nothing_is_missing_once_built(tmp_path: Path) -> None:
    paths = LocalModelPaths(tmp_path)
    fake_model(paths.model_dir, {"model_type": "llama"})
    (paths.model_dir / MARKER_NAME).write_text(json.dumps({"sha256": folder_hash(paths.model_dir)}))
    fake_model(paths.quantized_dir("w4a16"), {"quantization_config": {"format": "pack-quantized"}})
    python = tmp_path / "python"
    python.write_text("")
    assert missing_for([PROFILES["cpu-smollm2-bf16"], PROFILES["cpu-smollm2-int4"]], paths, python) == []
    assert missing_for([PROFILES["cpu-smollm2-int8"]], paths, python) == [
        Missing(f"the w8a8-int8 checkpoint for fast-int8 ({paths.quantized_dir('w8a8-int8')})", "checkpoints")]


def test_a_checkpoint_without_its_quantization_config_is_not_ready(tmp_path: Path) -> None:
    fake_model(tmp_path / "half", {"model_type": "llama"})
    assert not checkpoint_ready(tmp_path / "half")
    (tmp_path / "half" / "config.json").write_text("{not json")
    assert not checkpoint_ready(tmp_path / "half")


def test_a_plugin_the_profile_requires_must_be_in_the_vllm_venv(tmp_path: Path) -> None:
    paths = LocalModelPaths(tmp_path)
    fake_model(paths.model_dir, {"model_type": "llama"})
    (paths.model_dir / MARKER_NAME).write_text(json.dumps({"sha256": folder_hash(paths.model_dir)}))
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    bnb = PROFILES["cpu-smollm2-bnb4"]
    assert missing_for([bnb], paths, python) == [
        Missing("vllm-bnb-plugin in the vLLM environment (for fast-bnb4)", "vllm-env")]
    (tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "vllm_bnb_plugin-0.0.3.dist-info").mkdir(parents=True)
    assert missing_for([bnb], paths, python) == []


def test_a_profile_built_for_avx512_is_refused_on_a_cpu_without_it(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2\nprocessor\t: 1\nflags\t\t: fpu sse2 avx avx2\n")
    avx2 = host_cpu_flags(cpuinfo)
    assert avx2 == {"fpu", "sse2", "avx", "avx2"}
    assert unsupported_here(PROFILES["cpu-smollm2-int4"], avx2) == (
        "fast-int4 (cpu-smollm2-int4) needs a CPU with avx512f, which this CPU lacks")
    assert unsupported_here(PROFILES["cpu-smollm2-int4"], avx2 | {"avx512f"}) is None
    assert unsupported_here(PROFILES["cpu-smollm2-ngram"], avx2) is None
