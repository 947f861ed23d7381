# Shared by the scripts in this folder: a pinned Python environment and a throw-away bankd.
# Sourced, not run.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
SCHEMATHESIS_VERSION="4.32.5"
OPENAPI_PYTHON_CLIENT_VERSION="0.29.1"
# The reference Standard Webhooks library: the scenario verifies bankd's signatures with it.
STANDARDWEBHOOKS_VERSION="1.1.0"

# Creates .venv with the pinned tools (idempotent).
ensure_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
  fi
  "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "schemathesis==$SCHEMATHESIS_VERSION" "openapi-python-client==$OPENAPI_PYTHON_CLIENT_VERSION" \
    "standardwebhooks==$STANDARDWEBHOOKS_VERSION"
}

# Starts bankd on a fresh SQLite database in $WORK; sets BANKD_URL, BANKD_KEY, BANKD_PID.
start_bankd() {
  WORK="$(mktemp -d)"
  trap 'kill "${BANKD_PID:-0}" 2>/dev/null; rm -rf "$WORK"' EXIT
  (cd "$ROOT" && cargo build --quiet -p bankd --bin bankd)
  local bin="${CARGO_TARGET_DIR:-$ROOT/target}/debug/bankd"
  local port
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  BANKD_URL="http://127.0.0.1:$port"
  "$bin" --database-url "sqlite://$WORK/bankd.db?mode=rwc" serve --listen "127.0.0.1:$port" \
    >"$WORK/stdout" 2>"$WORK/bankd.log" &
  BANKD_PID=$!
  for _ in $(seq 1 200); do
    if curl -fsS "$BANKD_URL/healthz" >/dev/null 2>&1; then break; fi
    sleep 0.05
  done
  BANKD_KEY="$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["api_key"])' "$WORK/stdout")"
  BANKD_BIN="$bin"
  BANKD_DB="sqlite://$WORK/bankd.db?mode=rwc"
  export BANKD_URL BANKD_KEY BANKD_PID BANKD_BIN BANKD_DB WORK
}
