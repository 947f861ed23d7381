#!/usr/bin/env python3
"""Book transfers (or account creations) one at a time against a fresh SQLite database, for what
one write costs bankd with no concurrency to hide it: CPU and bytes written a request.

Usage: python3 bench/one_at_a_time.py BANKD_BINARY TAG [N]   (N requests, default 3000)
Environment: MODE=create     `POST /bank-accounts` with an Idempotency-Key (bench/run's `create`)
                             instead of book transfers; MODE=get `GET /bank-accounts/{id}`,
                             MODE=list `GET /bank-accounts?limit=100` (bench/run's `get` and
                             `list-first`: reads, for the CPU they cost);
             ENDPOINT=<url>  subscribe a webhook endpoint (e.g. bench/receiver.py) first;
             PRE_SQL=<sql>   run through the sqlite3 CLI before the transfers (try a schema
                             change, e.g. "DROP INDEX events_by_type");
             PERF=<file>     record `perf record -g` of bankd during the transfers.
             BANKD_*         passed to the server (e.g. BANKD_SQLITE_SYNCHRONOUS=normal
                             BANKD_SQLITE_GROUP_COMMIT=false, bench/run's `normal-1tx`).
Prints: TAG: cpu <µs>/request, wall <µs>, wchar <bytes>/request, writes <syscalls>/request
(`wchar` and `syscw` from /proc/<pid>/io: the log and database writes, plus about 1 KiB of
answer a transfer). Compare binaries by alternating them; one run moves by 10-15 %.
"""
import atexit
import base64
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

binary, tag = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
work = tempfile.mkdtemp(prefix="bankd-one-")
url = f"sqlite://{work}/bankd.db"
env = dict(os.environ, BANKD_LOG="warn", NO_COLOR="1")
created = subprocess.check_output([binary, "--database-url", url, "platform", "create", "--name", "One"], env=env)
auth = "Basic " + base64.b64encode(f":{json.loads(created)['api_key']}".encode()).decode()
probe = socket.socket()
probe.bind(("127.0.0.1", 0))
port = probe.getsockname()[1]
probe.close()
server = subprocess.Popen([binary, "--database-url", url, "serve", "--listen", f"127.0.0.1:{port}"], env=env)
atexit.register(lambda: (server.kill(), server.wait(), shutil.rmtree(work, ignore_errors=True)))
for _ in range(200):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port)
        c.request("GET", "/healthz")
        c.getresponse().read()
        break
    except OSError:
        time.sleep(0.05)
conn = http.client.HTTPConnection("127.0.0.1", port)


def call(method, path, body=None, key=None):
    headers = {"Authorization": auth, "Content-Type": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    answer = conn.getresponse()
    data = answer.read()
    assert answer.status < 300, (answer.status, data)
    return json.loads(data or b"null")


root = call("GET", "/bank-accounts?limit=1")["bank_accounts"][0]["owners"][0]
accounts = []
for i in range(20):
    account = call("POST", "/bank-accounts", {"entity_id": root, "description": f"Account {i}"})
    credit = {"destination_account_number_id": account["default_account_number_id"], "amount": 10**12,
              "company_id": "BENCHFUNDS", "company_name": "Bench funding"}
    call("POST", "/simulate/receive-ach-credit", credit)
    accounts.append(account["id"])
if os.environ.get("ENDPOINT"):
    call("POST", "/webhook-endpoints", {"url": os.environ["ENDPOINT"]})
if os.environ.get("PRE_SQL"):
    subprocess.check_call(["sqlite3", f"{work}/bankd.db", os.environ["PRE_SQL"]])


def cpu_seconds():
    fields = open(f"/proc/{server.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def written():
    io = dict(line.split(": ") for line in open(f"/proc/{server.pid}/io").read().splitlines())
    return int(io["wchar"]), int(io["syscw"])


rng = random.Random(7)


def transfers(count, prefix):
    mode = os.environ.get("MODE")
    if mode == "create":
        for i in range(count):
            call("POST", "/bank-accounts", {"entity_id": root, "description": "Bench"}, key=f"{prefix}{i}")
        return
    if mode in ("get", "list"):
        for i in range(count):
            call("GET", f"/bank-accounts/{accounts[i % len(accounts)]}" if mode == "get" else "/bank-accounts?limit=100")
        return
    for i in range(count):
        a, b = rng.sample(accounts, 2)
        body = {"sender_bank_account_id": a, "receiver_bank_account_id": b, "amount": 1, "description": "one at a time"}
        call("POST", "/transfers/book", body, key=f"{prefix}{i}")


transfers(300, "warm")
perf = None
if os.environ.get("PERF"):
    perf = subprocess.Popen(["perf", "record", "-F", "2999", "-g", "-o", os.environ["PERF"], "-p", str(server.pid)],
                            stderr=subprocess.DEVNULL)
    time.sleep(1)
cpu0, (bytes0, calls0), t0 = cpu_seconds(), written(), time.time()
transfers(n, "run")
cpu1, (bytes1, calls1), t1 = cpu_seconds(), written(), time.time()
if perf:
    perf.send_signal(2)
    perf.wait()
print(f"{tag}: cpu {1e6 * (cpu1 - cpu0) / n:.0f} us/request, wall {1e6 * (t1 - t0) / n:.0f} us, "
      f"wchar {(bytes1 - bytes0) / n:.0f} B/request, writes {(calls1 - calls0) / n:.1f}/request")
