"""`duet up --sim` starts each replica the demo config lists with its engine: the simulator's
role and budget flags, and a gateway config whose replicas keep their engines."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from gateway.cli.local.replicas import demo_replicas, sim_engine_args, sim_launch
from gateway.cli.local.up import DEMO_CONFIG, gateway_config, read_policy
from gateway.config import parse_config
from gateway.domain import EngineRole
from serving.supervisor import ReplicaLaunch

NIXL = "NixlConnector"


def p_d_demo() -> dict[str, Any]:
    demo = copy.deepcopy(read_policy(DEMO_CONFIG))
    demo["routing"]["plugins"].append({"type": "engine-role", "name": "engine-role"})
    for profile in demo["routing"]["profiles"].values():
        profile["filters"].append("engine-role")
    demo["models"]["smollm2"]["variants"]["standard"]["replicas"] = [
        {"url": "http://127.0.0.1:8101", "engine": {"role": "prefill", "kv_connector": NIXL, "max_num_batched_tokens": 4096}},
        {"url": "http://127.0.0.1:8103", "engine": {"role": "decode", "kv_connector": NIXL, "max_num_seqs": 64}},
    ]
    return demo


def test_the_simulators_flags_for_an_engine_section() -> None:
    assert sim_engine_args("fcfs") == ("--scheduling-policy", "fcfs")
    assert sim_engine_args("priority", {"role": "decode", "kv_connector": NIXL, "max_num_seqs": 64}) == (
        "--scheduling-policy", "priority", "--role", "decode", "--max-num-seqs", "64")
    flags = sim_engine_args("fcfs", {"role": "prefill", "kv_connector": NIXL, "max_num_batched_tokens": 4096})
    launch = sim_launch("standard-0", "cpu-smollm2-bf16", "s", 1.0, Path("/tmp"), flags)
    assert launch.argv[-4:] == ("--role", "prefill", "--max-num-batched-tokens", "4096")


def test_a_variant_with_several_replicas_launches_each_by_its_index() -> None:
    names = [(launch, variant, (engine or {}).get("role")) for launch, variant, _, engine in demo_replicas(p_d_demo())]
    assert names == [("standard-0", "standard", "prefill"), ("standard-1", "standard", "decode"), ("fast", "fast", None)]


def test_the_gateway_config_keeps_each_replicas_engine_and_loads() -> None:
    demo = p_d_demo()
    launches = [ReplicaLaunch(name, ("true",), {}, f"http://127.0.0.1:{9000 + i}", Path("/dev/null"))
                for i, (name, *_rest) in enumerate(demo_replicas(demo))]
    config = gateway_config(demo, launches, [], "127.0.0.1", 8000)
    loaded = parse_config(yaml.safe_dump(config, sort_keys=False))
    roles = {r.url: r.engine.role for r in loaded.replicas}
    assert roles == {"http://127.0.0.1:9000": EngineRole.PREFILL, "http://127.0.0.1:9001": EngineRole.DECODE,
                     "http://127.0.0.1:9002": EngineRole.BOTH}
    assert demo["models"]["smollm2"]["variants"]["standard"]["replicas"][0]["url"] == "http://127.0.0.1:8101"  # untouched
