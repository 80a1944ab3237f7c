"""Sessions: a conversation keeps its variant, and its replica when it can, from turn to turn.

The standard and the fast variant keep separate prompt caches, and the variants answer a little
differently: a conversation that bounces between them loses its cached prefix at every bounce and
reads inconsistently. So once a session has a variant it stays there unless the policy *forces*
it off: the variant can no longer take the request (parity does not cover its task type, or no
replica of it is left), or the request is predicted to miss its budget there while the router's
choice meets it. A forced move goes up to the standard (full) variant whenever that is the one
the router chose, and a session never moves back down: only when no standard replica is left
does it move to a fast one. The response's ``x-duet-session`` header says which session the
request belongs to, and when and why it moved.

Which session a request belongs to is read from the request (``gateway.sessions.session_id``);
the lifecycle's planning asks it, then this policy over the seats.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from enum import StrEnum

from gateway.decision import Decision
from gateway.domain import Candidate, RequestProfile, VariantKind
from gateway.sessions.seats import Seat

RESPONSE_HEADER = "x-duet-session"


class Move(StrEnum):
    """Why a session left its variant."""

    BUDGET = "budget"  # predicted to miss its budget there; the router's choice meets it
    PARITY = "parity"  # the variant is not proven for this task type
    UNAVAILABLE = "unavailable"  # no replica of it could take the request


@dataclass(frozen=True, slots=True)
class SessionVerdict:
    """What the session did to one request: ``kept`` its variant (overriding the router's choice
    when ``overrode``), or moved ``moved_from`` a variant for ``why``; new when it had no seat."""

    key: str
    variant: str | None
    turn: int
    moved_from: str | None = None
    why: Move | None = None
    overrode: str | None = None

    def header(self) -> str:
        """The ``x-duet-session`` value: the turn and variant, and a move's from, to and why."""
        short = hashlib.blake2b(self.key.encode(), digest_size=6).hexdigest()
        text = f"id={short}; turn={self.turn}; variant={self.variant}"
        if self.moved_from is not None:
            text += f"; moved={self.moved_from}->{self.variant}; why={self.why}"
        elif self.overrode is not None:
            text += f"; kept-over={self.overrode}"
        return text


def keep_seat(key: str, seat: Seat | None, profile: RequestProfile, candidates: tuple[Candidate, ...],
              decision: Decision) -> tuple[Decision, SessionVerdict]:
    """``decision`` with the session's variant (and replica) first unless the policy forces a move."""
    turn = 1 if seat is None else seat.turns + 1
    if seat is None or not decision.ranked or profile.pinned_variant is not None:
        return decision, SessionVerdict(key, decision.variant, turn)
    mine = [r for r in decision.ranked if r.variant == seat.variant]
    if not mine:
        why = _why_gone(profile, candidates, seat.variant)
        return decision, SessionVerdict(key, decision.variant, turn, moved_from=_moved(seat, decision), why=why)
    fits = [r for r in mine if r.id in decision.predictions and profile.budget.fits(decision.predictions[r.id])]
    if decision.variant != seat.variant and not fits and _may_move(seat.variant, decision, candidates):
        return decision, SessionVerdict(key, decision.variant, turn, moved_from=seat.variant, why=Move.BUDGET)
    home = [r for r in mine if r.id == seat.replica and (r in fits or not fits)]
    ordered = (*home, *(r for r in mine if r not in home), *(r for r in decision.ranked if r.variant != seat.variant))
    overrode = decision.variant if decision.variant != seat.variant else None
    if overrode is None:  # the router's own variant: only the replica order changes
        return replace(decision, ranked=ordered), SessionVerdict(key, seat.variant, turn)
    kept = replace(decision, variant=seat.variant, ranked=ordered, meets_budget=bool(fits),
                   reason=f"{decision.reason};session")
    return kept, SessionVerdict(key, seat.variant, turn, overrode=overrode)


def _moved(seat: Seat, decision: Decision) -> str | None:
    return seat.variant if decision.variant != seat.variant else None


def _may_move(current: str, decision: Decision, candidates: tuple[Candidate, ...]) -> bool:
    """A session moves for its budget only up, to a full variant that meets it."""
    kinds = {c.variant.name: c.variant.kind for c in candidates}
    return decision.meets_budget and kinds.get(current) is not VariantKind.FULL \
        and kinds.get(decision.variant or "") is VariantKind.FULL


def _why_gone(profile: RequestProfile, candidates: tuple[Candidate, ...], variant: str) -> Move:
    own = [c for c in candidates if c.variant.name == variant]
    if own and not own[0].variant.allows_all(profile.tasks_to_allow):
        return Move.PARITY
    return Move.UNAVAILABLE


def session_headers(verdict: SessionVerdict | None) -> list[tuple[bytes, bytes]]:
    """The response header naming the session and any move (none without a session)."""
    return [] if verdict is None else [(RESPONSE_HEADER.encode(), verdict.header().encode("latin-1"))]
