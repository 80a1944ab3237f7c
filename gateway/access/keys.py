"""API keys: made once, shown once, stored only as a SHA-256 hash, and looked up by hash.

A key is 32 random bytes (``sk-duet-`` + URL-safe base64), so a fast hash is enough: there is
nothing to brute-force, unlike a password. The last comparison is constant-time anyway.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

PREFIX = "sk-duet-"


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One key's record (never the key itself). ``revoked``: refused from then on, kept for the ledger.
    ``tenant``: whom the key's usage is reported under beside the key ("" none: ``duet usage --savings``).
    ``tasks``: the task types the key's application sends, as its operator states them (empty: any);
    a request of the key that names no task is one of these (one: that task, several: the detector
    chooses among them), so a team names the task once per application, not in every client."""

    id: str
    name: str
    tier: str
    hash: str
    created_at: float
    revoked: bool = False
    tenant: str = ""
    tasks: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "name": self.name, "tier": self.tier, "hash": self.hash,
                "created_at": self.created_at, "revoked": self.revoked, "tenant": self.tenant,
                "tasks": list(self.tasks)}

    @staticmethod
    def from_json(data: Mapping[str, object]) -> ApiKey:
        return ApiKey(str(data["id"]), str(data["name"]), str(data["tier"]), str(data["hash"]),
                      float(data["created_at"]), bool(data.get("revoked", False)),  # type: ignore[arg-type]
                      str(data.get("tenant", "")), _names(data.get("tasks")))


def _names(value: object) -> tuple[str, ...]:
    """A stored list of names (absent in records written before keys had tasks)."""
    return tuple(str(item) for item in value) if isinstance(value, list | tuple) else ()


def hash_secret(secret: str) -> str:
    """The stored form of a key: hex SHA-256."""
    return hashlib.sha256(secret.encode()).hexdigest()


def new_key(name: str, tier: str, now: float, tenant: str = "", tasks: Iterable[str] = ()) -> tuple[str, ApiKey]:
    """A fresh secret (to show once) and its record (to store)."""
    secret = PREFIX + secrets.token_urlsafe(32)
    return secret, ApiKey("key_" + secrets.token_hex(6), name, tier, hash_secret(secret), now, tenant=tenant,
                          tasks=tuple(dict.fromkeys(tasks)))


def bearer(headers: Mapping[str, str]) -> str | None:
    """The key a request presents: ``Authorization: Bearer <key>`` (as OpenAI's SDKs send it)."""
    return bearer_token(headers.get("authorization"))


def bearer_token(authorization: str | None) -> str | None:
    """The key in an ``Authorization`` header's value (``Bearer <key>``), or None."""
    if authorization is None or authorization[:7].lower() != "bearer ":
        return None
    return authorization[7:].strip() or None


def matches_admin_key(presented: str | None, expected: str) -> bool:
    """Whether ``presented`` is the admin key ``expected`` (non-empty), compared in constant time
    (both hashed first, so the comparison's length says nothing about the key's)."""
    digest = hashlib.sha256((presented or "").encode()).digest()
    return bool(expected) and hmac.compare_digest(digest, hashlib.sha256(expected.encode()).digest())


class KeyRing:
    """The valid keys of the moment, by hash. Immutable: a refresh builds a new ring."""

    def __init__(self, keys: Iterable[ApiKey]) -> None:
        self._by_hash = {key.hash: key for key in keys if not key.revoked}

    def __len__(self) -> int:
        return len(self._by_hash)

    def with_key(self, key: ApiKey) -> KeyRing:
        """This ring plus ``key`` (found in the store between two loads)."""
        return KeyRing([*self._by_hash.values(), key])

    def find(self, secret: str) -> ApiKey | None:
        """The live key whose hash matches ``secret``'s, or None."""
        digest = hash_secret(secret)
        key = self._by_hash.get(digest)
        if key is None or not hmac.compare_digest(key.hash, digest):
            return None
        return key
