"""Keys off: an open gateway. Admits everyone, charges nothing, with no I/O (as uvicorn's
``lifespan/off.py`` turns a feature off by being a do-nothing object, not by ``if`` everywhere)."""

from __future__ import annotations

from gateway.access.ceiling import UsageCeiling
from gateway.access.guard import OPEN, Grant
from gateway.access.keys import ApiKey
from gateway.access.receipts.receipt import NO_RECEIPT, Receipt
from gateway.domain import Variant
from gateway.outcome import Outcome


class OpenAccess:
    async def authenticate(self, secret: str | None, *, look_up: bool = True) -> ApiKey | None:
        return None

    async def authorize(self, key: ApiKey | None, model: str, ceiling: UsageCeiling | None = None) -> Grant:
        return OPEN

    async def settle(self, grant: Grant, model: str, variant: Variant, task: str, outcome: Outcome,
                     receipt: Receipt = NO_RECEIPT) -> None:
        return None

    def release(self, grant: Grant) -> None:
        return None

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None
