"""Profiles load strictly from YAML: unknown keys, wrong types, bad names are errors naming the
file and the key; the shipped profiles all load."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving.launch import LaunchProfileError, by_variant, load_profile, load_profiles
from serving.launch.load import parse_profile

VALID = """
name: cpu-x
description: a test profile
device: cpu
variant: fast-x
kind: quantized
model: {local: w4a16}
engine_args:
  dtype: bfloat16
  seed: 0
  enforce-eager: true
  speculative-config: {method: ngram, num_speculative_tokens: 4}
env: {OMP_NUM_THREADS: "1"}
resources: {gpus: 0, cpu: "1", memory: 5Gi}
"""


def test_a_profile_reads_into_argv_words_in_the_order_written() -> None:
    profile = parse_profile(VALID, "cpu-x.yaml")
    assert profile.args == ("--dtype", "bfloat16", "--seed", "0", "--enforce-eager",
                            "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 4}')
    assert profile.env == (("OMP_NUM_THREADS", "1"),)
    assert (profile.variant, profile.kind, profile.model.local, profile.gpus) == ("fast-x", "quantized", "w4a16", 0)


@pytest.mark.parametrize("edit, key, message", [
    (VALID + "tuning: fast\n", "cpu-x.yaml: tuning", "unknown key"),
    (VALID.replace("resources: {gpus: 0,", "resources: {gpu: 0,"), "cpu-x.yaml: resources.gpu", "unknown key"),
    (VALID.replace("{local: w4a16}", "{local: w4a16, hub: x/y}"), "cpu-x.yaml: model", "exactly one"),
    (VALID.replace("{local: w4a16}", "{local: int3}"), "cpu-x.yaml: model.local", "Input should be"),
    (VALID.replace("device: cpu", "device: tpu"), "cpu-x.yaml: device", "Input should be"),
    (VALID.replace("enforce-eager: true", "enforce-eager: false"), "cpu-x.yaml: engine_args", "leave the key out"),
    (VALID.replace("  seed: 0", "  --seed: 0"), "cpu-x.yaml: engine_args.--seed", "pattern"),
    (VALID.replace('OMP_NUM_THREADS: "1"', "OMP_NUM_THREADS: 1"), "cpu-x.yaml: env.OMP_NUM_THREADS", "string"),
    (VALID.replace("variant: fast-x\n", ""), "cpu-x.yaml: variant", "Field required"),
])
def test_errors_name_the_file_and_the_key(edit: str, key: str, message: str) -> None:
    with pytest.raises(LaunchProfileError) as info:
        parse_profile(edit, "cpu-x.yaml")
    assert info.value.path == key
    assert message in info.value.message


def test_not_yaml_or_not_a_mapping_is_a_clear_error() -> None:
    with pytest.raises(LaunchProfileError, match="not valid YAML"):
        parse_profile("a: [", "bad.yaml")
    with pytest.raises(LaunchProfileError, match="mapping at the top"):
        parse_profile("- 1\n", "bad.yaml")


def test_the_name_must_be_the_file_stem(tmp_path: Path) -> None:
    path = tmp_path / "cpu-y.yaml"
    path.write_text(VALID)
    with pytest.raises(LaunchProfileError, match="must match the file name 'cpu-y'") as info:
        load_profile(path)
    assert info.value.path == "cpu-y.yaml: name"


def test_two_profiles_may_not_claim_one_variant(tmp_path: Path) -> None:
    (tmp_path / "cpu-x.yaml").write_text(VALID)
    (tmp_path / "cpu-z.yaml").write_text(VALID.replace("name: cpu-x", "name: cpu-z"))
    with pytest.raises(LaunchProfileError, match="already the variant of cpu-x.yaml"):
        load_profiles(tmp_path)


def test_the_shipped_profiles_load_and_are_found_by_variant() -> None:
    profiles = load_profiles()
    assert by_variant(profiles, "cpu", "fast-int4").name == "cpu-smollm2-int4"
    assert by_variant(profiles, "gpu", "standard").name == "h100-70b-bf16"
    with pytest.raises(LaunchProfileError, match=r"unknown cpu variant 'turbo' \(known: fast-bnb4, "):
        by_variant(profiles, "cpu", "turbo")


def test_only_the_compiled_int8_profile_is_marked_known_wrong() -> None:
    wrong = {p.name for p in load_profiles().values() if p.known_wrong}
    assert wrong == {"cpu-smollm2-int8-compiled"}
    profiles = load_profiles()
    assert "--enforce-eager" in profiles["cpu-smollm2-int8"].args
    assert "--enforce-eager" not in profiles["cpu-smollm2-int8-compiled"].args
    assert profiles["cpu-smollm2-int8"].model == profiles["cpu-smollm2-int8-compiled"].model


def test_cpu_flags_are_read_from_the_profile() -> None:
    assert parse_profile(VALID + "cpu_flags: [avx512f]\n", "cpu-x.yaml").cpu_flags == ("avx512f",)
    assert parse_profile(VALID, "cpu-x.yaml").cpu_flags == ()


def test_a_profile_schedules_by_priority_only_when_its_engine_args_say_so() -> None:
    assert parse_profile(VALID, "cpu-x.yaml").scheduling == "fcfs"
    priority = VALID.replace("  seed: 0\n", "  seed: 0\n  scheduling-policy: priority\n")
    assert parse_profile(priority, "cpu-x.yaml").scheduling == "priority"
    fcfs = VALID.replace("  seed: 0\n", "  seed: 0\n  scheduling-policy: fcfs\n")
    assert parse_profile(fcfs, "cpu-x.yaml").scheduling == "fcfs"
