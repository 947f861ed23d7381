#!/usr/bin/env python3
"""Faults injected while money moves: bankd under a PostgreSQL outage and a full disk.

Run through `scripts/faults [postgres|disk|postgres-disk|all]` (which builds bankd, and cleans
up after a crash of this script); standard library only. Environment set by the launcher:

  BANKD_BIN      the bankd binary to start (a copy, so rebuilds of target/ do not disturb it)
  FAULTS_WORK    a directory for logs and the tmpfs mount point
  FAULTS_DB      the name of the throw-away PostgreSQL database
  FAULTS_PG_VER  the PostgreSQL cluster version (`pg_ctlcluster VER main ...`)
  FAULTS_PGDISK_DB, FAULTS_TABLESPACE, FAULTS_PGDISK_MNT
                 postgres-disk's database, tablespace and tmpfs mount point

Scenarios:

  postgres  bankd on a fresh PostgreSQL database; 32 threads send 400 keyed book transfers (a
            quarter of them held, then cleared with a request of their own), each resent with its
            Idempotency-Key on 503 or a connection error; about 1 s in, PostgreSQL is stopped
            (`-m fast`) for 2 s and started again while /readyz is polled every 100 ms. Then:
            no 5xx but 503, the outage was seen (a 503), /readyz 200, every key applied exactly
            once and answered 200, every hold cleared once, the books balance (to the cent, per
            account), every transfer has its events, and a local webhook receiver got every
            `book.transfer.*` event.
  disk      bankd on SQLite on a 24 MiB tmpfs; 16 threads of keyed book transfers and 4 threads
            uploading 256 KiB documents until the disk is full. Then: no 500, full uploads are
            503 `storage_full`, reads still answer 200 while full, /readyz said `storage_full`;
            the tmpfs grows to 96 MiB, every write refused is resent with its key until applied,
            /readyz 200, every key applied once, books balance, the documents listed are exactly
            the uploads answered 200, and `PRAGMA integrity_check` is `ok` after bankd stops.
  postgres-disk
            the `disk` scenario on PostgreSQL: a 32 MiB tmpfs (owned by postgres) is the
            location of a tablespace, and a fresh database lives in it (every table and its
            TOAST data; the WAL stays on the main disk). The same storm until uploads are
            refused (SQLSTATE 53100 disk_full, answered 503 storage_full), the same checks
            while full, plus a CHECKPOINT that must still succeed; then the tmpfs grows to
            128 MiB and the same checks as `disk` follow, with `bankd ledger check` clean.
            What PostgreSQL answered (bankd's log, the server log) is noted. The database,
            the tablespace and the mount are removed in every case.

Exit status 0 only when every assertion of every scenario run holds. A Markdown table of the
results is printed at the end.
"""

import base64
import collections
import http.client
import http.server
import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

T0 = time.monotonic()

# Resending: waits start at 100 ms, double, honour Retry-After, and never exceed MAX_WAIT; a
# write not answered 200 within GIVE_UP seconds of its first attempt fails the scenario.
MAX_WAIT = 2.0
GIVE_UP = 90.0
HTTP_TIMEOUT = 40.0  # above bankd's 30 s request timeout


def log(msg):
    print(f"[faults {time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def now():
    return time.monotonic()


# --------------------------------------------------------------------------------------- HTTP


class Resp:
    __slots__ = ("status", "headers", "json", "text", "error", "t", "request_id")

    def __init__(self, status, headers, body, error, t):
        self.status = status
        self.headers = headers or {}
        self.error = error
        self.t = t
        self.text = body.decode("utf-8", "replace") if body else ""
        self.json = None
        if body:
            try:
                self.json = json.loads(body)
            except ValueError:
                pass
        self.request_id = self.headers.get("x-request-id") if headers else None

    @property
    def code(self):
        if isinstance(self.json, dict):
            return self.json.get("code")
        return None

    def brief(self):
        if self.status is None:
            return f"connection error {self.error}"
        extra = f" {self.code}" if self.code else ""
        rid = f" (x-request-id {self.request_id})" if self.request_id else ""
        return f"{self.status}{extra}{rid}"


class Recorder:
    """Every answer of a scenario: status counts, 503 codes, and every 5xx other than 503."""

    def __init__(self):
        self.lock = threading.Lock()
        self.statuses = collections.Counter()
        self.codes_503 = collections.Counter()
        self.times_503 = []
        self.conn_errors = 0
        self.conn_error_times = []
        self.bad = []  # (when, method, path, key, status, body, request id)
        self.conflicts = []  # 503 transaction_conflict answers: (when, method, path, key, rid)
        self.by_op = collections.defaultdict(collections.Counter)

    def note(self, method, path, resp, key=None, op=None):
        with self.lock:
            if resp.status is None:
                self.conn_errors += 1
                self.conn_error_times.append(resp.t)
                self.statuses["conn_error"] += 1
                if op:
                    self.by_op[op]["conn_error"] += 1
                return
            self.statuses[resp.status] += 1
            if op:
                label = str(resp.status) + (f" {resp.code}" if resp.status >= 400 and resp.code else "")
                self.by_op[op][label] += 1
            if resp.status == 503 and op == "readyz":
                pass  # the poller keeps /readyz's answers
            elif resp.status == 503:
                self.codes_503[resp.code or "?"] += 1
                self.times_503.append(resp.t)
                if resp.code == "transaction_conflict":
                    self.conflicts.append((resp.t - T0, method, path, key, resp.request_id))
            elif resp.status >= 500:
                self.bad.append((resp.t - T0, method, path, key, resp.status, resp.text[:2000],
                                 resp.request_id))

    def other_5xx(self):
        return len(self.bad)


class Api:
    def __init__(self, base, key, rec):
        self.base = base
        self.auth = "Basic " + base64.b64encode(f":{key}".encode()).decode()
        self.rec = rec

    def request(self, method, path, body=None, headers=None, op=None, timeout=HTTP_TIMEOUT,
                auth=True):
        hdrs = {}
        if auth:
            hdrs["Authorization"] = self.auth
        data = None
        if isinstance(body, (bytes, bytearray)):
            data = bytes(body)
        elif body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        if headers:
            hdrs.update(headers)
        key = hdrs.get("Idempotency-Key")
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, h, raw = r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            status, h = e.code, e.headers
            try:
                raw = e.read()
            except (OSError, http.client.HTTPException):
                raw = b""
        except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
            resp = Resp(None, None, b"", repr(e), now())
            self.rec.note(method, path, resp, key, op)
            return resp
        resp = Resp(status, {k.lower(): v for k, v in h.items()}, raw, None, now())
        self.rec.note(method, path, resp, key, op)
        return resp

    def get_ok(self, path, op="read", deadline=30.0):
        """A GET resent on 503 or connection errors; raises unless 200."""
        outcome, r = send(self, "GET", path, op=op, give_up=deadline)
        if outcome != "answered" or r.status != 200:
            raise Failure(f"GET {path}: {r.brief()} {r.text[:300]}")
        return r.json

    def list_all(self, path, field, op="read"):
        out = []
        after = None
        sep = "&" if "?" in path else "?"
        while True:
            q = f"{path}{sep}limit=100" + (f"&starting_after={after}" if after else "")
            page = self.get_ok(q, op=op)
            out.extend(page[field])
            if not page["has_more"] or not page[field]:
                return out
            after = page[field][-1]["id"]


class Failure(Exception):
    pass


def retry_after(r):
    try:
        return float(r.headers.get("retry-after", ""))
    except ValueError:
        return None


def send(api, method, path, body=None, headers=None, op=None, give_up=GIVE_UP,
         stop_on_full=False, stop=None):
    """Sends until an answer that is not worth resending. Returns (outcome, last response):
    `answered` (any status but 5xx, 409 in use, 429),
    `full` (503 storage_full with stop_on_full), `stopped` (stop was set while resending) or
    `gave_up` (no such answer within give_up seconds)."""
    deadline = now() + give_up
    wait = 0.1
    while True:
        r = api.request(method, path, body, headers, op=op)
        s = r.status
        if s is not None:
            # Any 5xx is resent: a 503 as the answer asks; another 5xx (recorded as bad, which
            # fails the scenario) as a careful client would, so that the books can still be
            # checked for what the error left behind.
            resend = s >= 500 or s == 429 or (s == 409 and r.code == "idempotency_key_in_use")
            if not resend:
                return "answered", r
            if s == 503 and r.code == "storage_full" and stop_on_full:
                return "full", r
        if stop is not None and stop.is_set():
            return "stopped", r
        if now() > deadline:
            return "gave_up", r
        w = wait
        ra = retry_after(r) if s is not None else None
        if ra is not None:
            w = max(w, ra)
        w = min(w, MAX_WAIT) * random.uniform(0.8, 1.2)
        time.sleep(w)
        wait = min(wait * 2, MAX_WAIT)


# ----------------------------------------------------------------------------------- bankd


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Bankd:
    def __init__(self, binary, database_url, work, name, env=None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.stdout_path = os.path.join(work, f"{name}.stdout")
        self.log_path = os.path.join(work, f"{name}.bankd.log")
        full_env = dict(os.environ)
        full_env.pop("BANKD_DATABASE_URL", None)
        full_env.setdefault("NO_COLOR", "1")  # plain text logs, to grep
        full_env.update(env or {})
        self.database_url = database_url
        self.binary = binary
        self.env = full_env
        with open(self.stdout_path, "wb") as out, open(self.log_path, "wb") as err:
            self.proc = subprocess.Popen(
                [binary, "--database-url", database_url, "serve", "--listen",
                 f"127.0.0.1:{self.port}"],
                stdout=out, stderr=err, env=full_env)
        with open(os.path.join(work, "pids"), "a") as f:
            f.write(f"{self.proc.pid}\n")
        deadline = now() + 60
        while True:
            if self.proc.poll() is not None:
                raise Failure(f"bankd exited with {self.proc.returncode}; log {self.log_path}:\n"
                              + tail(self.log_path))
            try:
                with urllib.request.urlopen(self.base + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, http.client.HTTPException, OSError):
                pass
            if now() > deadline:
                raise Failure("bankd did not answer /healthz within 60 s")
            time.sleep(0.05)
        with open(self.stdout_path) as f:
            first = json.loads(f.readline())
        self.key = first["api_key"]
        self.platform_id = first["platform_id"]
        log(f"bankd pid {self.proc.pid} on {self.base} ({database_url}), log {self.log_path}")

    def alive(self):
        return self.proc.poll() is None

    def stop(self, grace=40):
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def ledger_check(self):
        r = subprocess.run([self.binary, "--database-url", self.database_url, "ledger", "check",
                            "--platform", self.platform_id],
                           capture_output=True, text=True, env=self.env, timeout=120)
        return r.returncode, (r.stdout.strip() or r.stderr.strip())[-2000:]


def tail(path, n=40):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError as e:
        return f"(no log: {e})"


def log_lines_with(path, needle, limit=20):
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if needle in line:
                    out.append(line.rstrip("\n"))
                    if len(out) >= limit:
                        break
    except OSError:
        pass
    return out


# --------------------------------------------------------------------------- readiness poll


class ReadyPoller(threading.Thread):
    """Sends GET /readyz every 100 ms, each on a thread of its own (a probe may take up to the
    2 s bankd gives the database, and the polling must not slow down to that), and keeps every
    answer with the time it was sent."""

    def __init__(self, bankd, rec, interval=0.1, max_in_flight=40):
        super().__init__(daemon=True)
        self.api = Api(bankd.base, bankd.key, rec)
        self.interval = interval
        self.max_in_flight = max_in_flight
        self.stop_event = threading.Event()
        self.samples = []  # (t sent, status or None, reason)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.probes = []

    def probe(self):
        sent = now()
        r = self.api.request("GET", "/readyz", op="readyz", timeout=5, auth=False)
        reason = r.json.get("reason") if isinstance(r.json, dict) else r.error
        with self.lock:
            self.samples.append((sent, r.status, reason))
            self.in_flight -= 1

    def run(self):
        while not self.stop_event.is_set():
            with self.lock:
                go = self.in_flight < self.max_in_flight
                if go:
                    self.in_flight += 1
            if go:
                t = threading.Thread(target=self.probe, daemon=True)
                t.start()
                self.probes.append(t)
            self.stop_event.wait(self.interval)

    def seen(self, status=None, reason=None, since=None, until=None):
        with self.lock:
            return [s for s in self.samples
                    if (status is None or s[1] == status)
                    and (reason is None or s[2] == reason)
                    and (since is None or s[0] >= since)
                    and (until is None or s[0] <= until)]

    def summary(self):
        with self.lock:
            c = collections.Counter(
                f"{s}{' ' + r if s != 200 and r else ''}" if s else "no answer"
                for _, s, r in self.samples)
        return ", ".join(f"{k}: {v}" for k, v in c.most_common())

    def finish(self):
        self.stop_event.set()
        self.join(10)
        for t in self.probes:
            t.join(10)


def wait_ready(bankd, rec, within=40.0):
    api = Api(bankd.base, bankd.key, rec)
    deadline = now() + within
    while True:
        r = api.request("GET", "/readyz", op="readyz", timeout=5, auth=False)
        if r.status == 200:
            return r
        if now() > deadline:
            return r
        time.sleep(0.2)


# ------------------------------------------------------------------------------ the ledger


class Job:
    """One keyed book transfer, maybe held and then cleared."""

    def __init__(self, key, sender, receiver, amount, hold):
        self.key = key
        self.sender = sender
        self.receiver = receiver
        self.amount = amount
        self.hold = hold
        self.transfer_id = None
        self.created = False      # the create was answered 200
        self.cleared = False      # the clear was answered 200 (or found applied)
        self.clear_found_applied = False
        self.create_replayed = False
        self.pending = False      # refused for a full disk; to resend
        self.error = None
        self.attempted_clear = False

    def body(self):
        b = {"amount": self.amount, "currency_code": "USD",
             "sender_bank_account_id": self.sender, "receiver_bank_account_id": self.receiver,
             "description": self.key}
        if self.hold:
            b["hold"] = True
        return b

    def done(self):
        return self.created and (not self.hold or self.cleared)


def run_job(api, job, stop_on_full=False, stop=None, give_up=GIVE_UP):
    """Runs what is left of a job. Sets job.pending when a full disk refused it (stop_on_full)
    or the storm ended while it was being resent; job.error on anything unexpected."""
    job.pending = False
    if not job.created:
        outcome, r = send(api, "POST", "/transfers/book", job.body(),
                          {"Idempotency-Key": job.key}, op="create_book_transfer",
                          give_up=give_up, stop_on_full=stop_on_full, stop=stop)
        if outcome in ("full", "stopped"):
            job.pending = True
            return
        if outcome == "gave_up":
            job.error = f"create {job.key}: not answered 200 within {give_up:.0f} s: {r.brief()}"
            return
        if r.status != 200:
            job.error = f"create {job.key}: answered {r.brief()}: {r.text[:300]}"
            return
        want = "HOLD" if job.hold else "COMPLETED"
        if r.json.get("status") != want:
            job.error = f"create {job.key}: status {r.json.get('status')}, expected {want}"
            return
        job.created = True
        job.create_replayed = r.headers.get("idempotent-replayed") == "true"
        job.transfer_id = r.json["id"]
    if job.hold and not job.cleared:
        job.attempted_clear = True
        path = f"/transfers/book/{job.transfer_id}/clear"
        outcome, r = send(api, "POST", path, {}, op="clear_book_transfer", give_up=give_up,
                          stop_on_full=stop_on_full, stop=stop)
        if outcome in ("full", "stopped"):
            job.pending = True
            return
        if outcome == "gave_up":
            job.error = f"clear {job.key}: not answered 200 within {give_up:.0f} s: {r.brief()}"
            return
        if r.status == 200 and r.json.get("status") == "COMPLETED":
            job.cleared = True
            return
        if r.status == 400 and r.code == "transfer_not_on_hold":
            # An earlier attempt may have been applied with its answer lost (a 503 caught at
            # the commit, a dropped connection): read the transfer.
            t = api.get_ok(f"/transfers/book/{job.transfer_id}", op="get_book_transfer")
            if t["status"] == "COMPLETED":
                job.cleared = True
                job.clear_found_applied = True
                return
            job.error = f"clear {job.key}: 400 transfer_not_on_hold but status {t['status']}"
            return
        job.error = f"clear {job.key}: answered {r.brief()}: {r.text[:300]}"


def setup_accounts(api, tag, n_accounts, funding):
    """A person and n funded bank accounts; returns [(account id, account number id)]."""
    outcome, r = send(api, "POST", "/entities/person",
                      {"first_name": "Fault", "last_name": "Tester"},
                      {"Idempotency-Key": f"{tag}-person"}, op="setup")
    if r.status != 200:
        raise Failure(f"create person: {r.brief()} {r.text[:300]}")
    person = r.json["id"]
    accounts = []
    for i in range(n_accounts):
        outcome, r = send(api, "POST", "/bank-accounts",
                          {"entity_id": person, "description": f"faults account {i}"},
                          {"Idempotency-Key": f"{tag}-account-{i}"}, op="setup")
        if r.status != 200:
            raise Failure(f"create bank account: {r.brief()} {r.text[:300]}")
        accounts.append((r.json["id"], r.json["default_account_number_id"]))
    for acc, acno in accounts:
        # Not keyed (the operation takes no Idempotency-Key): sent once; a 503 fails setup.
        r = api.request("POST", "/simulate/receive-ach-credit",
                        {"destination_account_number_id": acno, "amount": funding,
                         "company_id": "FAULTS0001", "company_name": "FAULTS FUNDING",
                         "description": "FUNDING"}, op="setup")
        if r.status != 200 or r.json.get("status") != "COMPLETED":
            raise Failure(f"fund {acc}: {r.brief()} {r.text[:300]}")
    return accounts


def make_job(rnd, key, accounts, hold_share):
    a, b = rnd.sample(accounts, 2)
    return Job(key, a[0], b[0], rnd.randint(1, 999), rnd.random() < hold_share)


def check_books(api, jobs, accounts, funding, checks):
    """Transfers by key, holds cleared, balances (sum zero and every account to the cent)."""
    transfers = api.list_all("/transfers/book", "transfers")
    by_key = collections.defaultdict(list)
    for t in transfers:
        by_key[t.get("description")].append(t)
    applied_once = 0
    problems = []
    for j in jobs:
        found = by_key.get(j.key, [])
        if len(found) != 1:
            problems.append(f"key {j.key}: {len(found)} transfers {[t['id'] for t in found]}")
            continue
        t = found[0]
        if t.get("idempotency_key") != j.key:
            problems.append(f"key {j.key}: transfer {t['id']} has idempotency_key "
                            f"{t.get('idempotency_key')!r}")
        if j.transfer_id and t["id"] != j.transfer_id:
            problems.append(f"key {j.key}: listed {t['id']}, answered {j.transfer_id}")
        if t["status"] != "COMPLETED" or t["amount"] != j.amount:
            problems.append(f"key {j.key}: {t['id']} status {t['status']} amount {t['amount']},"
                            f" expected COMPLETED {j.amount}")
            continue
        applied_once += 1
    keys = {j.key for j in jobs}
    strays = [t["id"] for t in transfers if t.get("description") not in keys]
    if strays:
        problems.append(f"{len(strays)} transfers no job sent: {strays[:5]}")
    checks.append(("every key applied exactly once, COMPLETED with its amount",
                   not problems, f"{applied_once}/{len(jobs)}; " + "; ".join(problems[:8])))
    held = [j for j in jobs if j.hold]
    checks.append(("every hold cleared (COMPLETED)",
                   all(j.cleared for j in held) and not problems,
                   f"{sum(j.cleared for j in held)}/{len(held)} cleared, "
                   f"{sum(j.clear_found_applied for j in held)} found applied by an earlier "
                   f"attempt"))

    all_accounts = api.list_all("/bank-accounts", "bank_accounts")
    total = 0
    mismatch = []
    expected = {acc: funding for acc, _ in accounts}
    for j in jobs:
        expected[j.sender] -= j.amount
        expected[j.receiver] += j.amount
    for a in all_accounts:
        bal = a["balances"]
        total += (bal["available_amount"] + bal["pending_amount"] + bal["holding_amount"]
                  + bal["locked_amount"])
        if a["id"] in expected:
            want = expected[a["id"]]
            if (bal["available_amount"], bal["pending_amount"], bal["holding_amount"],
                    bal["locked_amount"]) != (want, 0, 0, 0):
                mismatch.append(f"{a['id']}: {bal}, expected available {want}")
        elif a["type"] == "NETWORK_SETTLEMENT_ACCOUNT":
            want = -funding * len(accounts)
            if bal["available_amount"] != want:
                mismatch.append(f"settlement {a['id']}: {bal}, expected available {want}")
    checks.append(("books balance: sum of available+pending+holding+locked over all accounts "
                   "is 0", total == 0, f"sum {total} over {len(all_accounts)} accounts"))
    checks.append(("every account's balances equal funding + transfers in - transfers out",
                   not mismatch, "; ".join(mismatch[:6]) or f"{len(expected)} accounts exact"))
    return transfers, applied_once


def check_transfer_events(api, transfers, jobs, checks):
    """Each transfer has its book.transfer.* events: one `completed` (and one `hold_created`
    when held), never two of a kind (a doubled clear would show as two `completed`)."""
    events = api.list_all("/events", "events")
    per = collections.defaultdict(collections.Counter)
    for e in events:
        if e["type"].startswith("book.transfer."):
            per[e["data"]["id"]][e["type"]] += 1
    held = {j.transfer_id for j in jobs if j.hold}
    by_key = {t["description"]: t for t in transfers}
    bad = []
    for j in jobs:
        t = by_key.get(j.key)
        if t is None:
            continue
        want = collections.Counter({"book.transfer.completed": 1})
        if t["id"] in held or j.hold:
            want["book.transfer.hold_created"] = 1
        if per[t["id"]] != want:
            bad.append(f"{t['id']} ({j.key}): {dict(per[t['id']])}")
    checks.append(("every transfer has its book.transfer.* events, each once", not bad,
                   f"{len(transfers) - len(bad)}/{len(transfers)} transfers; "
                   + "; ".join(bad[:6])))
    return events


# -------------------------------------------------------------------- the webhook receiver


class Receiver:
    def __init__(self):
        self.lock = threading.Lock()
        self.ids = collections.Counter()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                wid = self.headers.get("webhook-id")
                with receiver.lock:
                    receiver.ids[wid] += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def received(self):
        with self.lock:
            return set(self.ids)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# ------------------------------------------------------------------------------ scenarios


class Result:
    def __init__(self, scenario):
        self.scenario = scenario
        self.faults = ""
        self.attempted = ""
        self.acknowledged = ""
        self.found = ""
        self.other_5xx = 0
        self.balances = "no"
        self.checks = []  # (name, ok, detail)
        self.error = None
        self.problems = []  # bankd problems to report (5xx other than 503, ...)
        self.problem_kinds = []  # the same, counted by operation and logged error
        self.notes = []  # worth knowing, not failures

    def ok(self):
        return self.error is None and self.checks and all(ok for _, ok, _ in self.checks)


def run_cmd(args, check=True):
    log("$ " + " ".join(args))
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise Failure(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
    return r


def report_bad(rec, bankd, result):
    if rec.bad:
        kinds = collections.Counter()
        for _, method, path, _, status, _, rid in rec.bad:
            errors = []
            for line in log_lines_with(bankd.log_path, rid) if rid else []:
                if " ERROR " in line and " error=" in line:
                    where = line.split(" ERROR ", 1)[1].split(" request_id=", 1)[0]
                    errors.append(f"{where}: {line.split(' error=', 1)[1]}")
            template = "/".join("{id}" if "_" in seg and seg.split("_")[0].isalpha() and
                                len(seg) > 20 else seg for seg in path.split("/"))
            kinds[f"{method} {template} -> {status}: {errors[0] if errors else '?'}"] += 1
        log(f"bankd answered {len(rec.bad)} times with a 5xx other than 503; bankd log "
            f"{bankd.log_path}")
        for k, n in kinds.most_common():
            result.problem_kinds.append(f"{n} x {k}")
    for when, method, path, key, status, body, rid in rec.bad:
        lines = log_lines_with(bankd.log_path, rid) if rid else []
        msg = (f"{method} {path} (Idempotency-Key {key}) at {when:.1f}s answered {status}: "
               f"{body[:500]}\n    x-request-id {rid}; bankd log lines:\n      "
               + ("\n      ".join(lines) if lines else "(none with that request id)"))
        result.problems.append(msg)


def scenario_postgres(env, result):
    pgver = env["FAULTS_PG_VER"]
    db = env["FAULTS_DB"]
    work = env["FAULTS_WORK"]
    pg = ["-h", "127.0.0.1", "-p", "5432", "-U", "postgres"]
    ctl = ["pg_ctlcluster", "--skip-systemctl-redirect", pgver, "main"]
    rec = Recorder()
    bankd = None
    receiver = None
    poller = None
    fault = {}
    run_cmd(["dropdb", "--if-exists", "--force", *pg, db])
    run_cmd(["createdb", *pg, db])
    try:
        bankd = Bankd(env["BANKD_BIN"], f"postgres://postgres@127.0.0.1:5432/{db}", work,
                      "postgres", {"BANKD_WEBHOOK_RETRY_INITIAL_MS": "200"})
        api = Api(bankd.base, bankd.key, rec)
        receiver = Receiver()
        outcome, r = send(api, "POST", "/webhook-endpoints",
                          {"url": receiver.url, "enabled_events": ["book.transfer.*"],
                           "description": "faults receiver"}, op="setup")
        if r.status != 200:
            raise Failure(f"create webhook endpoint: {r.brief()} {r.text[:300]}")
        endpoint = r.json["id"]
        funding = 1_000_000
        accounts = setup_accounts(api, "pg", 8, funding)
        log(f"setup: 8 accounts funded with {funding} each, webhook endpoint {endpoint}")

        rnd = random.Random(int(env.get("FAULTS_SEED", "0")) or None)
        run = f"pg-{os.getpid()}-{int(time.time())}"
        jobs = [make_job(rnd, f"{run}-{i:03d}", accounts, 0.25) for i in range(400)]
        queue = collections.deque(jobs)
        qlock = threading.Lock()
        done_count = [0]

        def worker():
            while True:
                with qlock:
                    if not queue:
                        return
                    job = queue.popleft()
                run_job(api, job)
                with qlock:
                    done_count[0] += 1
                # a little pacing, so that the storm is still on when the fault lands
                time.sleep(random.uniform(0.0, 0.08))

        marker = os.path.join(work, "pg-outage")  # tells the launcher's trap to start it

        def inject():
            time.sleep(1.0)
            fault["jobs_done_at_stop"] = done_count[0]
            fault["stop_begin"] = now()
            open(marker, "w").close()
            try:
                log("fault: PostgreSQL stop -m fast")
                fault["stop"] = run_cmd([*ctl, "stop", "-m", "fast"], check=False)
                fault["stopped"] = now()
                time.sleep(2.0)
            finally:
                log("fault: PostgreSQL start")
                fault["start"] = run_cmd([*ctl, "start"], check=False)
                fault["started"] = now()
                fault["jobs_done_at_start"] = done_count[0]
                if fault["start"].returncode == 0:
                    os.unlink(marker)

        poller = ReadyPoller(bankd, rec)
        poller.start()
        storm_begin = now()
        log("storm: 32 threads, 400 keyed book transfers (a quarter held, then cleared)")
        threads = [threading.Thread(target=worker, daemon=True) for _ in range(32)]
        fault_thread = threading.Thread(target=inject, daemon=True)
        for t in threads:
            t.start()
        fault_thread.start()
        for t in threads:
            t.join(GIVE_UP * 3)
        fault_thread.join(60)
        storm_end = now()
        log(f"storm over in {storm_end - storm_begin:.1f}s; readyz during it: {poller.summary()}")
        ready = wait_ready(bankd, rec)
        poller.finish()

        checks = result.checks
        if fault.get("stop") is None or fault["stop"].returncode != 0 or \
                fault.get("start") is None or fault["start"].returncode != 0:
            checks.append(("PostgreSQL stopped and started", False,
                           f"stop: {getattr(fault.get('stop'), 'stderr', '')!r} "
                           f"start: {getattr(fault.get('start'), 'stderr', '')!r}"))
        else:
            checks.append(("PostgreSQL stopped and started", True,
                           f"stop began {fault['stop_begin'] - storm_begin:.1f}s into the storm;"
                           f" stopping took {fault['stopped'] - fault['stop_begin']:.1f}s, then"
                           f" down {fault['started'] - fault['stopped']:.1f}s until started"))
        hit = fault.get("jobs_done_at_stop", len(jobs)) < len(jobs)
        checks.append(("the outage hit the storm (transfers still under way)", hit,
                       f"{fault.get('jobs_done_at_stop')}/{len(jobs)} jobs done at the stop, "
                       f"{fault.get('jobs_done_at_start')} at the start"))
        if "stop_begin" in fault and "started" in fault:
            lo, hi = fault["stop_begin"], fault["started"] + 3.0
            api_503 = [t for t in rec.times_503 if lo <= t <= hi]
            ready_503 = poller.seen(status=503, since=lo, until=hi)
            ok = bool(api_503 or ready_503)
            checks.append(("the outage was observed: a 503 from /readyz or the API during it", ok,
                           f"/readyz 503 x{len(ready_503)}, API 503 x{len(api_503)}"
                           + ("" if ok else " -- the restart was too fast to observe")))
        checks.append(("/readyz 200 after the storm", ready.status == 200, ready.brief()))
        checks.append(("no 5xx other than 503 (API and /readyz)", rec.other_5xx() == 0,
                       f"{rec.other_5xx()} (503 codes: {dict(rec.codes_503)}, connection "
                       f"errors: {rec.conn_errors})"))
        errs = [j.error for j in jobs if j.error]
        acked = sum(j.created for j in jobs)
        checks.append(("every key answered 200 (resent with its key until it was)",
                       acked == len(jobs) and not errs,
                       f"{acked}/{len(jobs)}, {sum(j.create_replayed for j in jobs)} answered by "
                       f"a replay; " + "; ".join(errs[:5])))
        transfers, applied = check_books(api, jobs, accounts, funding, checks)
        result.balances = "yes"
        events = check_transfer_events(api, transfers, jobs, checks)

        expected = {e["id"] for e in events if e["type"].startswith("book.transfer.")}
        deadline = now() + 30
        while True:
            missing = expected - receiver.received()
            if not missing or now() > deadline:
                break
            time.sleep(0.25)
        delivered = len(expected) - len(missing)
        detail = f"{delivered}/{len(expected)} event ids received"
        if missing:
            sample = sorted(missing)[:5]
            detail += f"; missing {sample}"
            try:
                atts = api.list_all(f"/webhook-endpoints/{endpoint}/deliveries", "deliveries")
            except (Failure, KeyError):
                atts = []
            if atts:
                detail += f"; {len(atts)} delivery attempts listed"
        checks.append(("the webhook receiver got every book.transfer.* event (within 30 s)",
                       not missing, detail))
        code, out = bankd.ledger_check()
        checks.append(("`bankd ledger check`: postings match balances", code == 0, out[:300]))
        alive = bankd.alive()
        rc = bankd.stop()
        checks.append(("bankd ran throughout and drained on SIGTERM (exit 0)", alive and rc == 0,
                       f"exit {rc}"))

        held = [j for j in jobs if j.hold]
        result.faults = ("PostgreSQL `stop -m fast` 1 s into the storm, `start` 2 s after it "
                         "stopped" + (f" (down {fault['started'] - fault['stop_begin']:.1f} s)"
                                      if "started" in fault else ""))
        result.attempted = f"{len(jobs)} transfers ({len(held)} held) + {len(held)} clears"
        result.acknowledged = (f"{acked} transfers + {sum(j.cleared for j in held)} clears "
                               f"answered 200")
        result.found = (f"{applied} transfers, once each; {sum(j.cleared for j in held)} holds "
                        f"COMPLETED; {delivered}/{len(expected)} events delivered")
        log(f"answers by operation: "
            + "; ".join(f"{op}: {dict(c)}" for op, c in sorted(rec.by_op.items())))
    finally:
        result.other_5xx = rec.other_5xx()
        if poller is not None:
            poller.finish()
        if bankd is not None:
            report_bad(rec, bankd, result)
            bankd.stop()
        if receiver is not None:
            receiver.close()
        if fault.get("stop_begin") and not fault.get("started"):
            # Interrupted during the outage: wait for the stop, then start the cluster.
            fault_thread.join(30)
            if not fault.get("started"):
                run_cmd([*ctl, "start"], check=False)
        run_cmd(["dropdb", "--if-exists", "--force", *pg, db], check=False)


def multipart(key, data):
    boundary = "faults" + key.replace("-", "")
    parts = [
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"type\"\r\n\r\nother\r\n",
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"description\"\r\n\r\n{key}\r\n",
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
        f"filename=\"{key}.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n",
    ]
    body = "".join(parts).encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


class Upload:
    def __init__(self, key, size):
        self.key = key
        self.body, self.ctype = multipart(key, os.urandom(size))
        self.acked = False
        self.pending = False
        self.error = None
        self.full_answers = 0
        self.doc_id = None


def run_upload(api, up, stop_on_full, stop=None):
    up.pending = False
    outcome, r = send(api, "POST", "/documents", up.body,
                      {"Idempotency-Key": up.key, "Content-Type": up.ctype},
                      op="upload_document", stop_on_full=stop_on_full, stop=stop)
    if outcome in ("full", "stopped"):
        if outcome == "full":
            up.full_answers += 1
        up.pending = True
        return
    if outcome == "gave_up":
        up.error = f"upload {up.key}: not answered 200 within {GIVE_UP:.0f} s: {r.brief()}"
        return
    if r.status != 200:
        up.error = f"upload {up.key}: answered {r.brief()}: {r.text[:300]}"
        return
    up.acked = True
    up.doc_id = r.json["id"]


class DiskStorm:
    """What the storm of a disk scenario left: its writes, and what was found after."""

    def __init__(self):
        self.jobs = []
        self.uploads = []
        self.pending = 0  # writes refused for the full disk, resent after it grew
        self.applied = 0  # transfers found applied, once each
        self.docs = 0  # documents listed


def fill_and_grow(env, result, bankd, rec, api, accounts, funding, tag, mnt, grow_mib,
                  while_full=None):
    """The storm of the disk scenarios, on a bankd whose storage lives on the tmpfs at mnt:
    16 threads of keyed book transfers and 4 threads uploading 256 KiB documents until the
    uploads are refused 503 storage_full. While full: reads answer 200, /readyz says
    storage_full, then while_full() (checks of the scenario's own). The tmpfs then grows to
    grow_mib, every write refused is resent with its key until applied, and the books,
    events, documents and `bankd ledger check` are checked, and bankd drained with SIGTERM."""
    out = DiskStorm()
    rnd = random.Random(int(env.get("FAULTS_SEED", "0")) or None)
    run = f"{tag}-{os.getpid()}-{int(time.time())}"
    jobs = out.jobs
    uploads = out.uploads
    lock = threading.Lock()
    stop = threading.Event()
    uploads_full = threading.Event()
    full_uploaders = [0]

    def transfer_worker(n):
        wr = random.Random(rnd.random())
        for i in range(40):
            if stop.is_set():
                return
            job = make_job(wr, f"{run}-t{n:02d}-{i:02d}", accounts, 0.25)
            with lock:
                jobs.append(job)
            run_job(api, job, stop_on_full=True, stop=stop)
            if job.pending:
                time.sleep(0.3)  # refused for a full disk: resent after it grows
            else:
                time.sleep(wr.uniform(0.0, 0.05))

    def upload_worker(n):
        i = 0
        while not stop.is_set():
            up = Upload(f"{run}-u{n}-{i:03d}", 256 * 1024)
            i += 1
            with lock:
                uploads.append(up)
            run_upload(api, up, stop_on_full=True, stop=stop)
            if up.pending or up.error:
                break
        with lock:
            full_uploaders[0] += 1
            if full_uploaders[0] == 4:
                uploads_full.set()

    poller = ReadyPoller(bankd, rec)
    try:
        poller.start()
        storm_begin = now()
        log("storm: 16 threads of keyed book transfers, 4 threads uploading 256 KiB documents")
        threads = [threading.Thread(target=transfer_worker, args=(n,), daemon=True)
                   for n in range(16)]
        threads += [threading.Thread(target=upload_worker, args=(n,), daemon=True)
                    for n in range(4)]
        for t in threads:
            t.start()
        filled = uploads_full.wait(90)
        t_full = now()
        log(f"uploads stopped after {t_full - storm_begin:.1f}s ({'disk full' if filled else 'timeout'});"
            f" {sum(u.acked for u in uploads)} uploaded; df: "
            + run_cmd(["df", "-k", mnt], check=False).stdout.splitlines()[-1])
        # While full: reads answer 200.
        reads = []
        for path in ["/bank-accounts?limit=100", "/documents?limit=100", "/transfers/book?limit=100",
                     "/events?limit=100", f"/bank-accounts/{accounts[0][0]}",
                     "/entities?limit=10"]:
            r = api.request("GET", path, op="read_while_full")
            reads.append((path, r))
        done_docs = [u for u in uploads if u.acked]
        if done_docs:
            r = api.request("GET", f"/documents/{done_docs[0].doc_id}", op="read_while_full")
            reads.append(("/documents/{id}", r))
        # /readyz says storage_full at some point (it may be a moment behind the first refusal).
        deadline = now() + 5
        while not poller.seen(status=503, reason="storage_full") and now() < deadline:
            time.sleep(0.1)
        if while_full is not None:
            while_full()
        time.sleep(1.0)  # the transfers keep meeting the full disk a little longer
        stop.set()
        for t in threads:
            t.join(60)
        log(f"storm stopped; readyz so far: {poller.summary()}")
        checks = result.checks
        checks.append(("the disk filled: uploads refused with 503 storage_full", filled and any(
            u.full_answers for u in uploads), f"{sum(u.full_answers for u in uploads)} uploads "
            f"refused, {len(done_docs)} stored before"))
        bad_reads = [f"{p}: {r.brief()}" for p, r in reads if r.status != 200]
        checks.append(("reads answer 200 while the disk is full", not bad_reads,
                       f"{len(reads) - len(bad_reads)}/{len(reads)} " + "; ".join(bad_reads)))
        up_ops = rec.by_op.get("upload_document", collections.Counter())
        wrong = {k: v for k, v in up_ops.items() if k.startswith("503") and k != "503 storage_full"}
        checks.append(("uploads that do not fit are 503 storage_full (no transaction_conflict)",
                       not wrong, f"upload answers: {dict(up_ops)}"))
        seen_full = poller.seen(status=503, reason="storage_full")
        checks.append(("/readyz answered 503 storage_full", bool(seen_full),
                       f"{len(seen_full)} times; readyz: {poller.summary()}"))

        # Grow the disk; resend every refused write with its key until it is applied.
        run_cmd(["mount", "-o", f"remount,size={grow_mib}m", mnt])
        t_grown = now()
        pending_jobs = [j for j in jobs if not j.done() and not j.error]
        pending_ups = [u for u in uploads if u.pending and not u.error]
        out.pending = len(pending_jobs) + len(pending_ups)
        log(f"disk grown to {grow_mib} MiB; resending {len(pending_jobs)} transfers/clears and "
            f"{len(pending_ups)} uploads")
        work_q = collections.deque([("job", j) for j in pending_jobs] +
                                   [("upload", u) for u in pending_ups])
        qlock = threading.Lock()

        def resend_worker():
            while True:
                with qlock:
                    if not work_q:
                        return
                    kind, item = work_q.popleft()
                if kind == "job":
                    run_job(api, item)
                else:
                    run_upload(api, item, stop_on_full=False)

        rs = [threading.Thread(target=resend_worker, daemon=True) for _ in range(16)]
        for t in rs:
            t.start()
        for t in rs:
            t.join(GIVE_UP * 3)
        log(f"resent in {now() - t_grown:.1f}s")
        ready = wait_ready(bankd, rec)
        poller.finish()
        checks.append(("/readyz 200 after the disk grew", ready.status == 200,
                       f"{ready.brief()} {ready.text[:200]}"))
        checks.append(("no 5xx other than 503", rec.other_5xx() == 0,
                       f"{rec.other_5xx()} (503 codes: {dict(rec.codes_503)})"))
        for when, method, path, key, rid in rec.conflicts:
            lines = log_lines_with(bankd.log_path, rid) if rid else []
            result.notes.append(
                f"{method} {path} (Idempotency-Key {key}) at {when:.1f}s answered 503 "
                f"transaction_conflict, not storage_full, while the disk was full (nothing "
                f"applied; resent): x-request-id {rid}; " + " / ".join(lines[-3:]))
        errs = [j.error for j in jobs if j.error] + [u.error for u in uploads if u.error]
        acked = sum(j.created for j in jobs)
        checks.append(("every write answered 200 after being resent with its key",
                       not errs and all(j.done() for j in jobs) and all(u.acked for u in uploads),
                       f"transfers {acked}/{len(jobs)}, uploads "
                       f"{sum(u.acked for u in uploads)}/{len(uploads)}; " + "; ".join(errs[:5])))
        transfers, out.applied = check_books(api, jobs, accounts, funding, checks)
        result.balances = "yes"
        check_transfer_events(api, transfers, jobs, checks)
        docs = api.list_all("/documents", "documents")
        out.docs = len(docs)
        per_key = collections.Counter(d.get("description") for d in docs)
        acked_ups = [u for u in uploads if u.acked]
        doubles = [k for k, n in per_key.items() if n != 1]
        unknown = set(per_key) - {u.key for u in uploads}
        missing = [u.key for u in acked_ups if per_key.get(u.key) != 1]
        checks.append(("documents listed == uploads answered 200 (each once)",
                       len(docs) == len(acked_ups) and not doubles and not unknown and not missing,
                       f"{len(docs)} listed, {len(acked_ups)} acknowledged; doubled {doubles[:3]}"
                       f" unknown {sorted(unknown)[:3]} missing {missing[:3]}"))
        code, outp = bankd.ledger_check()
        checks.append(("`bankd ledger check`: postings match balances", code == 0, outp[:300]))
        alive = bankd.alive()
        rc = bankd.stop()
        checks.append(("bankd ran throughout and drained on SIGTERM (exit 0)", alive and rc == 0,
                       f"exit {rc}"))

        held = [j for j in jobs if j.hold]
        result.attempted = (f"{len(jobs)} transfers ({len(held)} held) + {len(held)} clears + "
                            f"{len(uploads)} uploads")
        result.acknowledged = (f"{acked} transfers + {sum(j.cleared for j in held)} clears + "
                               f"{len(acked_ups)} uploads answered 200 "
                               f"({out.pending} after resending)")
        log(f"answers by operation: "
            + "; ".join(f"{op}: {dict(c)}" for op, c in sorted(rec.by_op.items())))
        return out
    finally:
        stop.set()
        poller.finish()


def setup_bankd_accounts(bankd, rec, tag, funding):
    api = Api(bankd.base, bankd.key, rec)
    accounts = setup_accounts(api, tag, 8, funding)
    log("setup: 8 accounts funded")
    return api, accounts


def scenario_disk(env, result):
    work = env["FAULTS_WORK"]
    mnt = os.path.join(work, "disk")
    os.makedirs(mnt, exist_ok=True)
    rec = Recorder()
    bankd = None
    mounted = False
    try:
        run_cmd(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", mnt])
        mounted = True
        dbfile = os.path.join(mnt, "bankd.db")
        bankd = Bankd(env["BANKD_BIN"], f"sqlite://{dbfile}?mode=rwc", work, "disk")
        funding = 1_000_000
        api, accounts = setup_bankd_accounts(bankd, rec, "disk", funding)
        storm = fill_and_grow(env, result, bankd, rec, api, accounts, funding, "disk", mnt, 96)
        try:
            conn = sqlite3.connect(f"file:{dbfile}", uri=True)
            integrity = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
            conn.close()
        except sqlite3.Error as e:
            integrity = [f"error: {e}"]
        result.checks.append(("PRAGMA integrity_check is ok", integrity == ["ok"],
                              "; ".join(integrity[:5])))
        result.faults = "24 MiB tmpfs filled by 256 KiB uploads, then remounted at 96 MiB"
        result.found = (f"{storm.applied} transfers, once each; {storm.docs} documents; "
                        f"integrity {'ok' if integrity == ['ok'] else 'NOT ok'}")
    finally:
        result.other_5xx = rec.other_5xx()
        if bankd is not None:
            report_bad(rec, bankd, result)
            bankd.stop()
        if mounted:
            r = run_cmd(["umount", mnt], check=False)
            if r.returncode != 0:
                run_cmd(["umount", "-l", mnt], check=False)


PG = ["-h", "127.0.0.1", "-p", "5432", "-U", "postgres"]


def psql(sql, db="postgres", check=True):
    return run_cmd(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", *PG, "-d", db,
                    "-c", sql], check=check)


def pg_server_log(ver):
    """The cluster's server log as Debian's pg_ctlcluster writes it (None if not there)."""
    path = f"/var/log/postgresql/postgresql-{ver}-main.log"
    return path if os.path.isfile(path) else None


def pg_log_summary(path, offset, db, ts_oid):
    """What PostgreSQL logged since offset about this database and its tablespace (its
    sessions, and background processes naming the tablespace's files), and any crash of the
    cluster: Counter of normalized ERROR/FATAL/PANIC/WARNING messages, list of crash lines,
    Counter of the relfilenodes those messages name."""
    import re
    msgs = collections.Counter()
    crashes = []
    nodes = collections.Counter()
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        return msgs, [f"(server log unreadable: {e})"], nodes
    ours_session = f"@{db} "
    ours_files = f"pg_tblspc/{ts_oid}/" if ts_oid else None
    sev = re.compile(r"\b(ERROR|FATAL|PANIC|WARNING):\s+(.*)$")
    for line in text.splitlines():
        if ("PANIC:" in line or "terminated by signal" in line
                or "terminating any other active server processes" in line
                or "database system was not properly shut down" in line):
            crashes.append(line.strip()[:300])
        m = sev.search(line)
        if not m:
            continue
        if ours_session in line or (ours_files and ours_files in line):
            msg = re.sub(r'"[^"]*"', '"…"', m.group(2))
            msgs[f"{m.group(1)}: {msg}"] += 1
            for f in re.findall(r'"pg_tblspc/[^"]*/(\d+)(?:\.\d+)?"', m.group(2)):
                nodes[f] += 1
    return msgs, crashes, nodes


def relations_of(db, nodes):
    """Names of the relations with these relfilenodes (a TOAST table with its owner's name)."""
    if not nodes:
        return {}
    r = psql("SELECT c.relfilenode, coalesce(o.relname || ' (TOAST)', c.relname) FROM pg_class c"
             " LEFT JOIN pg_class o ON o.reltoastrelid = c.oid WHERE c.relfilenode IN ("
             + ", ".join(str(int(n)) for n in nodes) + ")", db=db, check=False)
    return dict(line.split("|", 1) for line in r.stdout.splitlines() if "|" in line)


def bankd_sqlstates(log_path):
    """The PostgreSQL errors bankd logged (SQLSTATE and message), counted."""
    import re
    pat = re.compile(r'code: "([0-9A-Z]{5})", message: "((?:[^"\\]|\\.)*)"')
    found = collections.Counter()
    try:
        with open(log_path, errors="replace") as f:
            for line in f:
                for code, msg in pat.findall(line):
                    msg = re.sub(r'\\"[^"\\]*\\"', '"…"', msg)
                    found[f"{code} {msg}"] += 1
    except OSError:
        pass
    return found


def scenario_postgres_disk(env, result):
    work = env["FAULTS_WORK"]
    mnt = env["FAULTS_PGDISK_MNT"]
    db = env["FAULTS_PGDISK_DB"]
    ts = env["FAULTS_TABLESPACE"]
    rec = Recorder()
    bankd = None
    mounted = db_made = ts_made = False
    pglog = pg_server_log(env["FAULTS_PG_VER"])
    pglog_at = os.path.getsize(pglog) if pglog else 0
    ts_oid = None
    checkpoint = {}
    try:
        os.makedirs(mnt, exist_ok=True)
        run_cmd(["mount", "-t", "tmpfs", "-o", "size=32m,mode=0700", "tmpfs", mnt])
        mounted = True
        run_cmd(["chown", "postgres:postgres", mnt])
        run_cmd(["dropdb", "--if-exists", "--force", *PG, db])
        psql(f"DROP TABLESPACE IF EXISTS {ts}")
        psql(f"CREATE TABLESPACE {ts} LOCATION '{mnt}'")
        ts_made = True
        ts_oid = psql(f"SELECT oid FROM pg_tablespace WHERE spcname = '{ts}'").stdout.strip()
        psql(f"CREATE DATABASE {db} TABLESPACE {ts}")
        db_made = True
        # CREATE DATABASE (WAL_LOG) leaves the template's pages in shared buffers, not yet on the
        # tmpfs: written only by the next checkpoint, which, once the tmpfs is full, would fail
        # (and with it every checkpoint of the cluster: other databases' DROP DATABASE, a
        # shutdown). Write them now, as a database in service would have long ago.
        psql("CHECKPOINT")
        funding = 1_000_000
        bankd = Bankd(env["BANKD_BIN"], f"postgres://postgres@127.0.0.1:5432/{db}", work,
                      "postgres-disk")
        api, accounts = setup_bankd_accounts(bankd, rec, "pgdisk", funding)
        log("tablespace df: " + run_cmd(["df", "-k", mnt], check=False).stdout.splitlines()[-1])

        def while_full():
            # The cluster still checkpoints with this tablespace full: no dirty page waits for
            # space that is not there (the rest of the cluster is not held up by this test).
            r = psql("CHECKPOINT", check=False)
            checkpoint["rc"] = r.returncode
            checkpoint["err"] = r.stderr.strip()[-300:]

        storm = fill_and_grow(env, result, bankd, rec, api, accounts, funding, "pgdisk", mnt,
                              128, while_full=while_full)
        result.checks.append(("CHECKPOINT succeeds while the tablespace is full",
                              checkpoint.get("rc") == 0, checkpoint.get("err") or "ok"))
        states = bankd_sqlstates(bankd.log_path)
        pg_answers = ", ".join(f"{msg} (x{n})" for msg, n in states.most_common()) or "nothing"
        result.notes.append(f"PostgreSQL errors in bankd's log (logged when the storage turns "
                            f"full, not per request): {pg_answers}")
        if pglog:
            msgs, crashes, nodes = pg_log_summary(pglog, pglog_at, db, ts_oid)
            names = relations_of(db, nodes)
            result.notes.append(
                f"PostgreSQL server log ({pglog}), this database and tablespace: "
                + ("; ".join(f"{n} x {m}" for m, n in msgs.most_common(6)) or "nothing")
                + (" -- files of " + ", ".join(f"{names.get(f, 'relfilenode ' + f)} x{n}"
                                              for f, n in nodes.most_common(6))
                   if nodes else ""))
            if crashes:
                result.notes.append("PostgreSQL crashed or restarted: " + " / ".join(crashes[:5]))
            crash_word = "PostgreSQL crashed" if crashes else "no PostgreSQL crash"
        else:
            crash_word = "server log not found"
        codes = sorted({s.split(" ", 1)[0] for s in states})
        result.faults = ("32 MiB tmpfs under the database's tablespace (WAL on the main disk) "
                         "filled by 256 KiB uploads, then remounted at 128 MiB")
        result.found = (f"{storm.applied} transfers, once each; {storm.docs} documents; "
                        f"ledger check clean; PostgreSQL answered SQLSTATE "
                        f"{'/'.join(codes) or 'none'}; {crash_word}")
    finally:
        result.other_5xx = rec.other_5xx()
        if bankd is not None:
            report_bad(rec, bankd, result)
            bankd.stop()
        if mounted:
            # Room first, so that nothing of the cluster waits on this tablespace meanwhile.
            run_cmd(["mount", "-o", "remount,size=128m", mnt], check=False)
        if db_made:
            run_cmd(["dropdb", "--if-exists", "--force", *PG, db], check=False)
        if ts_made:
            psql(f"DROP TABLESPACE IF EXISTS {ts}", check=False)
        if mounted:
            r = run_cmd(["umount", mnt], check=False)
            if r.returncode != 0:
                run_cmd(["umount", "-l", mnt], check=False)
        try:
            os.rmdir(mnt)
        except OSError:
            pass


# ------------------------------------------------------------------------------------ main


def md(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "all"
    if mode not in ("postgres", "disk", "postgres-disk", "all"):
        print("usage: scripts/faults [postgres|disk|postgres-disk|all]", file=sys.stderr)
        return 2
    env = dict(os.environ)
    for name in ("BANKD_BIN", "FAULTS_WORK", "FAULTS_DB", "FAULTS_PG_VER", "FAULTS_PGDISK_DB",
                 "FAULTS_TABLESPACE", "FAULTS_PGDISK_MNT"):
        if not env.get(name):
            print(f"faults.py: {name} is not set (run scripts/faults)", file=sys.stderr)
            return 2
    scenarios = {"postgres": scenario_postgres, "disk": scenario_disk,
                 "postgres-disk": scenario_postgres_disk}
    names = ["postgres", "disk", "postgres-disk"] if mode == "all" else [mode]
    results = []
    for name in names:
        result = Result(name)
        log(f"=== scenario {name}")
        start = now()
        try:
            scenarios[name](env, result)
        except Failure as e:
            result.error = str(e)
        except Exception as e:  # a crash of the scenario is a failure too, with its trace
            import traceback
            result.error = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
        log(f"=== scenario {name}: {'PASS' if result.ok() else 'FAIL'} "
            f"({now() - start:.1f}s)")
        results.append(result)

    print()
    for r in results:
        print(f"### {r.scenario}")
        for name, ok, detail in r.checks:
            print(f"- [{'x' if ok else ' '}] {name}: {detail}")
        if r.error:
            print(f"- [ ] scenario error: {r.error}")
        for k in r.problem_kinds:
            print(f"- bankd problem: {k}")
        for p in r.problems[:3]:
            print(f"- for example: {p}")
        if len(r.problems) > 3:
            print(f"- ... and {len(r.problems) - 3} more such answers")
        for n in r.notes:
            print(f"- note: {n}")
        print()
    print("| scenario | faults injected | writes attempted | acknowledged | found afterwards "
          "| 5xx other than 503 | balances checked | result |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r.scenario} | {md(r.faults)} | {md(r.attempted)} | {md(r.acknowledged)} | "
              f"{md(r.found)} | {r.other_5xx} | {r.balances} | "
              f"{'PASS' if r.ok() else 'FAIL'} |")
    print(f"\ntotal {now() - T0:.1f}s")
    return 0 if all(r.ok() for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
