"""Headless locust against a real gateway and simulated replicas (~20 s of locust time): the
trace replay as ``duet bench slo`` runs it, then every task user under locust's own -u/-t."""

import csv
import json
import subprocess
import sys
import urllib.request
from pathlib import Path

from gateway.fleet.world.replica_sets import REPLICA_SETS, variant_map
from loadtests.benchmarks.slo.bench import LOCUSTFILE, BenchSettings, run_one
from loadtests.launch.stack import gateway, replicas
from loadtests.scoring.slo import DEFAULT_SLOS

SMOKE = REPLICA_SETS["smoke"]


def stats_rows(prefix: Path) -> list[dict[str, str]]:
    with open(f"{prefix}_stats.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def requests_of(rows, kind):
    return {r["Name"]: int(r["Request Count"]) for r in rows if r["Type"] == kind}


def test_trace_replay_through_duet_reports_ttft_events_and_slo_fields(tmp_path):
    settings = BenchSettings(replica_set=SMOKE, slos=DEFAULT_SLOS, duration_s=10.0, trace_users=50)
    summary = run_one(settings, "duet", 1.0, tmp_path)

    rows = stats_rows(tmp_path / "locust")
    aggregated = next(r for r in rows if r["Name"] == "Aggregated")
    assert int(aggregated["Failure Count"]) == 0
    ttft, tpot, posts = requests_of(rows, "TTFT"), requests_of(rows, "TPOT"), requests_of(rows, "POST")
    assert set(ttft) == {"coding", "chat"} and all(n > 0 for n in ttft.values())
    assert set(tpot) == {"coding", "chat"}
    assert sum(posts.values()) == summary["overall"]["requests"] > 20
    assert ttft["chat"] == posts["chat [chat]"]  # every streamed answer had a first token

    overall = summary["overall"]
    assert overall["failed"] == 0 and overall["unfinished"] == 0
    assert 0.0 <= overall["attainment"] <= 1.0 and overall["met_slo"] == round(overall["attainment"] * overall["requests"])
    assert overall["goodput_rps"] > 0 and overall["cost_per_1k_requests_usd"] > 0
    assert sum(overall["variant_mix"].values()) == 1.0 and set(overall["variant_mix"]) <= {"standard", "fast"}
    assert overall["ttft_ms"]["p50"] is not None and overall["tpot_ms"]["p90"] is not None
    assert {p.name for p in tmp_path.glob("*.png")} >= {"slo_attainment_by_task.png", "ttft_tpot_cdf_by_variant.png"}
    assert (tmp_path / "locust.html").stat().st_size > 10_000
    # Natural lengths: the simulator ended each answer at its traced length, which no field the
    # gateway reads carried (tests/loadtests/load/test_scenarios.py checks the bodies)
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert records and all(r["output_tokens"] == r["wanted_output_tokens"] for r in records)


def test_every_task_user_under_plain_users_and_run_time(tmp_path):
    with replicas(SMOKE, 1.0, 0) as urls, gateway("duet", SMOKE, urls, 1.0, tmp_path, None, "sk-duet") as url:
        command = [
            sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--host", url, "-u", "8", "-r", "8",
            "-t", "8s", "--duet-model", SMOKE.model,  # no --duet-max-context: read from /v1/models
            "--duet-variant-map", ",".join(f"{k}={v}" for k, v in variant_map(SMOKE, urls).items()),
            "--csv", str(tmp_path / "users"), "--only-summary", "--loglevel", "WARNING",
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=LOCUSTFILE.parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{SMOKE.model} takes {SMOKE.max_context:,} tokens (/v1/models)" in done.stderr
    assert "trace entries scaled down to fit the 4,096-token context" in done.stderr
    rows = stats_rows(tmp_path / "users")
    assert int(next(r for r in rows if r["Name"] == "Aggregated")["Failure Count"]) == 0
    posts = requests_of(rows, "POST")
    # weights 2:3:1:1 over 8 users: every class runs at least one user
    assert {"chat [coding]", "chat [chat]", "chat [agent]", "chat [extraction]"} <= set(posts)
    assert set(requests_of(rows, "TTFT")) == {"coding", "chat", "agent", "extraction"}


def prefix_cache_hits(url: str) -> float:
    text = urllib.request.urlopen(f"{url}/metrics", timeout=10).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("vllm:prefix_cache_hits_total"))


def test_session_users_resend_their_history_through_the_gateway(tmp_path):
    with replicas(SMOKE, 1.0, 0) as urls, gateway("duet", SMOKE, urls, 1.0, tmp_path, None, "sk-duet") as url:
        command = [
            sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "ConversationUser", "AgentLoopUser", "--headless",
            "--host", url, "-u", "4", "-r", "4", "-t", "8s", "--duet-model", SMOKE.model,
            "--duet-records", str(tmp_path / "records.jsonl"),
            "--csv", str(tmp_path / "sessions"), "--only-summary", "--loglevel", "WARNING",
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=LOCUSTFILE.parents[1])
        hits = sum(prefix_cache_hits(u) for variant_urls in urls.values() for u in variant_urls)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = stats_rows(tmp_path / "sessions")
    assert int(next(r for r in rows if r["Name"] == "Aggregated")["Failure Count"]) == 0
    posts = requests_of(rows, "POST")
    assert set(posts) == {"chat [chat]", "chat [agent]"}  # only the named users ran
    # more requests than users: later turns ran, and they found their history in a replica's cache
    assert sum(posts.values()) > 8 and hits > 0
