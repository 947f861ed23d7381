#!/usr/bin/env python3
"""One platform at its rate limit, another platform's latency beside it.

    python3 bench/isolation.py BANKD_BIN [--per-second 100] [--duration 10] [--runs 3]

Starts BANKD_BIN on a fresh SQLite database with `rate_limit_per_second` set, makes two
platforms, and measures the latency of platform B's `GET /bank-accounts/{id}`, sent at half its
limit from one keep-alive connection: alone, then while platform A runs away (a closed loop of
`GET /platform` with wrk on 1 connection, then on 8), which its limit answers 429. Prints B's
latency percentiles per load and each as a ratio of the unloaded one, the loads alternated
between runs. Needs wrk.
"""

import argparse
import base64
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request



def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def basic(key):
    return "Basic " + base64.b64encode(f":{key}".encode()).decode()


def call(base, key, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Authorization", basic(key))
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")


def platform(bin_, url, name):
    out = subprocess.run(
        [bin_, "--database-url", url, "platform", "create", "--name", name],
        check=True, capture_output=True, text=True, env={**os.environ, "BANKD_LOG": "warn"},
    ).stdout
    return json.loads(out)["api_key"]


def paced(port, path, key, rate, seconds):
    """GETs `path` `rate` times a second for `seconds` on one keep-alive connection; answers
    (answers other than 200, sorted latencies in milliseconds)."""
    conn = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"Authorization": basic(key)}
    latencies, refused = [], 0
    start = time.perf_counter()
    for i in range(int(rate * seconds)):
        due = start + i / rate
        pause = due - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        sent = time.perf_counter()
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        latencies.append((time.perf_counter() - sent) * 1000)
        refused += response.status != 200
    conn.close()
    return refused, sorted(latencies)


def percentile(sorted_values, p):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p / 100))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bankd")
    ap.add_argument("--per-second", type=int, default=100)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bankd-isolation.")
    url = f"sqlite://{work}/bankd.db?mode=rwc"
    key_a = platform(args.bankd, url, "Runaway")
    key_b = platform(args.bankd, url, "Neighbour")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "BANKD_LOG": "warn",
           "BANKD_RATE_LIMIT_PER_SECOND": str(args.per_second)}
    server = subprocess.Popen(
        [args.bankd, "--database-url", url, "serve", "--listen", f"127.0.0.1:{port}"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(f"{work}/bankd.log", "w"),
    )
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(base + "/healthz")
                break
            except OSError:
                time.sleep(0.05)
        # B's reads are under its own limit only if the limit is high enough: B gets a key of
        # its own budget, so measure B with limits high enough not to refuse it.
        entity = call(base, key_b, "POST", "/entities/person",
                      {"first_name": "Nora", "last_name": "Neighbour"})
        account = call(base, key_b, "POST", "/bank-accounts",
                       {"entity_id": entity["id"], "description": "Main"})
        path_b = f"/bank-accounts/{account['id']}"
        rate_b = max(1, args.per_second // 2)
        loads = {"alone": 0, "A on 1 connection": 1, "A on 8 connections": 8}
        figures = {name: [] for name in loads}
        for run in range(args.runs):
            order = list(loads.items())
            if run % 2:
                order.reverse()
            for name, a_connections in order:
                runaway = None
                if a_connections:
                    runaway = subprocess.Popen(
                        ["wrk", "-t1", f"-c{a_connections}", f"-d{args.duration + 2}s",
                         "-H", f"Authorization: {basic(key_a)}", f"{base}/platform"],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                    )
                    time.sleep(1)
                refused, latencies = paced(port, path_b, key_b, rate_b, args.duration)
                a_rps = 0.0
                if runaway:
                    found = re.search(r"Requests/sec:\s+([\d.]+)", runaway.communicate()[0])
                    a_rps = float(found.group(1)) if found else 0.0
                figures[name].append((a_rps, refused, latencies))
                time.sleep(1)
    finally:
        server.terminate()
        server.wait()
    print(f"limit {args.per_second}/s per key (burst {2 * args.per_second}); B sends "
          f"{rate_b}/s on one connection; {args.runs} runs of {args.duration} s per load, "
          "alternated\n")
    print("| load | A req/s (429 beyond its limit) | B refused | B p50 ms | B p90 ms | "
          "B p99 ms | p50 / alone | p90 / alone | p99 / alone |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    med = statistics.median

    def pct(name, p):
        return med([percentile(f[2], p) for f in figures[name]])

    for name in loads:
        rows = figures[name]
        ratios = " | ".join(f"{pct(name, p) / pct('alone', p):.2f}" for p in (50, 90, 99))
        print(f"| {name} | {med([f[0] for f in rows]):.0f} | {sum(f[1] for f in rows)} | "
              f"{pct(name, 50):.3f} | {pct(name, 90):.3f} | {pct(name, 99):.3f} | {ratios} |")


if __name__ == "__main__":
    sys.exit(main())
