"""Redis ledger: atomic claims for executors spread over several processes or machines.

Design notes:
- Each record is a hash; claim, finish and renew are Lua scripts, so read-decide-write is one
  atomic step on the server with one round trip (no WATCH/MULTI retry storms when 64 workers
  race). The scripts apply the same rules as ``ledger.decide_claim``/``decide_finish``/
  ``decide_renew``; a renewal moves the key's ``PEXPIRE`` along with the lease.
- Time comes from the Redis server (``TIME``) by default, so clock skew between executor hosts,
  or a step of one host's wall clock, cannot make a live claim look stale or an expired record
  look live. What is left of a live claim's lease is measured there too and returned as
  ``Claim.lease_remaining``: a client subtracting its own clock from the stored
  ``lease_expires_at`` would be off by the skew. Pass ``clock`` to use the client's time
  instead (tests with a fake clock); even then only its monotonic reading moves time on, so a
  step of that client's wall clock after the ledger is made changes nothing.
- ``release`` leaves the key holding only the released token for `_RELEASE_REMEMBERED`
  seconds (every script reads that as no record), and a claim made on it carries the token
  along: a release that redis-py sends again because its answer was lost, after another call
  claimed the key meanwhile, is then known for a release that landed, not taken for a claim
  someone took over.
- Retention uses ``PEXPIRE`` with a relative TTL so the server forgets records by itself; the
  scripts also check ``expires_at`` so a lagging expiry never revives a record.
- Connection errors and timeouts become ``LedgerUnavailable``; a key of the wrong type or a hash
  missing fields becomes ``LedgerCorrupt``. Writes fail closed on both.
- Set ``socket_timeout`` on the client below the tools' deadlines so a slow server fails fast.
  redis-py retries timeouts and connection errors by default (10 times, up to 1 s apart): the
  scripts are idempotent per claim token, so a retried claim or finish that already landed is
  recognised instead of applied twice; give the client ``retry=Retry(NoBackoff(), 1)`` or
  similar if an outage should fail closed within milliseconds rather than seconds.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

import redis
from redis.commands.core import Script

from toolwire.execution.clock import Clock
from toolwire.execution.errors import ClaimLost, LedgerCorrupt, LedgerUnavailable
from toolwire.execution.ledger import (
    DEFAULT_TTL,
    Claim,
    ClaimStatus,
    Ledger,
    LedgerRecord,
    LedgerState,
    StalePolicy,
    check_key,
    new_token,
)

__all__ = ["RedisLedger"]

_COMMON = r"""
local function now_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- A record, nil if there is none (and the token of the last claim released on the key, if
-- one was lately: see the release in _FINISH), or false if the hash is not a well-formed record.
local function load(key)
  local flat = redis.call('HGETALL', key)
  if #flat == 0 then return nil end
  local r = {}
  for i = 1, #flat, 2 do r[flat[i]] = flat[i + 1] end
  if r.state == nil and r.released ~= nil and #flat == 2 then return nil, r.released end
  local states = {in_progress = 1, succeeded = 1, failed = 1, unknown = 1}
  if not states[r.state or ''] or not r.fingerprint or not r.token
     or not tonumber(r.expires_at or '') or not tonumber(r.lease_expires_at or '')
     or not tonumber(r.created_at or '') then
    return false
  end
  return r
end
local function store(key, r, now)
  redis.call('DEL', key)
  local flat = {}
  for k, v in pairs(r) do flat[#flat + 1] = k; flat[#flat + 1] = v end
  redis.call('HSET', key, unpack(flat))
  redis.call('PEXPIRE', key, math.max(1, tonumber(r.expires_at) - now))
end
local function flatten(r)
  local flat = {}
  for k, v in pairs(r) do flat[#flat + 1] = k; flat[#flat + 1] = tostring(v) end
  return flat
end
"""

_CLAIM = (
    _COMMON
    + r"""
-- ARGV: fingerprint, tool, token, lease_ms, ttl_ms, on_stale, now_ms|''
local key = KEYS[1]
local now = now_ms(ARGV[7])
local lease, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local r, released = load(key)
if r == false then return {'corrupt', {}, 0} end
if r == nil or tonumber(r.expires_at) <= now then
  -- the released token rides along, so a retry of that release still finds it (see _FINISH)
  r = {state = 'in_progress', fingerprint = ARGV[1], tool = ARGV[2], token = ARGV[3],
       created_at = now, updated_at = now, lease_expires_at = now + lease,
       expires_at = now + lease + ttl, retryable = 0, executions = 1, assumed = 0,
       released = released}
  store(key, r, now)
  return {'claimed', flatten(r), 0}
end
if r.fingerprint ~= ARGV[1] then return {'conflict', flatten(r), 0} end
-- a client-side retry of this very claim (redis-py retries timeouts by default)
if r.state == 'in_progress' and r.token == ARGV[3] then return {'claimed', flatten(r), 0} end
if r.state == 'succeeded' then return {'replay', flatten(r), 0} end
if r.state == 'unknown' then return {'unknown', flatten(r), 0} end
if r.state == 'failed' then
  if r.retryable ~= '1' then return {'replay', flatten(r), 0} end
  r.state = 'in_progress'; r.token = ARGV[3]; r.updated_at = now
  r.lease_expires_at = now + lease
  r.expires_at = math.max(tonumber(r.expires_at), now + lease + ttl)
  r.error = nil; r.retryable = 0; r.executions = tonumber(r.executions or '1') + 1
  store(key, r, now)
  return {'claimed', flatten(r), 0}
end
if tonumber(r.lease_expires_at) > now then
  -- the lease left, on the server's clock: the client's may be skewed against it
  return {'in_progress', flatten(r), 0, tonumber(r.lease_expires_at) - now}
end
if ARGV[6] == 'assume_failed_and_retry' then
  r.token = ARGV[3]; r.updated_at = now; r.lease_expires_at = now + lease
  r.expires_at = math.max(tonumber(r.expires_at), now + lease + ttl)
  r.executions = tonumber(r.executions or '1') + 1
  store(key, r, now)
  return {'claimed', flatten(r), 1}
end
if ARGV[6] == 'assume_succeeded' then
  r.state = 'succeeded'; r.updated_at = now; r.expires_at = now + ttl; r.assumed = 1
  store(key, r, now)
  return {'replay', flatten(r), 1}
end
r.state = 'unknown'; r.updated_at = now; r.expires_at = now + ttl; r.assumed = 1
r.error = '{"type":"stale_in_progress","message":"a previous execution started but never '
  .. 'recorded its outcome","claimed_at":' .. string.format('%.3f', tonumber(r.created_at) / 1000)
  .. '}'
store(key, r, now)
return {'stale', flatten(r), 0}
"""
)

_FINISH = (
    _COMMON
    + r"""
-- ARGV: token, now_ms|'', ttl_ms, state|'' (release), receipt, error, retryable, released_ms
local key = KEYS[1]
local now = now_ms(ARGV[2])
local r, released = load(key)
if r == false then return 'corrupt' end
if r == nil and ARGV[4] == '' then return 'ok' end
-- a retried release that landed before the key was claimed again (redis-py retries a request
-- whose answer was lost): the release is done, nobody took this claim over
if ARGV[4] == '' and (released or (r and r.released)) == ARGV[1] then return 'ok' end
local owned = r ~= nil and r.token == ARGV[1] and tonumber(r.expires_at) > now
-- assumed: settled by a stale-claim policy while the owner ran; the owner's outcome replaces it
local assumed = owned and r.assumed == '1'
if owned and not assumed and r.state == ARGV[4] then
  return 'ok'  -- a retried finish that already landed
end
if not owned or (r.state ~= 'in_progress' and not assumed) then return 'lost' end
if ARGV[4] == '' then
  -- what is left is the released token alone, which every script reads as no record
  redis.call('DEL', key)
  redis.call('HSET', key, 'released', ARGV[1])
  redis.call('PEXPIRE', key, tonumber(ARGV[8]))
  return 'ok'
end
r.state = ARGV[4]; r.updated_at = now; r.expires_at = now + tonumber(ARGV[3]); r.assumed = 0
r.receipt = nil; r.error = nil
if ARGV[5] ~= '' then r.receipt = ARGV[5] end
if ARGV[6] ~= '' then r.error = ARGV[6] end
r.retryable = ARGV[7]
store(key, r, now)
return 'ok'
"""
)

_RENEW = (
    _COMMON
    + r"""
-- ARGV: token, now_ms|'', lease_ms, ttl_ms
local key = KEYS[1]
local now = now_ms(ARGV[2])
local r = load(key)
if r == false then return 'corrupt' end
-- only the token that still owns the in-progress record (see ledger.decide_renew)
if r == nil or r.token ~= ARGV[1] or tonumber(r.expires_at) <= now
   or r.state ~= 'in_progress' then
  return 'lost'
end
local lease_end = math.max(tonumber(r.lease_expires_at), now + tonumber(ARGV[3]))
r.updated_at = now; r.lease_expires_at = lease_end
r.expires_at = math.max(tonumber(r.expires_at), lease_end + tonumber(ARGV[4]))
store(key, r, now)
return 'ok'
"""
)

_GET = (
    _COMMON
    + r"""
local r = load(KEYS[1])
if r == false then return {'corrupt', {}} end
if r == nil then return {'none', {}} end
if tonumber(r.expires_at) <= now_ms(ARGV[1]) then return {'none', {}} end
return {'ok', flatten(r)}
"""
)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _record(key: str, flat: list[Any]) -> LedgerRecord:
    fields = {_text(flat[i]): _text(flat[i + 1]) for i in range(0, len(flat), 2)}
    try:
        return LedgerRecord(
            key=key,
            state=cast(LedgerState, fields["state"]),
            fingerprint=fields["fingerprint"],
            tool=fields.get("tool", ""),
            token=fields["token"],
            created_at=float(fields["created_at"]) / 1000.0,
            updated_at=float(fields.get("updated_at", fields["created_at"])) / 1000.0,
            lease_expires_at=float(fields["lease_expires_at"]) / 1000.0,
            expires_at=float(fields["expires_at"]) / 1000.0,
            receipt=fields.get("receipt"),
            error=fields.get("error"),
            retryable=fields.get("retryable") == "1",
            executions=int(float(fields.get("executions", "1"))),
            assumed=fields.get("assumed") == "1",
        )
    except (KeyError, ValueError) as exc:
        raise LedgerCorrupt(f"undecodable ledger record: {exc}") from exc


# How long a released key remembers the token that released it (see the design notes): far
# longer than redis-py's retries of one request take, short enough to cost nothing.
_RELEASE_REMEMBERED = 600.0


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


class RedisLedger(Ledger):
    """Ledger in Redis (one hash per key, Lua scripts for atomic transitions).

    Args:
        client: A ``redis.Redis`` client (set ``socket_timeout`` to bound slow servers).
        prefix: Prefix for the ledger's keys.
        clock: Use this clock instead of the server's ``TIME`` (tests with a fake clock): its
            ``time()`` read once, when the ledger is made, moved on by its ``monotonic()``,
            so that a step of this client's wall clock later on makes no live claim look
            stale, nor a kept record look expired. Skew between clients still counts, which
            is why the server's ``TIME`` is the default.
    """

    blocking: ClassVar[bool] = True

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = "toolwire:ledger:",
        clock: Clock | None = None,
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._clock = clock
        # (wall reading, monotonic reading) when the ledger was made: see `clock` above.
        self._origin = None if clock is None else (clock.time(), clock.monotonic())
        self._claim_script: Script = client.register_script(_CLAIM)
        self._finish_script: Script = client.register_script(_FINISH)
        self._renew_script: Script = client.register_script(_RENEW)
        self._get_script: Script = client.register_script(_GET)

    def _now_arg(self) -> str:
        if self._clock is None or self._origin is None:
            return ""  # the scripts read the server's TIME
        wall, mono = self._origin
        return str(round((wall + self._clock.monotonic() - mono) * 1000))

    def _run(self, script: Script, key: str, args: list[str | int]) -> Any:
        try:
            return script(keys=[self._prefix + key], args=args)
        except redis.ResponseError as exc:
            if "WRONGTYPE" in str(exc):
                raise LedgerCorrupt(f"ledger key holds another type: {key}") from exc
            raise LedgerUnavailable(f"redis ledger error: {exc}") from exc
        except redis.RedisError as exc:
            raise LedgerUnavailable(f"redis ledger unavailable: {exc}") from exc

    def claim(
        self,
        key: str,
        *,
        fingerprint: str,
        tool: str,
        lease: float,
        ttl: float = DEFAULT_TTL,
        on_stale: StalePolicy = "report",
    ) -> Claim:
        """See ``Ledger.claim``."""
        check_key(key)
        token = new_token()
        reply = self._run(
            self._claim_script,
            key,
            [fingerprint, tool, token, _ms(lease), _ms(ttl), on_stale, self._now_arg()],
        )
        status = cast(ClaimStatus, _text(reply[0]))
        if status == "corrupt":  # pyright: ignore[reportUnnecessaryComparison]
            raise LedgerCorrupt(f"undecodable ledger record: {key}")
        record = _record(key, list(reply[1]))
        recovered = int(reply[2]) == 1
        if status == "claimed":
            return Claim("claimed", record, token, recovered=recovered)
        left = int(reply[3]) / 1000.0 if len(reply) > 3 else None
        return Claim(status, record, recovered=recovered, lease_remaining=left)

    def _finish(
        self,
        key: str,
        token: str,
        ttl: float,
        state: LedgerState | None,
        *,
        receipt: str | None = None,
        error: str | None = None,
        retryable: bool = False,
    ) -> None:
        reply = _text(
            self._run(
                self._finish_script,
                key,
                [
                    token,
                    self._now_arg(),
                    _ms(ttl),
                    state or "",  # the script reads "" as a release
                    receipt or "",
                    error or "",
                    "1" if retryable else "0",
                    _ms(_RELEASE_REMEMBERED),
                ],
            )
        )
        if reply == "corrupt":
            raise LedgerCorrupt(f"undecodable ledger record: {key}")
        if reply == "lost":
            raise ClaimLost(key)

    def renew(self, key: str, token: str, lease: float, *, ttl: float = DEFAULT_TTL) -> None:
        """See ``Ledger.renew``."""
        reply = _text(
            self._run(self._renew_script, key, [token, self._now_arg(), _ms(lease), _ms(ttl)])
        )
        if reply == "corrupt":
            raise LedgerCorrupt(f"undecodable ledger record: {key}")
        if reply == "lost":
            raise ClaimLost(key)

    def get(self, key: str) -> LedgerRecord | None:
        """See ``Ledger.get``."""
        reply = self._run(self._get_script, key, [self._now_arg()])
        status = _text(reply[0])
        if status == "corrupt":
            raise LedgerCorrupt(f"undecodable ledger record: {key}")
        if status == "none":
            return None
        return _record(key, list(reply[1]))

    def close(self) -> None:
        """Close the client's connection pool."""
        self._client.close()
