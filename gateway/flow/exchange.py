"""One request's life in the gateway, as one object: what arrived, who sent it, how it was planned,
which replica it is on, and how it ended. The director moves it through plan, admit, dispatch and
finish; the hooks read it and note their own bookkeeping on its attempt."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from gateway.access.guard import OPEN, Grant
from gateway.access.receipts.receipt import NO_RECEIPT, Receipt
from gateway.config.types import DuetConfig
from gateway.domain import Prediction, Replica, Variant
from gateway.flow.plan import Inbound, Plan
from gateway.outcome import Outcome
from gateway.state.decodes import DecodeClaim


class AnswerSink(Protocol):
    """What the HTTP layer passes the client's answer through when an attempt has one (online
    parity's tap, ``gateway.parity.tap``, set by its sampling at dispatch)."""

    def started(self, status: int, content_type: bytes) -> None: ...

    def received(self, piece: bytes) -> None: ...


class Handling(StrEnum):
    """What became of an answer that broke its contract."""

    ESCALATED = "escalated"
    KEPT_NO_BUDGET = "kept-no-budget"  # the budget left fits no standard replica's prediction
    KEPT_NO_STANDARD = "kept-no-standard"  # the model has no routable full-precision replica
    KEPT_STANDARD_FAILED = "kept-standard-failed"  # every standard replica tried failed


@dataclass(frozen=True, slots=True)
class Escalation:
    """An answer that broke its contract (``reason``: ``gateway.endpoints.contract``'s) and what was
    done about it (``gateway.flow.escalation``)."""

    reason: str
    action: Handling
    # The fast answer set aside (escalated only): its variant and what its tokens cost, which the
    # request still paid for.
    set_aside_variant: str | None = None
    set_aside_cost_usd: float = 0.0


@dataclass(slots=True)
class Attempt:
    """The request on one replica: from dispatch until that replica's answer ended or failed.
    ``prediction``: the router's for this replica (None when it made none)."""

    replica: Replica
    variant: Variant
    prediction: Prediction | None
    # Set by the hooks: the request's entry in the decode ledger, whether its prompt was prefilled
    # (first token, or a whole non-stream answer), and the stall later prompts charged to it.
    decode_ticket: int | None = None
    prefilled: bool = False
    stalled_ms: float = 0.0
    # Set by online parity's sampling when this attempt's answer is to be scored: the HTTP layer
    # passes what it sends the client through it (``gateway.parity.tap``).
    tap: AnswerSink | None = None


@dataclass(slots=True)
class Exchange:
    """``received_at``: on the director's clock. ``plan`` is replaced when the request is planned
    again while it waits for a slot."""

    inbound: Inbound
    request_id: str
    received_at: float
    plan: Plan
    # The config the request was planned with (its server settings: attempts, queue wait).
    config: DuetConfig
    grant: Grant = OPEN
    attempt: Attempt | None = None
    attempts: int = 0
    failed_attempts: int = 0
    # When the first attempt started (the director's clock): the gateway's own time ends there.
    dispatched_at: float | None = None
    outcome: Outcome | None = None
    # What the decode ledger needs of this plan (built at the first dispatch, once per plan).
    claim: DecodeClaim | None = None
    # What a tracing subscriber keeps for the request (``gateway.tracing``; None when off).
    trace: object | None = None
    # Set when a fast variant's answer broke the request's contract (``gateway.flow.escalation``).
    escalation: Escalation | None = None
    # The savings receipt, made once at the outcome (``bookkeeping.ReceiptKeeper``, first of the
    # gateway's ``done`` subscribers): the ledger and the telemetry record the same figures.
    receipt: Receipt = NO_RECEIPT

    @property
    def overhead_s(self) -> float | None:
        """Time spent in the gateway before the request left for a replica."""
        return None if self.dispatched_at is None else self.dispatched_at - self.received_at

    @property
    def route(self) -> str:
        """The decision's reason, marked when a fallback replica served the request."""
        reason = self.plan.decision.reason
        return reason if self.failed_attempts == 0 else f"{reason};fallback"
