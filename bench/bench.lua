-- wrk script for bench/run: one request shape per scenario, every answer's status counted.
--
-- Arguments (after `--`): MODE AUTH RUN_ID ARG
--   MODE  get        GET ARG (a path with its query string), every request the same.
--         get-random GET string.format(ARG_FORMAT, math.random(COUNT)), ARG = "FORMAT COUNT":
--                    a path with one integer conversion (e.g. `/bank-accounts/bacc_0BENCH%021d`)
--                    and the size of the range it is drawn from.
--         create     POST /bank-accounts {"entity_id": ARG, "description": "Bench"}, each request
--                    with a unique Idempotency-Key.
--         transfer   POST /transfers/book between two distinct random accounts of the file ARG
--                    (one bank account id per line), 1..100 minor units, each request with a
--                    unique Idempotency-Key. The accounts are funded far beyond what a run can
--                    drain, so every request should answer 200.
--   AUTH  the Authorization header value, or `-` for none.
--   RUN_ID makes the idempotency keys unique across runs on one database.
--
-- At the end it prints one machine-readable line (times in ms, rps counts 2xx answers only):
--   RESULT ok=.. non_ok=.. errors=.. duration_s=.. rps=.. p50_ms=.. p99_ms=.. max_ms=.. statuses=..
-- `statuses` lists every status seen (`200:123,409:2`); `errors` are socket errors (connect,
-- read, write, timeout), which wrk answers without a status.

local threads = {}
local next_id = 1

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  mode = args[1]
  run = args[3]
  counter = 0
  statuses = {}
  math.randomseed(os.time() * 1000 + id)
  headers = {}
  if args[2] ~= "-" then headers["Authorization"] = args[2] end
  if mode == "get" then
    fixed = wrk.format("GET", args[4], headers)
  elseif mode == "get-random" then
    local fmt, count = args[4]:match("^(%S+)%s+(%d+)$")
    path_format, range = fmt, tonumber(count)
  elseif mode == "create" then
    headers["Content-Type"] = "application/json"
    create_body = string.format('{"entity_id":"%s","description":"Bench"}', args[4])
  elseif mode == "transfer" then
    headers["Content-Type"] = "application/json"
    accounts = {}
    for line in io.lines(args[4]) do
      if #line > 0 then table.insert(accounts, line) end
    end
  else
    error("unknown mode " .. tostring(mode))
  end
end

local function unique_key()
  counter = counter + 1
  return string.format("bench-%s-%d-%d", run, id, counter)
end

function request()
  if mode == "get" then
    return fixed
  elseif mode == "get-random" then
    return wrk.format("GET", string.format(path_format, math.random(range)), headers)
  elseif mode == "create" then
    headers["Idempotency-Key"] = unique_key()
    return wrk.format("POST", "/bank-accounts", headers, create_body)
  else
    local n = #accounts
    local s = math.random(n)
    local r = math.random(n - 1)
    if r >= s then r = r + 1 end
    headers["Idempotency-Key"] = unique_key()
    local body = string.format(
      '{"amount":%d,"sender_bank_account_id":"%s","receiver_bank_account_id":"%s"}',
      math.random(100), accounts[s], accounts[r])
    return wrk.format("POST", "/transfers/book", headers, body)
  end
end

function response(status, headers, body)
  local key = tostring(status)
  statuses[key] = (statuses[key] or 0) + 1
end

function done(summary, latency, requests)
  local total, ok = {}, 0
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("statuses")) do
      total[k] = (total[k] or 0) + v
    end
  end
  local parts = {}
  for k, v in pairs(total) do
    table.insert(parts, k .. ":" .. v)
    if k:sub(1, 1) == "2" then ok = ok + v end
  end
  table.sort(parts)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.timeout
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "RESULT ok=%d non_ok=%d errors=%d duration_s=%.3f rps=%.1f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f statuses=%s\n",
    ok, summary.requests - ok, errors, seconds, ok / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    #parts > 0 and table.concat(parts, ",") or "-"))
end
