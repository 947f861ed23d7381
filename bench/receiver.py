"""A webhook receiver for bench/run (WEBHOOK_RECEIVER=1): answers every delivery 204 at once
and logs, per delivery, the time it arrived and the event's `created_at`, for the delivery lag
(commit to receipt). Stdlib only: one asyncio event loop, keep-alive connections, a minimal
HTTP/1.1 reading (request head, `content-length` body), so that the receiver's own CPU, on the
cores bankd shares with it and wrk, stays small beside bankd's (http.server's parsing cost
about 150 µs a request).

Usage: python3 bench/receiver.py PORT LOGFILE   (SIGTERM writes the log and exits; the CPU
                                                 seconds it used go to LOGFILE.cpu)
       python3 bench/receiver.py summary LOGFILE  (prints: deliveries p50_ms p99_ms max_ms)
"""

import asyncio
import datetime
import re
import resource
import signal
import sys
import time

CREATED = re.compile(rb'"created_at":"([^"]+)"')
LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)
ANSWER = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n"
lines = []


class Receive(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buffer = b""

    def data_received(self, data):
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            length = LENGTH.search(self.buffer, 0, head_end + 2)
            end = head_end + 4 + (int(length.group(1)) if length else 0)
            if len(self.buffer) < end:
                return
            body, self.buffer = self.buffer[head_end + 4 : end], self.buffer[end:]
            found = CREATED.search(body)
            created = found.group(1).decode() if found else "-"
            lines.append(f"{time.time():.6f} {created}\n")
            self.transport.write(ANSWER)


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


async def serve(port, log):
    loop = asyncio.get_running_loop()
    stopped = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, stopped.set_result, None)
    server = await loop.create_server(Receive, "127.0.0.1", port, backlog=1024)
    await stopped
    server.close()
    with open(log, "w") as out:
        out.writelines(lines)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(log + ".cpu", "w") as out:
        out.write(f"{usage.ru_utime + usage.ru_stime:.2f}\n")


def main():
    if sys.argv[1] == "summary":
        summary(sys.argv[2])
        return
    asyncio.run(serve(int(sys.argv[1]), sys.argv[2]))


if __name__ == "__main__":
    main()
