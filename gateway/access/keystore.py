"""Where key records live: a JSON file beside the config for the memory store (one gateway), or a
Redis hash for the Redis store (every gateway). Both are read in the background into a KeyRing;
``duet keys`` and the admin API write them. The file is read when it changes, never because a
request presented a key."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import redis.asyncio as aioredis

from gateway.access.keys import ApiKey


class KeyStore(Protocol):
    async def load(self) -> Sequence[ApiKey]:
        """Every key record, revoked ones included."""
        ...

    async def add(self, key: ApiKey) -> None:
        ...

    async def find(self, key_hash: str) -> ApiKey | None:
        """The record with this hash, read from the store now if that costs no more than a round
        trip (a key made since the last load; the file store answers from its last load)."""
        ...

    async def revoke(self, key_id: str) -> bool:
        """Mark a key revoked; False if no key has that id."""
        ...


class FileKeyStore:
    """Keys in a JSON file (``{"keys": [...]}``), rewritten atomically (temp file + rename).
    ``load`` reads it only when it changed since the last load (a stat otherwise); ``find``
    answers from the last load: the background refresh picks up a key made by another process
    (``duet keys create``), so no request ever makes the gateway read the file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._stamp: tuple[int, int, int] | None = None
        self._keys: list[ApiKey] = []

    def version(self) -> tuple[int, int, int] | None:
        """The file's modification time, size and inode (None when absent): a rewrite (a new
        inode, as it is renamed into place) changes it even within the clock's resolution."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return stat.st_mtime_ns, stat.st_size, stat.st_ino

    async def load(self) -> Sequence[ApiKey]:
        stamp = self.version()
        if stamp != self._stamp:
            self._keys, self._stamp = self.read(), stamp
        return self._keys

    def read(self) -> list[ApiKey]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        return [ApiKey.from_json(item) for item in data.get("keys", [])]

    async def add(self, key: ApiKey) -> None:
        self._write([*self.read(), key])

    async def find(self, key_hash: str) -> ApiKey | None:
        return next((k for k in self._keys if k.hash == key_hash), None)

    async def revoke(self, key_id: str) -> bool:
        keys = self.read()
        found = any(k.id == key_id for k in keys)
        if found:
            self._write([dataclasses.replace(k, revoked=True) if k.id == key_id else k for k in keys])
        return found

    def _write(self, keys: list[ApiKey]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".duet-keys-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"keys": [k.to_json() for k in keys]}, out, indent=1)
        os.chmod(tmp, 0o600)  # hashes only, but nobody else needs to read them
        os.replace(tmp, self.path)
        self._keys, self._stamp = keys, self.version()  # what this store wrote, it knows


class RedisKeyStore:
    """Keys in one Redis hash, ``{prefix}keys``: key hash -> JSON record (found by hash in one
    HGET; revoking by id scans, as admin operations may)."""

    def __init__(self, client: aioredis.Redis, prefix: str) -> None:
        self._client = client
        self._key = prefix + "keys"

    async def load(self) -> Sequence[ApiKey]:
        records = await self._client.hgetall(self._key)
        return [ApiKey.from_json(json.loads(value)) for value in records.values()]

    async def add(self, key: ApiKey) -> None:
        await self._client.hset(self._key, key.hash, json.dumps(key.to_json()))

    async def find(self, key_hash: str) -> ApiKey | None:
        raw = await self._client.hget(self._key, key_hash)
        return None if raw is None else ApiKey.from_json(json.loads(raw))

    async def revoke(self, key_id: str) -> bool:
        key = next((k for k in await self.load() if k.id == key_id), None)
        if key is None:
            return False
        await self._client.hset(self._key, key.hash, json.dumps({**key.to_json(), "revoked": True}))
        return True
