#!/usr/bin/env python3
"""Helpers of bench/run (stdlib only). Subcommands:

  spawn URL LOG PIDFILE -- CMD...   start CMD (environment inherited, output to LOG), poll URL
                                    every 5 ms until it answers 200; print the milliseconds from
                                    spawn to that first 200 and write the pid to PIDFILE. The
                                    server keeps running after this helper exits.
  pg-url ADMIN_URL DBNAME           ADMIN_URL with its database name replaced.
  api BASE KEY PATH [FIELD...]      GET PATH with Basic auth; print the JSON answer, or with
                                    FIELDs the value at that path (e.g. `bank_accounts 0 owners 0`
                                    or `#bank_accounts` for a length). Fails unless the answer is 200.
  log-head BACKEND LOG              the first 20 lines of a server log as one JSON line.
  record KEY=VALUE... -- LINE       turn a wrk `RESULT ...` LINE plus tags into one JSON line.
  fsync-probe DIR                   the median milliseconds of 64 rounds of a 16 KiB write and
                                    fsync, overwriting a 1 MiB file in DIR in sequence (the shape of
                                    a log commit), for the disk's speed at that moment.
  report RESULTS_JSONL OUT_DIR      print the table and the target checks, write the JSON and
                                    markdown files (see bench/run).
"""

import base64
import datetime
import http.client
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request


def spawn(args):
    url, log, pidfile = args[0], args[1], args[2]
    assert args[3] == "--", "spawn URL LOG PIDFILE -- CMD..."
    cmd = args[4:]
    parts = urllib.parse.urlsplit(url)
    with open(log, "ab") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
    with open(pidfile, "w") as f:
        f.write(f"{proc.pid}\n")
    deadline = started + 300
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server exited with status {proc.returncode} before answering; see {log}")
        try:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=1)
            conn.request("GET", parts.path or "/")
            status = conn.getresponse().status
            conn.close()
            if status == 200:
                print(f"{(time.perf_counter() - started) * 1000:.1f}")
                return
        except OSError:
            pass
        time.sleep(0.005)
    sys.exit(f"server did not answer 200 on {url} within 300 s; see {log}")


def pg_url(args):
    u = urllib.parse.urlsplit(args[0])
    print(urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + args[1], u.query, u.fragment)))


def api(args):
    base, key, path, fields = args[0], args[1], args[2], args[3:]
    req = urllib.request.Request(base + path)
    req.add_header("Authorization", "Basic " + base64.b64encode(f":{key}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            value = json.loads(resp.read())
    except urllib.error.HTTPError as e:
        sys.exit(f"GET {path} answered {e.code}: {e.read()[:500]!r}")
    for field in fields:
        if field.startswith("#"):
            value = value[field[1:]]
            value = len(value)
        else:
            value = value[int(field)] if isinstance(value, list) else value[field]
    print(value if isinstance(value, (str, int)) else json.dumps(value))


ANSI = re.compile(r"\x1b\[[0-9;]*m")
LOG_LINE = re.compile(r"^\S+\s+(?P<level>[A-Z]+)\s+(?P<target>\S+?):\s+(?P<message>.*?)(?:\s+\w+=.*)?$")


def log_head(args):
    """Summarises a server log: its line count, each distinct (level, target, message) with how
    often it occurs and its first occurrence, and the first lines."""
    backend, path = args[0], args[1]
    lines = []
    try:
        with open(path, errors="replace") as f:
            lines = [ANSI.sub("", line.rstrip("\n")) for line in f]
    except OSError:
        pass
    kinds = {}
    for line in lines:
        m = LOG_LINE.match(line)
        key = f"{m['level']} {m['target']}: {m['message']}" if m else line[:120]
        if key not in kinds:
            kinds[key] = {"message": key, "count": 0, "first": line[:400]}
        kinds[key]["count"] += 1
    print(json.dumps({"type": "log", "backend": backend, "lines": len(lines),
                      "kinds": sorted(kinds.values(), key=lambda k: -k["count"])[:10]}))


def record(args):
    sep = args.index("--")
    rec = {}
    for kv in args[:sep]:
        k, v = kv.split("=", 1)
        try:
            rec[k] = int(v)
        except ValueError:
            try:
                rec[k] = float(v)
            except ValueError:
                rec[k] = v
    line = " ".join(args[sep + 1 :]).split()
    assert line and line[0] == "RESULT", f"not a wrk RESULT line: {line!r}"
    for kv in line[1:]:
        k, v = kv.split("=", 1)
        if k == "statuses":
            rec[k] = {} if v == "-" else {s: int(n) for s, n in (p.split(":") for p in v.split(","))}
        elif k in ("ok", "non_ok", "errors"):
            rec[k] = int(v)
        else:
            rec[k] = float(v)
    rec["type"] = "wrk"
    print(json.dumps(rec))


def fsync_probe(args):
    path = os.path.join(args[0], "fsync-probe")
    chunk, size, rounds = 16 * 1024, 1024 * 1024, 64
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.pwrite(fd, b"\0" * size, 0)
        os.fsync(fd)
        data = os.urandom(chunk)
        times = []
        for i in range(rounds):
            t0 = time.perf_counter()
            os.pwrite(fd, data, (i * chunk) % size)
            os.fsync(fd)
            times.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        os.unlink(path)
    times.sort()
    print(f"{times[len(times) // 2] * 1000:.2f}")


# ------------------------------------------------------------------------------------ report


def sh(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        return (out.stdout + out.stderr).strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"unavailable ({e})"


def machine(root):
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_kib = 0
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_kib = int(line.split()[1])
    except OSError:
        pass
    commit = os.environ.get("BENCH_GIT_COMMIT") or sh(["git", "-C", root, "rev-parse", "--short", "HEAD"])
    changed = os.environ.get("BENCH_GIT_CHANGED", "").split()
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu,
        "mem_total_mib": mem_kib // 1024,
        "kernel": platform.release(),
        "bankd_commit": commit + ("-dirty" if changed else ""),
        "bankd_uncommitted_build_inputs": changed,
        "wrk": sh(["wrk", "-v"]).splitlines()[0] if shutil.which("wrk") else "missing",
        "sqlite3_cli": sh(["sqlite3", "--version"]).split(" ")[0] if shutil.which("sqlite3") else None,
        "postgres_server": os.environ.get("BENCH_PG_VERSION") or None,
    }


SCENARIO_ORDER = ["healthz", "get", "list-first", "list-deep", "create", "transfers-many", "transfers-hot",
                  "mixed-get", "mixed-transfers"]


def label(rec):
    if rec["scenario"] == "list-first":
        return "list page 1"
    if rec["scenario"] == "list-deep":
        return f"list page {rec.get('page', '?')}"
    return {
        "healthz": "healthz (no auth)",
        "get": "get account",
        "create": "create account",
        "transfers-many": "book transfers, 1000 accounts",
        "transfers-hot": "book transfers, 5 hot accounts",
        "mixed-get": "mixed: get account",
        "mixed-transfers": "mixed: book transfers, 1000 accounts",
    }[rec["scenario"]]


def fmt(x, digits=1):
    return "—" if x is None else f"{x:,.{digits}f}"


def report(args):
    src, out_dir = args[0], args[1]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    recs = [json.loads(line) for line in open(src) if line.strip()]
    runs = [r for r in recs if r["type"] == "wrk"]
    metrics = [r for r in recs if r["type"] == "metric"]
    logs = {r["backend"]: r for r in recs if r["type"] == "log"}
    backends = []
    for r in recs:
        if r.get("backend") and r["backend"] not in backends:
            backends.append(r["backend"])

    def find(backend, scenario, config="default"):
        for r in runs:
            if r["backend"] == backend and r["scenario"] == scenario and r["config"] == config:
                return r
        return None

    def metric(backend, name):
        for m in metrics:
            if m["backend"] == backend and m["name"] == name:
                return m["value"]
        return None

    runs.sort(key=lambda r: (backends.index(r["backend"]), r["config"] != "default",
                             SCENARIO_ORDER.index(r["scenario"])))
    header = ["scenario", "backend", "config", "req/s (2xx)", "p50 ms", "p99 ms", "max ms",
              "non-2xx", "socket errors", "server CPU (cores)", "busy after (s)",
              "disk fsync ms (before/after)"]
    rows = []
    for r in runs:
        non2xx = r["non_ok"]
        detail = ",".join(f"{k}:{v}" for k, v in sorted(r["statuses"].items()) if not k.startswith("2"))
        rows.append([label(r), r["backend"], r["config"], fmt(r["rps"], 0), fmt(r["p50_ms"], 2),
                     fmt(r["p99_ms"], 2), fmt(r["max_ms"], 1),
                     f"{non2xx}" + (f" ({detail})" if detail else ""), str(r["errors"]),
                     fmt(r.get("server_cpu"), 2), fmt(r.get("busy_after_s"), 1),
                     f"{fmt(r['fsync_ms_before'], 2)} / {fmt(r.get('fsync_ms_after'), 2)}"
                     if "fsync_ms_before" in r else "—"])

    checks = []

    def check(backend, what, value, target, ok, unit=""):
        checks.append({"backend": backend, "check": what,
                       "value": None if value is None else round(value, 3),
                       "unit": unit, "target": target,
                       "result": "n/a" if ok is None else ("PASS" if ok else "FAIL")})

    def ratio(a, b, key="rps"):
        if a is None or b is None or not b[key]:
            return None
        return a[key] / b[key]

    for b in backends:
        hz, get = find(b, "healthz"), find(b, "get")
        if get:
            r = ratio(get, hz)
            check(b, "(2) get rps / healthz rps", r, ">= 0.6", None if r is None else r >= 0.6)
            check(b, "(2) get p99", get["p99_ms"], "<= 5 ms", get["p99_ms"] <= 5, "ms")
        first, deep = find(b, "list-first"), find(b, "list-deep")
        if first and deep:
            page = deep.get("page", "?")
            r = deep["p50_ms"] / first["p50_ms"] if first["p50_ms"] else None
            check(b, f"(3) list page {page} p50 / page 1 p50 (the target's measure)", r, "<= 1.5",
                  None if r is None else r <= 1.5)
            r = ratio(deep, first)
            check(b, f"(3) list page {page} rps / page 1 rps (same target as a throughput ratio)",
                  r, ">= 0.667", None if r is None else r >= 1 / 1.5)
            for rec in (first, deep):
                check(b, f"(3) {label(rec)} p99", rec["p99_ms"], "<= 10 ms", rec["p99_ms"] <= 10, "ms")
        for scen in ("create", "transfers-many", "transfers-hot"):
            full, normal = find(b, scen), find(b, scen, "normal-1tx")
            if full and normal:
                r = ratio(full, normal)
                check(b, f"(4,5) {label(full)}: FULL+group commit rps / NORMAL one-tx rps", r,
                      ">= 0.8", None if r is None else r >= 0.8)
        floor = {"sqlite": 10000, "postgres": 5000}.get(b)
        for scen in ("transfers-many", "transfers-hot"):
            t = find(b, scen)
            if t and floor:
                check(b, f"(5) {label(t)} rps", t["rps"], f">= {floor}", t["rps"] >= floor, "/s")
        idle = metric(b, "rss_idle_kib")
        if idle is not None:
            check(b, "(6) RSS idle (VmRSS after start)", idle / 1024, "<= 64 MiB", idle / 1024 <= 64, "MiB")
        start = metric(b, "startup_ms")
        if start is not None:
            check(b, f"(6) start-up on {metric(b, 'big_accounts'):,} accounts (spawn to first 200)",
                  start, "<= 200 ms", start <= 200, "ms")

    info = []
    for b in backends:
        for name, unit in (("rss_idle_kib", "KiB"), ("rss_load_max_kib", "KiB"), ("rss_anon_load_max_kib", "KiB"),
                           ("vmhwm_kib", "KiB"),
                           ("startup_ms", "ms"), ("seed_big_s", "s"), ("seed_funded_s", "s"),
                           ("big_accounts", ""), ("db_size_mib", "MiB"), ("server_log_warnings", "")):
            v = metric(b, name)
            if v is not None:
                info.append((b, name, v, unit))

    # Reads and writes at once against each alone (no target: how much each costs the other).
    for b in backends:
        for mixed, alone in (("mixed-get", "get"), ("mixed-transfers", "transfers-many")):
            r = ratio(find(b, mixed), find(b, alone))
            if r is not None:
                info.append((b, f"{mixed} rps / {alone} rps", r, ""))

    settings = json.loads(os.environ.get("BENCH_SETTINGS", "{}"))
    result = {
        "generated_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(root),
        "settings": settings,
        "runs": runs,
        "metrics": metrics,
        "checks": checks,
        "server_logs": logs,
    }

    def table(head, body):
        widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(head)]
        lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
                 "| " + " | ".join("-" * w for w in widths) + " |"]
        for r in body:
            lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
        return "\n".join(lines)

    def value(v):
        if v is None:
            return "—"
        return f"{v:,.2f}" if abs(v) < 100 else f"{v:,.0f}"

    check_rows = [[c["backend"], c["check"], value(c["value"]), c["unit"], c["target"], c["result"]]
                  for c in checks]
    def measure(v):
        if isinstance(v, float):
            return f"{v:,.2f}" if abs(v) < 10 else f"{v:,.1f}"
        return f"{v:,}"

    info_rows = [[b, n, measure(v), u] for b, n, v, u in info]
    m = result["machine"]
    md = [
        f"# bankd benchmark — {result['generated_at']}",
        "",
        f"Machine: {m['nproc']} CPUs ({m['cpu_model']}), {m['mem_total_mib']:,} MiB, Linux {m['kernel']}; "
        f"bankd {m['bankd_commit']}; {m['wrk']}; PostgreSQL {m['postgres_server'] or '—'}.",
        "Settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()) + ".",
        "wrk and bankd share the machine; req/s counts 2xx answers only; latencies are over all answers; "
        "server CPU is bankd's user+system time over the run (2.00 = both cores); busy after = how long "
        "bankd kept working once wrk had stopped (requests wrk gave up on, e.g. after its 10 s timeout).",
        "config `default`: the server's defaults (SQLite: synchronous=FULL with group commit); "
        "`normal-1tx`: BANKD_SQLITE_SYNCHRONOUS=normal BANKD_SQLITE_GROUP_COMMIT=false; "
        "`serializable` (PostgreSQL): BANKD_POSTGRES_ISOLATION=serializable, its retries in the "
        "metrics `serializable_retries_*`. "
        "disk fsync: median of 64 writes of 16 KiB each followed by fsync, next to the SQLite file, "
        "just before and just after the run; FULL commits wait for the disk, NORMAL ones do not. "
        "`mixed:` rows are one run of both loads at once, each on half the connections; "
        "their server CPU is the run's.",
        "",
        table(header, rows),
        "",
        "## Targets of issue 6",
        "",
        table(["backend", "check", "value", "unit", "target", "result"], check_rows),
        "",
        "## Other measurements",
        "",
        table(["backend", "measure", "value", "unit"], info_rows),
        "",
    ]
    for b, log in logs.items():
        if log["lines"]:
            md += [f"Server log on {b} (BANKD_LOG=warn): {log['lines']:,} lines; by kind:", ""]
            for kind in log["kinds"]:
                md += [f"- {kind['count']:,} × `{kind['message'][:200]}`; first: `{kind['first'][:300]}`"]
            md += [""]
    text = "\n".join(md)
    print(text)
    os.makedirs(out_dir, exist_ok=True)
    stamp = result["generated_at"].replace(":", "").replace("-", "")
    path = os.path.join(out_dir, f"{stamp}.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    shutil.copyfile(path, os.path.join(out_dir, "latest.json"))
    with open(os.path.join(out_dir, "latest.md"), "w") as f:
        f.write(text)
    print(f"results: {path}, {os.path.join(out_dir, 'latest.json')}, {os.path.join(out_dir, 'latest.md')}")


COMMANDS = {"log-head": log_head, "spawn": spawn, "pg-url": pg_url, "api": api, "record": record,
            "fsync-probe": fsync_probe, "report": report}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(__doc__)
    COMMANDS[sys.argv[1]](sys.argv[2:])
