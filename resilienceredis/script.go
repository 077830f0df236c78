package resilienceredis

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// gcraScript decides one call against the key KEYS[1]. Its arguments are
// the interval between two tokens and the burst tolerance (interval times
// burst), both in microseconds, the cost n and the longest wait the caller
// accepts, in microseconds. The key holds the theoretical arrival time, the
// microsecond at which the bucket is full again, as a decimal integer, and
// lives until then.
//
// It answers {1, wait} when the tokens are booked (wait is 0 unless the
// caller accepted one), {0, retry} when they are refused (retry is how long
// until they are there, -1 when never: n is more than the burst), and {2,
// 0, type} when the key holds other data, of that Redis type (a string
// that is not a number, or any other type), which it leaves as it is. It
// reads the key with pcall, so that another type is an answer rather than
// the error of the whole script, which the limiter would take for Redis
// failing; an error other than WRONGTYPE is raised as before.
//
// Time comes from the server, so the clocks of the clients do not matter.
// Lua keeps numbers as doubles, whose integers are exact up to 2^53: the
// microseconds since 1970 fit with 60 years of room, and the constructor
// bounds the burst tolerance so that every sum stays exact.
const gcraScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tau = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local maxwait = tonumber(ARGV[4])
local cost = interval * n
if cost > tau then
  return {0, -1}
end
local state = redis.pcall('GET', KEYS[1])
local tat = 0
if type(state) == 'table' and state.err then
  if string.sub(state.err, 1, 10) ~= 'WRONGTYPE ' then
    return state
  end
  return {2, 0, redis.call('TYPE', KEYS[1]).ok}
elseif state then
  tat = tonumber(state)
  if not tat then
    return {2, 0, 'string'}
  end
end
if tat < now then
  tat = now
end
local nxt = tat + cost
local wait = nxt - tau - now
if wait > maxwait then
  return {0, wait}
end
if wait < 0 then
  wait = 0
end
if cost > 0 then
  local ttl = math.ceil((nxt - now) / 1000)
  if ttl < 1 then
    ttl = 1
  end
  redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', ttl)
end
return {1, wait}
`

// script is the one script every Limiter runs, called by its SHA1 and
// loaded on the server when missing.
var script = redis.NewScript(gcraScript)

// decision is what the script answered.
type decision struct {
	ok       bool
	wait     int64  // microseconds: the wait before the booked tokens, or until they are there; -1 never
	conflict string // the Redis type of the other data the key holds, if it does
}

// run asks the server for one decision: one round trip, EVALSHA, and a
// second one, EVAL, only when the server does not hold the script yet
// (after a restart or SCRIPT FLUSH).
func (l *Limiter) run(ctx context.Context, keys []string, args []any) (decision, error) {
	res, err := l.client.EvalSha(ctx, l.sha, keys, args...).Slice()
	if err != nil && isNoScript(err) {
		res, err = l.client.Eval(ctx, gcraScript, keys, args...).Slice()
	}
	if err != nil {
		return decision{}, err
	}
	if len(res) < 2 {
		return decision{}, errReply
	}
	ok, ok1 := res[0].(int64)
	wait, ok2 := res[1].(int64)
	if !ok1 || !ok2 {
		return decision{}, errReply
	}
	if ok == 2 {
		typ, _ := res[2].(string)
		if len(res) != 3 || typ == "" {
			return decision{}, errReply
		}
		return decision{conflict: typ}, nil
	}
	if len(res) != 2 {
		return decision{}, errReply
	}
	return decision{ok: ok == 1, wait: wait}, nil
}

func isNoScript(err error) bool {
	return strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// itoa is strconv.FormatInt for the fixed arguments, built once and
// boxed once.
func itoa(v int64) any { return strconv.FormatInt(v, 10) }
