"""Local webhook receivers for the console's browser tests.

A receiver is an HTTP server on 127.0.0.1 (a free port) in a thread. It records the webhook-id
of every request and answers 200, or, while `refusing`, 500 until `recover()` is called.
"""

import http.server
import json
import threading


class Receiver:
    def __init__(self, refusing=False):
        self.refusing = refusing
        self.received = []  # (webhook-id, event type, status answered)
        self._lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                try:
                    event_type = json.loads(body).get("type")
                except ValueError:
                    event_type = None
                with receiver._lock:
                    status = 500 if receiver.refusing else 200
                    receiver.received.append((self.headers.get("webhook-id"), event_type, status))
                answer = b'{"refused": true}' if status == 500 else b"{}"
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self):
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/hooks"

    def recover(self):
        with self._lock:
            self.refusing = False

    def answered(self, status):
        """The webhook-ids answered with `status`."""
        with self._lock:
            return [hook_id for hook_id, _, answered in self.received if answered == status]

    def close(self):
        self._server.shutdown()
        self._server.server_close()
