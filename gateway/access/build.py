"""Building the access gate from the config: ``OpenAccess`` when keys are off; otherwise keys and
quotas in the store the config names (a keys file and this process, or Redis)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from gateway.access.guard import Access, KeyedAccess
from gateway.access.keystore import FileKeyStore, KeyStore, RedisKeyStore
from gateway.access.off import OpenAccess
from gateway.access.quotas import InMemoryQuotaBook, QuotaBook
from gateway.access.redis_quotas import RedisQuotaBook
from gateway.config.types import DuetConfig
from gateway.state.redis.link import RedisLink
from gateway.telemetry import Telemetry

log = logging.getLogger(__name__)


def build_access(config: Callable[[], DuetConfig], link: RedisLink | None, telemetry: Telemetry) -> Access:
    """``link`` is the gateway's Redis link when ``state.store`` is redis, else None."""
    current = config()
    access = current.access
    if not access.require_keys:
        if not access.explicit:
            log.warning("API keys are off (no access section in %s): this gateway is open to anyone who reaches it",
                        current.source)
        return OpenAccess()
    keys, quotas = stores_for(current, link)
    return KeyedAccess(config, keys, quotas, telemetry, quota_failure=current.state.quota_failure)


def stores_for(config: DuetConfig, link: RedisLink | None) -> tuple[KeyStore, QuotaBook]:
    """Where keys and quotas live for this config (also used by ``duet keys``)."""
    if link is None:
        return FileKeyStore(config.access.keys_file), InMemoryQuotaBook()
    prefix = config.state.redis_prefix
    return RedisKeyStore(link.client, prefix), RedisQuotaBook(link, prefix)
