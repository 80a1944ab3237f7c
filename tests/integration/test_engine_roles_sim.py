"""Engine roles end to end: a gateway in front of a prefill-role and a both-role replica of one
variant (simulated, real processes on loopback) sends clients' requests only to the one that
serves them whole; the prefill replica, which would never write an answer, gets none."""

from __future__ import annotations

import httpx
import yaml

from loadtests.launch.gateway_process import GatewayProcess
from serving.sim.server.testing import SimProcess

from .cluster import demo_config

MESSAGES = [{"role": "user", "content": "Say hello in five words."}]


def test_a_prefill_replica_never_takes_a_clients_request(tmp_path) -> None:
    with SimProcess("cpu-smollm2-bf16", "--served-model-name", "smollm2-standard", "--role", "prefill",
                    "--time-scale", "50") as prefill, \
            SimProcess("fast-test", "--served-model-name", "smollm2-standard") as whole, \
            SimProcess("fast-test", "--served-model-name", "smollm2-fast") as fast:
        raw = demo_config({"standard": whole.url, "fast": fast.url})
        raw["models"]["smollm2"]["variants"]["standard"]["replicas"] = [
            {"url": prefill.url, "engine": {"role": "prefill", "kv_connector": "NixlConnector"}},
            {"url": whole.url, "engine": {"role": "both", "kv_connector": "NixlConnector"}},
        ]
        raw["routing"]["plugins"].append({"type": "engine-role", "name": "engine-role"})
        for profile in raw["routing"]["profiles"].values():
            profile["filters"].append("engine-role")
        config = tmp_path / "duet.yaml"
        config.write_text(yaml.safe_dump(raw, sort_keys=False))
        with GatewayProcess(config, log_path=tmp_path / "gateway.log") as gateway:
            replicas = set()
            for _ in range(8):
                response = httpx.post(f"{gateway.url}/v1/chat/completions", timeout=20,
                                      json={"model": "smollm2:standard", "messages": MESSAGES, "max_tokens": 8})
                assert response.status_code == 200, response.text
                replicas.add(response.headers["x-duet-replica"])
            assert replicas == {"smollm2/standard/1"}
            gateway_metrics = httpx.get(f"{gateway.url}/metrics", timeout=10).text
        # never ranked first and refused: no request fell back from it
        assert not [line for line in gateway_metrics.splitlines()
                    if line.startswith("duet_fallbacks_total") and not line.rstrip().endswith(" 0.0")]
        metrics = httpx.get(f"{prefill.url}/metrics", timeout=10).text
    assert 'role="prefill"' in metrics
    assert not any(line.startswith("vllm:request_success_total") and not line.rstrip().endswith(" 0.0")
                   for line in metrics.splitlines())
