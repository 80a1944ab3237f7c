"""Keys: shown once, stored as a hash, found by hash; revoked keys refused; key stores."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from gateway.access.keys import PREFIX, KeyRing, bearer, hash_secret, new_key
from gateway.access.keystore import FileKeyStore


def test_a_new_key_is_random_and_only_its_hash_is_kept() -> None:
    secret, record = new_key("alice", "gold", 1.0)
    other, _ = new_key("alice", "gold", 1.0)
    assert secret.startswith(PREFIX) and secret != other and len(secret) > 40
    assert record.hash == hash_secret(secret) and secret not in json.dumps(record.to_json())


def test_the_ring_finds_live_keys_only() -> None:
    secret, record = new_key("alice", "gold", 1.0)
    revoked_secret, revoked = new_key("bob", "gold", 1.0)
    ring = KeyRing([record, revoked.__class__(**{**revoked.to_json(), "revoked": True})])  # type: ignore[arg-type]
    assert ring.find(secret) == record
    assert ring.find(revoked_secret) is None
    assert ring.find(secret + "x") is None
    assert len(ring.with_key(revoked)) == 2


def test_bearer_reads_the_authorization_header() -> None:
    assert bearer({"authorization": "Bearer sk-1"}) == "sk-1"
    assert bearer({"authorization": "bearer  sk-1 "}) == "sk-1"
    assert bearer({"authorization": "Basic abc"}) is None
    assert bearer({}) is None


def test_file_store_adds_finds_and_revokes(tmp_path: Path) -> None:
    async def main() -> None:
        store = FileKeyStore(tmp_path / "keys.json")
        assert await store.load() == []
        _, record = new_key("alice", "gold", 1.0)
        await store.add(record)
        assert await store.find(record.hash) == record
        assert await store.revoke(record.id) and not await store.revoke("key_missing")
        assert [k.revoked for k in await store.load()] == [True]
        assert (tmp_path / "keys.json").stat().st_mode & 0o777 == 0o600

    asyncio.run(main())
