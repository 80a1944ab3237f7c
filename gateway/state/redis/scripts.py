"""The replica store's Lua scripts: the breaker and observation rules of ``breaker.py`` and
``observations.py``, restated so that Redis applies them atomically for every gateway.

The two must agree; ``tests/gateway/state/redis/test_store.py`` replays the same event sequences
through both and compares. One hash per replica holds, by field:

    h_ok h_at                      last health check (1/0) and when
    s_run s_wait s_kv s_start s_at last /metrics scrape (a missing field: not reported; s_start:
                                   vLLM's process start time, which tells every gateway of a restart)
    b_state b_fail b_open b_cool b_probe     breaker (b_probe: a probe is out until then)
    o_{ttft,tpot,err}_{t,w,a}      decaying means: total, weight, at

and one hash per replica holds each gateway's requests in flight (field: the gateway's id), which
each gateway publishes with every refresh (no write per request), so a gateway that dies without
finishing its requests stops counting once its liveness key expires.
Times are wall-clock seconds passed in by the caller.
"""

from __future__ import annotations

from gateway.state.redis.link import Script

_BREAKER = """
local function position(r, now)
  local state = r.b_state or 'closed'
  if state == 'open' and now >= tonumber(r.b_open) + tonumber(r.b_cool) then return 'half_open' end
  return state
end
local function probe_out(r, now)
  return r.b_probe ~= nil and now < tonumber(r.b_probe)
end
local function open(key, failures, now, cooldown)
  redis.call('HSET', key, 'b_state', 'open', 'b_fail', failures, 'b_open', now, 'b_cool', cooldown)
  redis.call('HDEL', key, 'b_probe')
end
local function read(key)
  local flat = redis.call('HGETALL', key)
  local r = {}
  for i = 1, #flat, 2 do r[flat[i]] = flat[i + 1] end
  return r, flat
end
"""

# KEYS: record. ARGV: gateway id, now, probe timeout.
# Returns {permit, record...}: permit 'allowed' | 'probe' | 'refused'.
BEGIN = Script("begin", _BREAKER + """
local now = tonumber(ARGV[2])
local r = read(KEYS[1])
local pos = position(r, now)
local permit = 'allowed'
if pos ~= 'closed' then
  if pos == 'open' or probe_out(r, now) then
    permit = 'refused'
  else
    permit = 'probe'
    redis.call('HSET', KEYS[1], 'b_state', 'half_open', 'b_probe', now + tonumber(ARGV[3]))
  end
end
local _, flat = read(KEYS[1])
return {permit, flat}
""")

# KEYS: record. ARGV: gateway id, now, kind (success|overload|client|failure),
# ttft sample or '', tpot sample or '', half life, failure threshold, cooldown, max cooldown, backoff.
FINISH = Script("finish", _BREAKER + """
local key, now, kind = KEYS[1], tonumber(ARGV[2]), ARGV[3]
local half_life = tonumber(ARGV[6])
local r = read(key)
if kind == 'client' then
  -- Says nothing about the replica: counted nowhere, but a probe it was frees the next one.
  if r.b_probe ~= nil then redis.call('HDEL', key, 'b_probe') end
  return 1
end
local function add(name, sample)
  local f = 'o_' .. name
  local t, w, a = tonumber(r[f .. '_t'] or 0), tonumber(r[f .. '_w'] or 0), tonumber(r[f .. '_a'] or 0)
  local decay = 0
  if w > 0 then decay = 0.5 ^ (math.max(0, now - a) / half_life) end
  redis.call('HSET', key, f .. '_t', t * decay + sample, f .. '_w', w * decay + 1, f .. '_a', math.max(now, a))
end
add('err', kind == 'success' and 0 or 1)
local pos = position(r, now)
if kind == 'success' then
  if ARGV[4] ~= '' then add('ttft', tonumber(ARGV[4])) end
  if ARGV[5] ~= '' then add('tpot', tonumber(ARGV[5])) end
  if pos == 'half_open' then
    redis.call('HSET', key, 'b_state', 'closed', 'b_fail', 0, 'b_open', 0, 'b_cool', 0)
    redis.call('HDEL', key, 'b_probe')
  elseif pos == 'closed' and tonumber(r.b_fail or 0) > 0 then
    redis.call('HSET', key, 'b_fail', 0)
  end
elseif kind == 'failure' then
  local failures = tonumber(r.b_fail or 0) + 1
  if pos == 'closed' then
    if failures < tonumber(ARGV[7]) then redis.call('HSET', key, 'b_fail', failures)
    else open(key, failures, now, tonumber(ARGV[8])) end
  elseif pos == 'half_open' then
    open(key, failures, now, math.min(tonumber(ARGV[9]), tonumber(r.b_cool) * tonumber(ARGV[10])))
  end
elseif r.b_probe ~= nil then
  redis.call('HDEL', key, 'b_probe')
end
return 1
""")

# KEYS: record. ARGV: healthy (1/0), at. A late, older result must not overwrite a newer one.
HEALTH = Script("health", """
local at = tonumber(ARGV[2])
local last = tonumber(redis.call('HGET', KEYS[1], 'h_at') or '-inf')
if at >= last then redis.call('HSET', KEYS[1], 'h_ok', ARGV[1], 'h_at', at) end
return 1
""")

# KEYS: record. ARGV: at, running, waiting, kv usage, process start time ('' when not reported).
STATS = Script("stats", """
local at = tonumber(ARGV[1])
local last = tonumber(redis.call('HGET', KEYS[1], 's_at') or '-inf')
if at < last then return 0 end
redis.call('HSET', KEYS[1], 's_at', at)
local names = {'s_run', 's_wait', 's_kv', 's_start'}
for i, name in ipairs(names) do
  if ARGV[i + 1] == '' then redis.call('HDEL', KEYS[1], name) else redis.call('HSET', KEYS[1], name, ARGV[i + 1]) end
end
return 1
""")

# KEYS: this gateway's liveness key, then (record, in-flight) per replica.
# ARGV: gateway id, liveness ttl ms, liveness key prefix, then this gateway's in-flight count per
# replica. Publishes this gateway's counts (healing any lost by an outage), renews its liveness,
# drops counts of gateways whose liveness expired, and returns {record, live in-flight sum} each.
REFRESH = Script("refresh", """
local gw, prefix = ARGV[1], ARGV[3]
redis.call('SET', KEYS[1], 1, 'PX', ARGV[2])
local out = {}
for i = 2, #KEYS, 2 do
  local n = (i - 2) / 2
  redis.call('HSET', KEYS[i + 1], gw, ARGV[4 + n])
  local flat = redis.call('HGETALL', KEYS[i + 1])
  local sum = 0
  for j = 1, #flat, 2 do
    if flat[j] == gw or redis.call('EXISTS', prefix .. flat[j]) == 1 then sum = sum + tonumber(flat[j + 1])
    else redis.call('HDEL', KEYS[i + 1], flat[j]) end
  end
  out[#out + 1] = redis.call('HGETALL', KEYS[i])
  out[#out + 1] = sum
end
return out
""")

# Output lengths (gateway/state/lengths.py), shared: one hash, a field per (model, task) holding
# its histogram as text: "samples total next_weight" then "bucket:weight" for each non-empty
# bucket (%.17g: floats round-trip exactly). The samples are folded in as ``LengthHistogram.add``
# does, in the order gateways' batches reach Redis, so the shared histogram is the one a single
# gateway would have built from every answer.
# KEYS: the hash. ARGV: half life (samples), rescale above, buckets, then (field, "b b b ...")
# pairs: each batch's bucket indices in the order its gateway saw them. Returns HGETALL.
LENGTHS = Script("lengths", """
local key, half, cap, buckets = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local growth = 2 ^ (1 / half)
for i = 4, #ARGV, 2 do
  local n, t, x, w = 0, 0, 1, {}
  local current = redis.call('HGET', KEYS[1], ARGV[i])
  if current then
    local k = 0
    for token in string.gmatch(current, '%S+') do
      k = k + 1
      if k == 1 then n = tonumber(token) elseif k == 2 then t = tonumber(token) elseif k == 3 then x = tonumber(token)
      else
        local b, v = string.match(token, '^(%d+):(.+)$')
        w[tonumber(b)] = tonumber(v)
      end
    end
  end
  for b in string.gmatch(ARGV[i + 1], '%d+') do
    b = math.min(buckets - 1, tonumber(b))
    w[b] = (w[b] or 0) + x
    t = t + x
    n = n + 1
    x = x * growth
    if x > cap then
      local scale = 1 / x
      for j, v in pairs(w) do w[j] = v * scale end
      t = t * scale
      x = 1
    end
  end
  local out = {string.format('%d %.17g %.17g', n, t, x)}
  for j = 0, buckets - 1 do
    if w[j] then out[#out + 1] = string.format('%d:%.17g', j, w[j]) end
  end
  redis.call('HSET', KEYS[1], ARGV[i], table.concat(out, ' '))
end
return redis.call('HGETALL', KEYS[1])
""")
