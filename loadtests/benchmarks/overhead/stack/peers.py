"""The peers Duet is measured against, each from its own venv and pinned to one core:

- LiteLLM's proxy (``litellm[proxy]``): one uvicorn worker, one OpenAI-compatible model entry
  pointing at the backend, no database, logging and callbacks off.
- ``vllm-router`` (PyPI): a Rust router (``vllm_router_rs``, tokio inside a Python launcher)
  with the backend as its only worker. At start it polls each worker's ``/health`` until it
  answers, every ``--worker-startup-check-interval`` seconds (30 by default: set to 1 here).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from loadtests.benchmarks.overhead.stack.canned import API_KEY, LOGICAL_MODEL, SERVED_MODEL_NAME
from loadtests.benchmarks.overhead.stack.launch import GatewayLaunch, Unavailable, distribution_version


def litellm_config(backend_url: str) -> dict[str, object]:
    """LiteLLM proxy config: ``smollm2`` -> the backend as an OpenAI-compatible provider."""
    return {
        "model_list": [{
            "model_name": LOGICAL_MODEL,
            "litellm_params": {"model": f"openai/{SERVED_MODEL_NAME}", "api_base": f"{backend_url}/v1",
                               "api_key": "sk-bench"},
        }],
        "litellm_settings": {"set_verbose": False, "json_logs": False, "turn_off_message_logging": True,
                             "drop_params": True, "callbacks": [], "success_callback": [],
                             "failure_callback": []},
        "general_settings": {"master_key": API_KEY, "disable_spend_logs": True, "disable_error_logs": True},
    }


def litellm_launch(venv: Path, run_dir: Path, backend_url: str, port: int) -> GatewayLaunch | Unavailable:
    """LiteLLM's proxy on ``port`` with one worker, or why it is unavailable."""
    executable = venv / "bin" / "litellm"
    if not executable.exists():
        return Unavailable("litellm", f"{executable} missing (make bench-overhead installs it)")
    config_path = run_dir / "litellm.yaml"
    config_path.write_text(yaml.safe_dump(litellm_config(backend_url), sort_keys=False))
    command = (str(executable), "--config", str(config_path), "--host", "127.0.0.1", "--port", str(port),
               "--num_workers", "1")
    env = {
        "LITELLM_LOG": "ERROR",
        # The cost map is otherwise fetched from the internet at import.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_MODE": "PRODUCTION",
        "DISABLE_ADMIN_UI": "True",
        "PYTHONUNBUFFERED": "1",
    }
    return GatewayLaunch(name="litellm", command=command, base_url=f"http://127.0.0.1:{port}",
                         version=distribution_version(venv / "bin" / "python", "litellm"), env=env,
                         startup_timeout_s=180.0)


def vllm_router_launch(venv: Path, backend_url: str, port: int, metrics_port: int) -> GatewayLaunch | Unavailable:
    """vllm-router on ``port`` with the backend as its only worker, or why it is unavailable."""
    executable = venv / "bin" / "vllm-router"
    if not executable.exists():
        return Unavailable("vllm-router", f"{executable} missing (make bench-overhead installs it)")
    command = (
        str(executable), "--host", "127.0.0.1", "--port", str(port), "--worker-urls", backend_url,
        # Its default policy (cache_aware: a prefix tree updated per request), as deployed.
        "--worker-startup-check-interval", "1", "--log-level", "warning",
        "--prometheus-port", str(metrics_port),
    )
    return GatewayLaunch(name="vllm-router", command=command, base_url=f"http://127.0.0.1:{port}",
                         version=distribution_version(venv / "bin" / "python", "vllm-router"),
                         startup_timeout_s=60.0)
