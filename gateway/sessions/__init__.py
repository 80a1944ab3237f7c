"""Sessions: where each conversation sits (its variant and replica, ``seats.py``; shared between
gateways through Redis, ``shared.py``) and when it keeps or leaves its variant (``keep.py``).
Below the lifecycle: planning reads which session a request belongs to from the request's body
and headers (``session_id.py``), then that session's seat and the policy."""

from gateway.sessions.keep import Move, SessionVerdict, keep_seat, session_headers
from gateway.sessions.seats import Seat, SeatLookup, Sessions

__all__ = ["Move", "Seat", "SeatLookup", "SessionVerdict", "Sessions", "keep_seat", "session_headers"]
