"""A webhook receiver for bench/run (WEBHOOK_RECEIVER=1): answers every delivery 204 at once
and logs, per delivery, the time it arrived and the event's `created_at`, for the delivery lag
(commit to receipt). Stdlib only; keep-alive connections, one thread each (bankd keeps at most
`webhook_max_in_flight` open).

Usage: python3 bench/receiver.py PORT LOGFILE   (SIGTERM flushes and exits)
       python3 bench/receiver.py summary LOGFILE  (prints: deliveries p50_ms p99_ms max_ms)
"""

import datetime
import http.server
import re
import signal
import sys
import threading
import time

CREATED = re.compile(rb'"created_at":"([^"]+)"')
lines = []
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        now = time.time()
        found = CREATED.search(body)
        with lock:
            lines.append(f"{now:.6f} {found.group(1).decode() if found else '-'}\n")
        self.send_response(204)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def summary(log):
    lags = []
    for line in open(log):
        received, created = line.split()
        if created == "-":
            continue
        at = datetime.datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
        lags.append((float(received) - at) * 1000)
    lags.sort()
    if not lags:
        print("0 0 0 0")
        return
    pick = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))]
    print(f"{len(lags)} {pick(0.5):.1f} {pick(0.99):.1f} {lags[-1]:.1f}")


def main():
    if sys.argv[1] == "summary":
        summary(sys.argv[2])
        return
    port, log = int(sys.argv[1]), sys.argv[2]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)

    def stop(*_):
        with lock, open(log, "w") as out:
            out.writelines(lines)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
