"""Read launch profiles from YAML, strictly: an unknown key, a wrong type or a name that differs
from the file's stem is an error naming the file and the key (``fast-int4.yaml: engine_args: ...``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from serving.errors import LaunchProfileError
from serving.launch.profile import EngineValue, LaunchProfile, ModelSource, Resources

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
# Where a profile's ``parity_reports`` paths start: the reports ship with the package (parity/), so
# an installed copy applies the same evidence as a clone. Each is the parity.json a real run wrote
# (its full output, items and plot, under docs/parity-real/).
PARITY_ROOT = PROFILE_DIR.parent
FlagName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Model(_Strict):
    hub: StrictStr | None = None
    local: Literal["bf16", "w4a16", "w8a8-int8", "fp8-dynamic"] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> _Model:
        if (self.hub is None) == (self.local is None):
            raise ValueError("give exactly one of hub (a checkpoint id) or local (a build of the local model)")
        return self


class _Resources(_Strict):
    gpus: Annotated[int, Field(ge=0)]
    cpu: StrictStr
    memory: StrictStr


class _Profile(_Strict):
    name: StrictStr
    description: StrictStr
    device: Literal["gpu", "cpu"]
    variant: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$")]
    kind: Literal["full", "quantized", "speculative"]
    model: _Model
    engine_args: dict[FlagName, StrictStr | StrictInt | StrictBool | dict[str, object]]
    env: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    resources: _Resources
    sim_profile: StrictStr | None = None
    known_wrong: StrictStr | None = None
    requires: list[StrictStr] = Field(default_factory=list)
    cpu_flags: list[StrictStr] = Field(default_factory=list)
    parity_reports: list[StrictStr] = Field(default_factory=list)

    @field_validator("engine_args")
    @classmethod
    def _flags_are_set(cls, engine_args: dict[str, EngineValue]) -> dict[str, EngineValue]:
        off = [name for name, value in engine_args.items() if value is False]
        if off:
            raise ValueError(f"{off}: false is not a flag; leave the key out")
        return engine_args


def parse_profile(text: str, source: str) -> LaunchProfile:
    """One profile from YAML text; ``source`` (the file name) prefixes every error."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise LaunchProfileError(source, f"not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise LaunchProfileError(source, "must hold a mapping at the top")
    try:
        parsed = _Profile.model_validate(raw)
    except ValidationError as exc:
        # An unknown key says more than the "field required" that a misspelt key also causes.
        error = min(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        key = ".".join(str(part) for part in error["loc"] if part != "[key]")
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        raise LaunchProfileError(f"{source}: {key}", message) from exc
    return _profile(parsed)


def _profile(parsed: _Profile) -> LaunchProfile:
    return LaunchProfile(
        name=parsed.name, description=parsed.description, device=parsed.device, variant=parsed.variant,
        kind=parsed.kind, model=ModelSource(hub=parsed.model.hub, local=parsed.model.local),
        engine_args=tuple(parsed.engine_args.items()), env=tuple(parsed.env.items()),
        resources=Resources(parsed.resources.gpus, parsed.resources.cpu, parsed.resources.memory),
        sim_profile=parsed.sim_profile, known_wrong=parsed.known_wrong, requires=tuple(parsed.requires),
        cpu_flags=tuple(parsed.cpu_flags), parity_reports=tuple(parsed.parity_reports),
    )


def load_profile(path: Path) -> LaunchProfile:
    """The profile in ``path``; its ``name`` must be the file's stem (that is how it is looked up)."""
    profile = parse_profile(path.read_text(encoding="utf-8"), path.name)
    if profile.name != path.stem:
        raise LaunchProfileError(f"{path.name}: name", f"'{profile.name}' must match the file name '{path.stem}'")
    return profile


def load_profiles(directory: Path = PROFILE_DIR) -> Mapping[str, LaunchProfile]:
    """Every ``*.yaml`` profile in ``directory`` by name. Two profiles of one device may not claim
    the same variant name (``duet up --variants`` picks by it)."""
    profiles = {p.name: p for p in (load_profile(path) for path in sorted(directory.glob("*.yaml")))}
    seen: dict[tuple[str, str], str] = {}
    for profile in profiles.values():
        other = seen.setdefault((profile.device, profile.variant), profile.name)
        if other != profile.name:
            raise LaunchProfileError(f"{profile.name}.yaml: variant",
                                     f"'{profile.variant}' is already the variant of {other}.yaml")
    return profiles


def by_variant(profiles: Mapping[str, LaunchProfile], device: str, variant: str) -> LaunchProfile:
    """The ``device`` profile serving as ``variant``; the error lists the known variant names."""
    for profile in profiles.values():
        if profile.device == device and profile.variant == variant:
            return profile
    known = sorted(p.variant for p in profiles.values() if p.device == device)
    raise LaunchProfileError("", f"unknown {device} variant '{variant}' (known: {', '.join(known)})")
