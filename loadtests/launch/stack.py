"""The processes a benchmark runs against: simulated replicas (or running ones), and a gateway in
front of them — Duet with a policy, or LiteLLM's proxy from its own venv. Each start fails with a
``StackError`` that says what is missing (a port in use, a replica not answering, no LiteLLM)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import yaml

from gateway.fleet.world.policies import LITELLM_POLICY, duet_config, litellm_config
from gateway.fleet.world.prior_error import PriorError
from gateway.fleet.world.replica_sets import ReplicaSet
from loadtests.launch.gateway_process import GatewayProcess
from serving.sim.server.testing import SimProcess

REPO = Path(__file__).resolve().parents[2]
LITELLM_VENV = REPO / ".venv-bench-litellm"


class StackError(RuntimeError):
    """A process the benchmark needs could not be started or reached; the message says which."""


def check_port_free(port: int) -> None:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise StackError(f"port {port} on 127.0.0.1 is in use ({exc.strerror}); pick another with --port") from exc


def check_replica(variant: str, url: str) -> None:
    """Raise unless ``url`` answers vLLM's ``/health`` with 200."""
    try:
        status = httpx.get(f"{url}/health", timeout=3.0).status_code
    except httpx.HTTPError as exc:
        raise StackError(f"replica for variant '{variant}' at {url} is not reachable ({type(exc).__name__}); "
                         "start it or leave out --replica-urls to simulate one") from exc
    if status != 200:
        raise StackError(f"replica for variant '{variant}' at {url} answered /health with {status}")


@contextmanager
def replicas(replica_set: ReplicaSet, time_scale: float, seed: int,
             given: Mapping[str, list[str]] | None = None) -> Iterator[dict[str, list[str]]]:
    """variant -> replica URLs: the ``given`` running ones (checked), else simulated ones started here."""
    if given:
        missing = [v.name for v in replica_set.variants if v.name not in given]
        if missing:
            raise StackError(f"--replica-urls has no URL for variant(s) {', '.join(missing)}")
        for name, variant_urls in given.items():
            for url in variant_urls:
                check_replica(name, url)
        yield dict(given)
        return
    with ExitStack() as stack:
        urls: dict[str, list[str]] = {}
        for index, variant in enumerate(replica_set.variants):
            for copy in range(variant.replicas):
                sim = SimProcess(variant.profile, "--served-model-name", replica_set.served_name(variant.name),
                                 "--time-scale", str(time_scale), "--seed", str(seed + 10 * index + copy), *variant.sim_args)
                try:
                    stack.enter_context(sim)
                except (RuntimeError, TimeoutError) as exc:
                    raise StackError(f"simulated replica {variant.profile} for '{variant.name}' did not start: {exc}") from exc
                urls.setdefault(variant.name, []).append(sim.url)
        yield urls


@contextmanager
def gateway(policy: str, replica_set: ReplicaSet, urls: Mapping[str, list[str]], time_scale: float,
            run_dir: Path, port: int | None, api_key: str, prior_error: PriorError | None = None) -> Iterator[str]:
    """The base URL of a gateway for ``policy`` in front of ``urls``, its speed priors off by
    ``prior_error``, stopped on exit."""
    if port is not None:
        check_port_free(port)
    if policy == LITELLM_POLICY:
        with litellm(replica_set, urls, run_dir, port, api_key) as url:
            yield url
        return
    config_path = run_dir / "duet.yaml"
    config_path.write_text(yaml.safe_dump(duet_config(replica_set, urls, policy, time_scale, prior_error), sort_keys=False))
    try:
        process = GatewayProcess(config_path, port=port, log_path=run_dir / "gateway.log")
        with process:
            yield process.url
    except RuntimeError as exc:
        raise StackError(f"Duet gateway with policy '{policy}' did not start: {exc}") from exc


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def litellm(replica_set: ReplicaSet, urls: Mapping[str, list[str]], run_dir: Path, port: int | None,
            api_key: str) -> Iterator[str]:
    """LiteLLM's proxy (one worker) from ``.venv-bench-litellm`` with latency-based routing."""
    executable = LITELLM_VENV / "bin" / "litellm"
    if not executable.exists():
        raise StackError(f"{executable} is missing: `make bench-slo` (or bench-overhead) installs LiteLLM there")
    port = port or _free_port()
    config_path = run_dir / "litellm.yaml"
    config_path.write_text(yaml.safe_dump(litellm_config(replica_set, urls, api_key), sort_keys=False))
    # Offline: the cost map and tokenizers must come from the package, never the internet.
    env = {**os.environ, "LITELLM_LOG": "ERROR", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "DISABLE_ADMIN_UI": "True",
           "HF_HUB_OFFLINE": "1"}
    command = [str(executable), "--config", str(config_path), "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
    with (run_dir / "litellm.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(process, f"{url}/health/liveliness", run_dir / "litellm.log", timeout_s=180.0)
        yield url
    finally:
        _stop_group(process)


def _wait_ready(process: subprocess.Popen[bytes], url: str, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise StackError(f"LiteLLM exited with {process.returncode}: {log.read_text(errors='replace')[-1500:]}")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)  # polling interval while the proxy imports (it takes seconds)
    raise StackError(f"LiteLLM not ready after {timeout_s} s: {log.read_text(errors='replace')[-1500:]}")


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def warm_up(url: str, model: str, api_key: str, requests: int = 3) -> None:
    """A few short streamed requests before measuring: a proxy's first requests pay for lazy imports
    and connection set-up (LiteLLM's first took ~2 s here), which is not what a run measures."""
    body = {"model": model, "messages": [{"role": "user", "content": "warm up"}], "max_tokens": 4, "stream": True}
    headers = {"authorization": f"Bearer {api_key}"}
    for _ in range(requests):
        try:
            with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, headers=headers, timeout=60.0) as response:
                response.read()
        except httpx.HTTPError as exc:
            raise StackError(f"gateway at {url} failed its warm-up request: {exc}") from exc
        if response.status_code != 200:
            raise StackError(f"gateway at {url} answered its warm-up request with {response.status_code}: {response.text[:300]}")


def scrape(url: str) -> str:
    """A server's Prometheus text, or an empty string when it has none."""
    try:
        response = httpx.get(f"{url}/metrics", timeout=5.0)
    except httpx.HTTPError:
        return ""
    return response.text if response.status_code == 200 else ""
