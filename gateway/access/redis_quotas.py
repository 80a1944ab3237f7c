"""``QuotaBook`` in Redis: the same limits as ``quotas.InMemoryQuotaBook``, exact across every
gateway because each check-and-charge is one Lua script. Admission is the hot path's one round
trip before forwarding; settling and releasing are queued on the link (the next pipeline carries
them).

Layout (``{p}`` = prefix): ``{p}win:rpm:{key}`` and ``{p}win:tpm:{key}`` the per-minute windows
(``WINDOW``: a hash of one-second buckets with a running total, as ``gateway.access.window``);
``{p}spend:{key}:{YYYY-MM}`` the month's USD, settled plus held by requests in flight;
``{p}usage:{YYYY-MM}`` hash ``key<TAB>model<TAB>variant<TAB>task<TAB>metric`` -> total.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.access.headroom import Headroom, WindowLeft
from gateway.access.ledger import RECEIPT_METRICS, Charge, UsageRow, month_of, rows_from_fields, seconds_to_month_end
from gateway.access.quotas import SPEND_LIMIT, Admission, Refusal
from gateway.access.reservation import Hold
from gateway.config.types import Tier
from gateway.state.redis.link import Arg, RedisLink, Script

# A minute in one-second buckets: the running total in 'sum', the oldest and newest seconds that
# may hold an amount in 'old' and 'new', one field per second. A read drops the seconds that left
# since the last one (each second is dropped once: O(1) per request amortized, at most 60 fields
# at a time), where summing every field cost O(fields) per request.
WINDOW = """
local function window_total(key, now)
  local state = redis.call('HMGET', key, 'sum', 'old', 'new')
  if not state[1] then return 0 end
  local sum, old, new = tonumber(state[1]), tonumber(state[2]), tonumber(state[3])
  local cut = math.floor(now) - 60
  if new <= cut then redis.call('DEL', key); return 0 end
  if old <= cut then
    local gone = {}
    for s = old, cut do gone[#gone + 1] = s end
    for _, amount in ipairs(redis.call('HMGET', key, unpack(gone))) do
      if amount then sum = sum - tonumber(amount) end
    end
    redis.call('HDEL', key, unpack(gone))
    redis.call('HSET', key, 'sum', sum, 'old', cut + 1)
  end
  return sum
end

-- Call after window_total(key, now). A gateway whose clock is behind counts in the oldest second.
local function window_add(key, now, amount)
  local second = math.floor(now)
  local state = redis.call('HMGET', key, 'old', 'new')
  local old, new = tonumber(state[1]), tonumber(state[2])
  if not old then redis.call('HSET', key, 'old', second, 'new', second)
  elseif second < old then second = old
  elseif second > new then redis.call('HSET', key, 'new', second) end
  redis.call('HINCRBY', key, second, amount)
  redis.call('HINCRBY', key, 'sum', amount)
  redis.call('PEXPIRE', key, 61000)
end

-- Seconds until the total drops below limit (only when it refuses: at most 60 reads).
local function window_retry(key, now, limit)
  local left = window_total(key, now)
  local state = redis.call('HMGET', key, 'old', 'new')
  local old, new = tonumber(state[1]), tonumber(state[2])
  if old then
    for s = old, new do
      left = left - tonumber(redis.call('HGET', key, s) or '0')
      if left < limit then return math.max(0, s + 60 - now) end
    end
  end
  return 60
end
"""

# KEYS: rpm window, tpm window, spend. ARGV: now, rpm, tpm, spend limit (-1: none), s to month end, USD
# to hold. Returns {'ok' or the refusing limit, retry-after seconds as a string (Lua numbers would
# be truncated), then for each window (rpm, tpm) its total after this request and the second its
# newest amount was counted in (-1: empty)}: the headroom the x-ratelimit-* headers report.
ADMIT = Script("admit", WINDOW + """
local now = tonumber(ARGV[1])
local rpm, tpm, spend_limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local requests = rpm >= 0 and window_total(KEYS[1], now) or 0
local tokens = tpm >= 0 and window_total(KEYS[2], now) or 0
local verdict
if spend_limit >= 0 and tonumber(redis.call('GET', KEYS[3]) or '0') >= spend_limit then
  verdict = {'""" + SPEND_LIMIT + """', ARGV[5]}
elseif tpm >= 0 and tokens >= tpm then
  verdict = {'tokens_per_min', tostring(window_retry(KEYS[2], now, tpm))}
elseif rpm >= 0 and requests >= rpm then
  verdict = {'requests_per_min', tostring(window_retry(KEYS[1], now, rpm))}
else
  verdict = {'ok', '0'}
  if rpm >= 0 then
    window_add(KEYS[1], now, 1)
    requests = requests + 1
  end
  if tonumber(ARGV[6]) > 0 then
    redis.call('INCRBYFLOAT', KEYS[3], ARGV[6])
    redis.call('EXPIRE', KEYS[3], 40 * 86400)
  end
end
verdict[3] = requests
verdict[4] = tonumber(redis.call('HGET', KEYS[1], 'new') or '-1')
verdict[5] = tokens
verdict[6] = tonumber(redis.call('HGET', KEYS[2], 'new') or '-1')
return verdict
""")

# KEYS: tpm window, spend, usage, spend the hold was taken from. ARGV: now, tokens, cost, entry,
# input, output, USD held (0: none), then the receipt's integers (ledger.RECEIPT_METRICS, in order).
SETTLE = Script("settle", WINDOW + """
local now, tokens, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if tokens > 0 then
  window_total(KEYS[1], now)
  window_add(KEYS[1], now, tokens)
end
redis.call('INCRBYFLOAT', KEYS[2], cost)
redis.call('EXPIRE', KEYS[2], 40 * 86400)
if tonumber(ARGV[7]) > 0 then redis.call('INCRBYFLOAT', KEYS[4], '-' .. ARGV[7]) end
local entry = ARGV[4] .. '\\t'
redis.call('HINCRBY', KEYS[3], entry .. 'requests', 1)
redis.call('HINCRBY', KEYS[3], entry .. 'input_tokens', ARGV[5])
redis.call('HINCRBY', KEYS[3], entry .. 'output_tokens', ARGV[6])
redis.call('HINCRBYFLOAT', KEYS[3], entry .. 'cost_usd', cost)
for i, metric in ipairs({""" + ", ".join(f"'{m}'" for m in RECEIPT_METRICS) + """}) do
  local amount = tonumber(ARGV[7 + i])
  if amount ~= 0 then redis.call('HINCRBY', KEYS[3], entry .. metric, ARGV[7 + i]) end
end
return 1
""")

# KEYS: the spend the hold was taken from. ARGV: USD held.
RELEASE = Script("release", """
redis.call('INCRBYFLOAT', KEYS[1], '-' .. ARGV[1])
return 1
""")


class RedisQuotaBook:
    """Quotas and ledger shared by every gateway on ``prefix``. Raises StoreUnavailable from
    ``admit`` when Redis cannot answer (the caller applies the configured failure mode)."""

    def __init__(self, link: RedisLink, prefix: str) -> None:
        self._link = link
        self._prefix = prefix

    async def admit(self, key_id: str, tier: Tier, now: float, hold: Hold | None = None) -> Admission:
        p = self._prefix
        keys = [f"{p}win:rpm:{key_id}", f"{p}win:tpm:{key_id}", f"{p}spend:{key_id}:{month_of(now)}"]
        args: list[Arg] = [now, _limit(tier.requests_per_min), _limit(tier.tokens_per_min),
                           _limit(tier.monthly_spend_limit_usd), seconds_to_month_end(now), _usd(hold)]
        reply = await self._link.call(ADMIT, keys, args)
        refusal = None if reply[0] == b"ok" else Refusal(reply[0].decode(), float(reply[1]))
        requests = _left(tier.requests_per_min, reply[2], reply[3], now)
        return Admission(refusal, Headroom(requests, _left(tier.tokens_per_min, reply[4], reply[5], now)))

    async def settle(self, charge: Charge, now: float, hold: Hold | None = None) -> None:
        p, month = self._prefix, month_of(now)
        held_in = f"{p}spend:{charge.key_id}:{hold.month if hold is not None else month}"
        keys = [f"{p}win:tpm:{charge.key_id}", f"{p}spend:{charge.key_id}:{month}", f"{p}usage:{month}", held_in]
        args: list[Arg] = [now, charge.tokens, charge.cost_usd, charge.entry, charge.input_tokens, charge.output_tokens,
                           _usd(hold), *charge.receipt_amounts]
        self._link.send(SETTLE, keys, args)

    def release(self, hold: Hold) -> None:
        self._link.send(RELEASE, [f"{self._prefix}spend:{hold.key_id}:{hold.month}"], [_usd(hold)])

    async def usage(self, month: str, key_id: str | None = None) -> Sequence[UsageRow]:
        fields = await self._link.client.hgetall(f"{self._prefix}usage:{month}")
        return rows_from_fields(((_text(k), _text(v)) for k, v in fields.items()), key_id)


def _left(limit: int | None, used: int, newest: int, now: float) -> WindowLeft | None:
    return None if limit is None else WindowLeft.of(limit, used, None if newest < 0 else newest, now)


def _limit(value: float | None) -> float:
    return -1 if value is None else value


def _usd(hold: Hold | None) -> str:
    """A hold's USD as Redis reads a float exactly enough (repr: no rounding to 12 digits)."""
    return "0" if hold is None else repr(hold.usd)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
