"""Profiles: every shipped one loads; invalid ones fail naming the path."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving.sim.profile import PROFILES_DIR, ProfileError, available_profiles, load_profile

REQUIRED = {"h100-70b-bf16", "h100-70b-fp8", "h100-70b-w4a16", "h100-70b-ngram", "h100-70b-eagle3",
            "cpu-smollm2-bf16", "cpu-smollm2-int8", "cpu-smollm2-int4", "cpu-smollm2-ngram", "cpu-smollm2-bnb4", "fast-test"}


def test_required_profiles_ship() -> None:
    assert REQUIRED <= set(available_profiles())


@pytest.mark.parametrize("name", available_profiles())
def test_every_shipped_profile_loads_and_cites_sources(name: str) -> None:
    profile = load_profile(name)
    assert profile.name == name
    assert (profile.kind == "speculative") == (profile.speculation is not None)
    if name != "fast-test":  # every number of a real profile carries its source in a comment
        assert (PROFILES_DIR / f"{name}.yaml").read_text().count("#") >= 5


def write(tmp_path: Path, old: str, new: str) -> str:
    text = (PROFILES_DIR / "fast-test.yaml").read_text().replace(old, new)
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("old, new, where", [
    ("  base_s: 0.0005", "  base_s: 0.0005\n  turbo: true", "step.turbo"),
    ("  base_s: 0.0005\n", "", "step.base_s"),
    ("  max_num_seqs: 256", "  max_num_seqs: many", "engine.max_num_seqs"),
    ("kind: full", "kind: magic", "kind"),
    ("  kv_cache_tokens: 1048576", "  kv_cache_tokens: 100", "engine.kv_cache_tokens"),
])
def test_invalid_profiles_name_the_path(tmp_path: Path, old: str, new: str, where: str) -> None:
    with pytest.raises(ProfileError) as error:
        load_profile(write(tmp_path, old, new))
    assert error.value.path == where


def test_unknown_profile_lists_the_shipped_ones() -> None:
    with pytest.raises(ProfileError, match="h100-70b-bf16"):
        load_profile("no-such-profile")
