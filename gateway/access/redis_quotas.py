"""``QuotaBook`` in Redis: the same limits as ``quotas.InMemoryQuotaBook``, exact across every
gateway because each check-and-charge is one Lua script. Admission is the hot path's one round
trip before forwarding; settling is queued on the link (the next pipeline carries it).

Layout (``{p}`` = prefix): ``{p}rpm:{key}`` sorted set of admission times (member: a unique id);
``{p}tpm:{key}`` hash second -> tokens; ``{p}spend:{key}:{YYYY-MM}`` the month's USD;
``{p}usage:{YYYY-MM}`` hash ``key<TAB>model<TAB>variant<TAB>task<TAB>metric`` -> total.
Token usage is kept per whole second, so the token window is exact to one second.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from gateway.access.ledger import Charge, UsageRow, month_of, rows_from_fields, seconds_to_month_end
from gateway.access.quotas import Refusal
from gateway.config.types import Tier
from gateway.state.redis_link import Arg, RedisLink, Script

# KEYS: rpm zset, tpm hash, spend. ARGV: now, rpm, tpm, budget (-1: none), member, s to month end.
# Returns {'ok'} or {limit, retry-after seconds as a string} (Lua numbers would be truncated).
ADMIT = Script("admit", """
local now, window = tonumber(ARGV[1]), 60
local budget = tonumber(ARGV[4])
if budget >= 0 and tonumber(redis.call('GET', KEYS[3]) or '0') >= budget then
  return {'monthly_budget_usd', ARGV[6]}
end
local tpm = tonumber(ARGV[3])
if tpm >= 0 then
  local flat = redis.call('HGETALL', KEYS[2])
  local seconds, used = {}, 0
  for i = 1, #flat, 2 do
    local sec = tonumber(flat[i])
    if sec <= now - window then redis.call('HDEL', KEYS[2], flat[i])
    else seconds[#seconds + 1] = {sec, tonumber(flat[i + 1])}; used = used + tonumber(flat[i + 1]) end
  end
  if used >= tpm then
    table.sort(seconds, function(a, b) return a[1] < b[1] end)
    for _, pair in ipairs(seconds) do
      used = used - pair[2]
      if used < tpm then return {'tokens_per_min', tostring(math.max(0, pair[1] + window - now))} end
    end
    return {'tokens_per_min', tostring(window)}
  end
end
local rpm = tonumber(ARGV[2])
if rpm >= 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
  if redis.call('ZCARD', KEYS[1]) >= rpm then
    local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    local retry = window
    if oldest[2] then retry = math.max(0, tonumber(oldest[2]) + window - now) end
    return {'requests_per_min', tostring(retry)}
  end
  redis.call('ZADD', KEYS[1], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[1], (window + 1) * 1000)
end
return {'ok'}
""")

# KEYS: tpm hash, spend, usage. ARGV: now, tokens, cost, entry, input, output.
SETTLE = Script("settle", """
local now, tokens, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if tokens > 0 then
  redis.call('HINCRBY', KEYS[1], math.floor(now), tokens)
  redis.call('EXPIRE', KEYS[1], 120)
end
redis.call('INCRBYFLOAT', KEYS[2], cost)
redis.call('EXPIRE', KEYS[2], 40 * 86400)
local entry = ARGV[4] .. '\\t'
redis.call('HINCRBY', KEYS[3], entry .. 'requests', 1)
redis.call('HINCRBY', KEYS[3], entry .. 'input_tokens', ARGV[5])
redis.call('HINCRBY', KEYS[3], entry .. 'output_tokens', ARGV[6])
redis.call('HINCRBYFLOAT', KEYS[3], entry .. 'cost_usd', cost)
return 1
""")


class RedisQuotaBook:
    """Quotas and ledger shared by every gateway on ``prefix``. Raises StoreUnavailable from
    ``admit`` when Redis cannot answer (the caller applies the configured failure mode)."""

    def __init__(self, link: RedisLink, prefix: str) -> None:
        self._link = link
        self._prefix = prefix
        self._member = os.urandom(4).hex()  # unique admission ids: this gateway's tag + a counter
        self._count = 0

    async def admit(self, key_id: str, tier: Tier, now: float) -> Refusal | None:
        self._count += 1
        p = self._prefix
        keys = [f"{p}rpm:{key_id}", f"{p}tpm:{key_id}", f"{p}spend:{key_id}:{month_of(now)}"]
        args: list[Arg] = [now, _limit(tier.requests_per_min), _limit(tier.tokens_per_min), _limit(tier.monthly_budget_usd),
                f"{self._member}:{self._count}", seconds_to_month_end(now)]
        reply = await self._link.call(ADMIT, keys, args)
        if reply[0] == b"ok":
            return None
        return Refusal(reply[0].decode(), float(reply[1]))

    async def settle(self, charge: Charge, now: float) -> None:
        p = self._prefix
        keys = [f"{p}tpm:{charge.key_id}", f"{p}spend:{charge.key_id}:{month_of(now)}", f"{p}usage:{month_of(now)}"]
        args: list[Arg] = [now, charge.tokens, charge.cost_usd, charge.entry, charge.input_tokens, charge.output_tokens]
        self._link.send(SETTLE, keys, args)

    async def usage(self, month: str, key_id: str | None = None) -> Sequence[UsageRow]:
        fields = await self._link.client.hgetall(f"{self._prefix}usage:{month}")
        return rows_from_fields(((_text(k), _text(v)) for k, v in fields.items()), key_id)


def _limit(value: float | None) -> float:
    return -1 if value is None else value


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
