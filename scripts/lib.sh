# Shared by the scripts in this folder: a pinned Python environment and a throw-away bankd.
# Sourced, not run.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
SCHEMATHESIS_VERSION="4.32.5"
OPENAPI_PYTHON_CLIENT_VERSION="0.29.1"
# The reference Standard Webhooks library: the scenario verifies bankd's signatures with it.
STANDARDWEBHOOKS_VERSION="1.1.0"
# The console's browser tests (scripts/console-browser): Playwright drives Debian's Chromium
# (never a browser build of Playwright's own), pytest runs them, axe-core checks accessibility.
PLAYWRIGHT_VERSION="1.65.2"
PYTEST_VERSION="9.2.0"
AXE_CORE_VERSION="4.14.1"
AXE_CORE_INTEGRITY="sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ=="
CHROMIUM="/usr/bin/chromium"

# Creates .venv with the pinned tools (idempotent).
ensure_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
  fi
  "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "schemathesis==$SCHEMATHESIS_VERSION" "openapi-python-client==$OPENAPI_PYTHON_CLIENT_VERSION" \
    "standardwebhooks==$STANDARDWEBHOOKS_VERSION"
}

# Adds the browser test tools to .venv (idempotent): Playwright's Python package (whose driver
# ships in the wheel) and pytest. No `playwright install`: the tests use $CHROMIUM.
ensure_browser_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
  fi
  "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "playwright==$PLAYWRIGHT_VERSION" "pytest==$PYTEST_VERSION"
}

# Installs Debian's Chromium when $CHROMIUM is absent (as root, or through sudo).
ensure_chromium() {
  if [ -x "$CHROMIUM" ]; then return; fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
}

# Fetches the pinned axe-core from the npm registry into .cache/ (git-ignored), checks its
# integrity against the pin, and sets AXE_JS to its axe.min.js.
ensure_axe_core() {
  local dir="$ROOT/.cache/axe-core-$AXE_CORE_VERSION"
  AXE_JS="$dir/package/axe.min.js"
  export AXE_JS
  if [ -f "$AXE_JS" ]; then return; fi
  local tmp
  tmp="$(mktemp -d)"
  local tarball
  tarball="$(cd "$tmp" && npm pack --silent "axe-core@$AXE_CORE_VERSION" | tail -n 1)"
  local integrity
  integrity="sha512-$(openssl dgst -sha512 -binary "$tmp/$tarball" | base64 -w0)"
  if [ "$integrity" != "$AXE_CORE_INTEGRITY" ]; then
    echo "axe-core $AXE_CORE_VERSION: integrity $integrity, expected $AXE_CORE_INTEGRITY" >&2
    rm -rf "$tmp"
    return 1
  fi
  mkdir -p "$dir"
  tar -xzf "$tmp/$tarball" -C "$dir" package/axe.min.js package/LICENSE
  rm -rf "$tmp"
}

# Starts the built bankd on DATABASE_URL, listening on a free loopback port, with its files in
# DIR (stdout, bankd.log); sets BANKD_URL, BANKD_KEY (the first platform's key) and BANKD_PID.
# Sets no trap: the caller stops it. Extra environment (BANKD_*) passes through.
launch_bankd() {
  local database_url="$1" dir="$2"
  local bin="${CARGO_TARGET_DIR:-$ROOT/target}/debug/bankd"
  local port
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  BANKD_URL="http://127.0.0.1:$port"
  "$bin" --database-url "$database_url" serve --listen "127.0.0.1:$port" \
    >"$dir/stdout" 2>"$dir/bankd.log" &
  BANKD_PID=$!
  for _ in $(seq 1 400); do
    if curl -fsS "$BANKD_URL/healthz" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$BANKD_PID" 2>/dev/null; then
      echo "bankd exited; its log:" >&2
      cat "$dir/bankd.log" >&2
      return 1
    fi
    sleep 0.05
  done
  BANKD_KEY="$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["api_key"])' "$dir/stdout")"
  export BANKD_URL BANKD_KEY BANKD_PID
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
