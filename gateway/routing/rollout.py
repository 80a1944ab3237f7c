"""The rollout stage as a routing filter, and the per-request draw a canary's share is compared
with. Pure: the draw comes from the request id's hash, so the same request routes alike in the
gateway, its dry run and a replay, and no random state lives in routing."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import ClassVar

from gateway.domain import Candidate, RequestProfile, RolloutStage

ROLLOUT_STAGE = "rollout-stage"


def request_draw(request_id: str, purpose: bytes = b"canary") -> float:
    """A number in [0, 1), uniform over request ids, from a keyed hash of ``request_id``.
    ``purpose`` keys the hash, so draws made for different purposes (a canary share, a shadow
    sample) are independent of each other for the same request."""
    digest = hashlib.blake2b(request_id.encode(), digest_size=8, key=purpose[:64]).digest()
    return int.from_bytes(digest, "big") / 2.0**64


@dataclass(frozen=True, slots=True)
class RolloutStageFilter:
    """Keeps a candidate when its variant's rollout stage lets this request reach it: ``full``
    always, ``canary`` when the request's draw falls under the task type's share, ``shadow``
    never (shadow checks reach it, not live traffic). A request pinned to the variant is kept:
    the client chose it knowingly."""

    name: str = ROLLOUT_STAGE
    type: ClassVar[str] = ROLLOUT_STAGE

    def keep(self, request: RequestProfile, candidate: Candidate) -> tuple[bool, str]:
        variant = candidate.variant
        rollout = variant.rollout
        if rollout.stage is RolloutStage.FULL:
            return True, "full rollout"
        if request.pinned_variant == variant.name:
            return True, f"pinned ({rollout.stage.value})"
        if rollout.stage is RolloutStage.SHADOW:
            return False, f"{variant.name} is in shadow: pinned requests only"
        share = rollout.share(request.task)
        if request.draw < share:
            return True, f"canary: draw {request.draw:.3f} < {request.task} share {share:g}"
        return False, f"canary: draw {request.draw:.3f} >= {request.task} share {share:g}"
