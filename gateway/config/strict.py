"""What every section of duet.yaml's schema shares: unknown keys refused, defaults read from
the frozen types the running gateway holds, and the constrained numbers they use."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field


def default_of(settings: type, name: str) -> Any:
    """The default the frozen dataclass ``settings`` gives its field ``name``. Read from the
    fields, since a slots dataclass keeps no defaults as class attributes; a field without a
    plain default is a TypeError at import, not a silently required key."""
    for f in dataclasses.fields(settings):
        if f.name == name and f.default is not dataclasses.MISSING:
            return f.default
    raise TypeError(f"{settings.__name__}.{name} has no default")


class Strict(BaseModel):
    # validate_default: the defaults come from the frozen types, so check them against the
    # constraints here too (a type's default that a file could not hold is a bug).
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


PositiveFloat = Annotated[float, Field(gt=0)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegative = Annotated[float, Field(ge=0)]
