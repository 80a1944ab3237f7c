"""The replica launcher: argv/env as data (fast), process-tree handling against a stand-in server
(fast), and a real start/stop (slow, needs .venv-vllm); vLLM's own parser checks the argv in
tests/serving/launch/test_vllm_parser.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from serving.errors import ReplicaFailed
from serving.ports import free_port
from serving.vllm_replica import (
    NgramSpeculation,
    ReplicaSpec,
    group_alive,
    health_status,
    replica_argv,
    replica_env,
    running_replica,
    socket_safe_tmpdir,
    start_process,
    stop,
    wait_healthy,
)

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
VLLM_READY = REPO / ".venv-vllm" / ".installed"


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_argv_starts_the_api_server_module_with_the_local_model_settings() -> None:
    spec = ReplicaSpec(Path("/m/smol"), "smollm2-standard", port=8123)
    argv = replica_argv(spec, Path("/venv/bin/python"))
    assert argv[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert option(argv, "--model") == "/m/smol"
    assert option(argv, "--served-model-name") == "smollm2-standard"
    assert option(argv, "--port") == "8123"
    assert option(argv, "--host") == "127.0.0.1"
    assert option(argv, "--dtype") == "bfloat16"
    assert option(argv, "--max-model-len") == "2048"
    assert "--enforce-eager" not in argv
    assert "--speculative-config" not in argv


def test_argv_carries_ngram_speculation_eager_mode_and_extra_args() -> None:
    spec = ReplicaSpec(
        Path("/m"), "fast", port=1, enforce_eager=True,
        speculation=NgramSpeculation(num_speculative_tokens=3, prompt_lookup_max=5, prompt_lookup_min=2),
        extra_args=("--max-num-seqs", "16"),
    )
    argv = replica_argv(spec, Path("py"))
    assert json.loads(option(argv, "--speculative-config")) == {
        "method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 5, "prompt_lookup_min": 2,
    }
    assert "--enforce-eager" in argv
    assert argv[-2:] == ["--max-num-seqs", "16"]


def test_ngram_config_leaves_unset_lookup_min_to_vllm() -> None:
    assert "prompt_lookup_min" not in NgramSpeculation().as_config()


def test_env_binds_one_core_one_thread_and_private_dirs(tmp_path: Path) -> None:
    spec = ReplicaSpec(Path("/m"), "x", port=1, core=1, kv_cache_gb=2)
    env = replica_env(spec, tmp_path / "r1", {"PATH": "/bin", "OMP_NUM_THREADS": "8"})
    assert env["PATH"] == "/bin"
    assert env["VLLM_CPU_OMP_THREADS_BIND"] == "1"
    assert env["OMP_NUM_THREADS"] == "1"
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["VLLM_HOST_IP"] == "127.0.0.1"
    assert env["TMPDIR"] == str(tmp_path / "r1" / "tmp")
    assert env["VLLM_CACHE_ROOT"] == str(tmp_path / "r1" / "vllm-cache")
    assert env["VLLM_USE_AOT_COMPILE"] == "0"  # a restart took longer with it (issue #39)


def test_a_tmpdir_too_deep_for_vllms_ipc_sockets_is_replaced_by_a_short_private_one(tmp_path: Path) -> None:
    short = tmp_path / "tmp"
    assert socket_safe_tmpdir(short) == short or len(str(short)) > 70
    deep = tmp_path / ("d" * 80) / "tmp"
    replaced = socket_safe_tmpdir(deep)
    try:
        assert replaced != deep and replaced.is_dir() and len(str(replaced)) + 37 <= 107
        assert replaced.stat().st_mode & 0o077 == 0  # private, as mkdtemp makes it
    finally:
        replaced.rmdir()


def test_compiled_kernels_stay_private_unless_a_kept_cache_is_named(tmp_path: Path) -> None:
    spec = ReplicaSpec(Path("/m"), "x", port=1, core=None)
    assert "TORCHINDUCTOR_CACHE_DIR" not in replica_env(spec, tmp_path, {})  # Inductor's default: under TMPDIR
    kept = replica_env(spec, tmp_path, {}, compile_cache=tmp_path / "kernels")
    assert kept["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "kernels")
    assert kept["TMPDIR"] == str(tmp_path / "tmp")  # IPC files stay private either way


def test_env_without_a_core_leaves_binding_to_vllm(tmp_path: Path) -> None:
    env = replica_env(ReplicaSpec(Path("/m"), "x", port=1, core=None), tmp_path, {})
    assert env["VLLM_CPU_OMP_THREADS_BIND"] == "auto"


# A stand-in for the API server: answers /health and, like vLLM, runs a child process.
STAND_IN = textwrap.dedent("""
    import http.server, subprocess, sys
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print("child", child.pid, flush=True)
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
""")


def child_pid(log: Path) -> int:
    """The stand-in's child pid, once it has printed it."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if line.startswith("child "):
                return int(line.split()[1])
        time.sleep(0.05)
    raise AssertionError("stand-in never reported its child")


def test_start_wait_and_stop_end_the_whole_process_tree(tmp_path: Path) -> None:
    spec = ReplicaSpec(Path("/m"), "x", port=free_port())
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    log = tmp_path / "replica.log"
    replica = start_process(spec, [sys.executable, str(script), str(spec.port)], os.environ, log)
    try:
        assert wait_healthy(replica, timeout_s=20, poll_s=0.05) >= 0
        child = child_pid(log)
        assert health_status(spec.base_url) == 200
    finally:
        stop(replica, grace_s=5)
    assert replica.process.returncode is not None
    assert not group_alive(replica.pid)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text()
    assert health_status(spec.base_url) is None


def test_a_replica_that_dies_fails_fast_with_its_log(tmp_path: Path) -> None:
    spec = ReplicaSpec(Path("/m"), "x", port=free_port())
    argv = [sys.executable, "-c", "print('engine core failed to start'); raise SystemExit(3)"]
    replica = start_process(spec, argv, os.environ, tmp_path / "replica.log")
    with pytest.raises(ReplicaFailed, match="engine core failed to start"):
        wait_healthy(replica, timeout_s=20, poll_s=0.05)
    assert stop(replica, grace_s=5) == 3


def test_a_replica_that_never_answers_times_out(tmp_path: Path) -> None:
    spec = ReplicaSpec(Path("/m"), "x", port=free_port())
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    replica = start_process(spec, argv, os.environ, tmp_path / "replica.log")
    try:
        with pytest.raises(ReplicaFailed, match="no healthy /health"):
            wait_healthy(replica, timeout_s=0.5, poll_s=0.05)
    finally:
        stop(replica, grace_s=5)
    assert not group_alive(replica.pid)


needs_vllm = pytest.mark.skipif(not VLLM_READY.exists(), reason="needs `make vllm-env`")

@pytest.mark.timeout(1200)  # slow when other work shares the 2 cores
@pytest.mark.slow
@needs_vllm
def test_a_real_replica_serves_and_stops_completely(tmp_path: Path) -> None:
    model = subprocess.run([str(VLLM_PYTHON), "-m", "serving.local_model"], cwd=REPO, check=True,
                           capture_output=True, text=True, timeout=600).stdout.strip()
    spec = ReplicaSpec(Path(model), "smollm2", port=free_port(), enforce_eager=True)
    with running_replica(spec, tmp_path, VLLM_PYTHON, timeout_s=240) as replica:
        body = json.dumps({"model": "smollm2", "prompt": "The capital of France is",
                           "max_tokens": 4, "temperature": 0}).encode()
        request = urllib_request(f"{spec.base_url}/v1/completions", body)
        answer = json.loads(request.read())
        assert answer["usage"]["completion_tokens"] == 4
    assert not group_alive(replica.pid)
    assert health_status(spec.base_url) is None


def urllib_request(url: str, body: bytes):  # type: ignore[no-untyped-def]
    import urllib.request

    req = urllib.request.Request(url, body, {"content-type": "application/json"})
    return urllib.request.urlopen(req, timeout=60)
