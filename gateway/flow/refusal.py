"""The client's error for a request no replica can take, from the *type* of the plugin that
blocked it (never from a reason string or a configured instance name): a request that no variant
could ever serve is the client's mistake (400), one that only no replica can serve right now is
the service's (503, retry)."""

from __future__ import annotations

from gateway.decision import PINNED_VARIANT
from gateway.errors import ContextTooLong, InvalidRequest, NoHealthyReplica, RequestError
from gateway.flow.plan import Plan

CONTEXT_FITS = "context-fits"
TOOLS_SUPPORTED = "tools-supported"


def refuse(plan: Plan) -> RequestError:
    """The error for ``plan``, whose decision ranks no replica."""
    blocker = plan.decision.blocked_by
    kind = blocker.type if blocker is not None else None
    profile = plan.profile
    if kind == CONTEXT_FITS or _exceeds_every_context(plan):
        limit = max(v.max_model_len for v in plan.target.model.variants.values())
        output = profile.max_output_tokens or 1
        return ContextTooLong(
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{profile.input_tokens + output} tokens ({profile.input_tokens} in the messages, {output} in the "
            "completion). Please reduce the length of the messages or completion.",
            param="messages",
        )
    if kind == PINNED_VARIANT and profile.pinned_variant is None:  # no candidate at all: an empty pool
        return NoHealthyReplica(f"Model '{profile.model}' has no replicas right now.", retry_after_s=1.0)
    if kind == PINNED_VARIANT:
        return NoHealthyReplica(f"Variant '{profile.pinned_variant}' has no replicas.", retry_after_s=1.0)
    if kind == TOOLS_SUPPORTED:
        return InvalidRequest("No variant of this model serves tool calls.", param="tools")
    name = blocker.name if blocker is not None else "unknown"
    return NoHealthyReplica(
        f"No healthy replica can serve this request for model '{profile.model}' (blocked by '{name}').",
        retry_after_s=1.0,
    )


def _exceeds_every_context(plan: Plan) -> bool:
    needed = plan.profile.input_tokens + (plan.profile.max_output_tokens or 1)
    return all(needed > v.max_model_len for v in plan.target.model.variants.values())
