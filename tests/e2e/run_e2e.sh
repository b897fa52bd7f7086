#!/usr/bin/env bash
# End-to-end tests: the real PyPI client SDKs (upstash-vector, qstash) against
# `flowvec-server` (the `server/` package) on 127.0.0.1. Called by `.ci/run` as `bash tests/e2e/run_e2e.sh`.
#
#   1. a venv under target/e2e-venv with tests/e2e/requirements.txt (PyPI, reused while the
#      requirements file is unchanged);
#   2. builds flowvec-server (release, or dev with FLOWVEC_E2E_PROFILE=dev) and starts it in the background on a free port;
#   3. waits (bounded) until the port accepts connections;
#   4. runs pytest on tests/e2e, stops the server, exits with pytest's status.
#
# Environment: FLOWVEC_E2E_PORT (default: a free port), FLOWVEC_TOKEN (default e2e-test-token),
# PYTHON (default python3), FLOWVEC_E2E_STARTUP_SECS (default 60). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON=${PYTHON:-python3}
VENV=target/e2e-venv
LOG=target/e2e-server.log
STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/flowvec-e2e.XXXXXX")
PORT=${FLOWVEC_E2E_PORT:-$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
TOKEN=${FLOWVEC_TOKEN:-e2e-test-token}
STARTUP_SECS=${FLOWVEC_E2E_STARTUP_SECS:-60}

# ---------------------------------------------------------------------------------------------
# THE SERVER COMMAND. The tests assume a dense COSINE index of dimension 8 and one bearer
# token for the vector and the queue API. The data directory is a fresh temporary one so no
# state leaks between runs.
SERVER_ARGS=(
  --port "$PORT"
  --token "$TOKEN"
  --dimension 8
  --metric COSINE
  --data-dir "$STATE_DIR/data"
  --retry-backoff-ms 50
)
# ---------------------------------------------------------------------------------------------

step() { printf '\n=== e2e: %s\n' "$*"; }

SERVER_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -INT "$SERVER_PID" 2>/dev/null || true # Ctrl-C: a clean stop (final snapshot)
    for _ in $(seq 1 50); do
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$STATE_DIR"
}
trap cleanup EXIT

step "python venv ($VENV)"
if [[ ! -x "$VENV/bin/python" ]]; then
  "$PYTHON" -m venv "$VENV"
fi
if ! cmp -s tests/e2e/requirements.txt "$VENV/.requirements.installed"; then
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/e2e/requirements.txt
  cp tests/e2e/requirements.txt "$VENV/.requirements.installed"
fi

# FLOWVEC_E2E_PROFILE=dev runs the binary `cargo test` already built (target/debug; the
# dependencies are optimised there too), so CI need not build everything a second time in release.
# It is asked for the way the tests build it: `cargo build -p flowvec-server` would resolve the
# dependencies' features without the dev-dependencies and compile 43 crates again (4 min on a
# cold CI clone); `cargo test --no-run` only puts the tests' build of the binary back in place.
if [[ "${FLOWVEC_E2E_PROFILE:-release}" == dev ]]; then
  step "cargo test --no-run (the server binary the tests use)"
  cargo test --no-run --quiet
  BIN=target/debug/flowvec-server
else
  step "cargo build --release -p flowvec-server"
  cargo build --release -p flowvec-server
  BIN=target/release/flowvec-server
fi
# The further servers the fixtures start (sparse, MiniLM) use the same binary.
export FLOWVEC_SERVER_BIN="${FLOWVEC_SERVER_BIN:-$PWD/$BIN}"

step "start server on 127.0.0.1:$PORT (log: $LOG)"
"$BIN" "${SERVER_ARGS[@]}" >"$LOG" 2>&1 &
SERVER_PID=$!

deadline=$((SECONDS + STARTUP_SECS))
until (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "e2e: the server exited before listening; its log:" >&2
    cat "$LOG" >&2
    exit 1
  fi
  if ((SECONDS >= deadline)); then
    echo "e2e: the server did not listen on port $PORT within ${STARTUP_SECS}s; its log:" >&2
    cat "$LOG" >&2
    exit 1
  fi
  sleep 0.2
done

step "pytest tests/e2e"
set +e
FLOWVEC_URL="http://127.0.0.1:$PORT" FLOWVEC_TOKEN="$TOKEN" \
  "$VENV/bin/python" -m pytest tests/e2e "$@"
status=$?
set -e
if [[ $status -ne 0 ]]; then
  echo "e2e: pytest failed ($status); last lines of the server log:" >&2
  tail -n 50 "$LOG" >&2
fi
exit $status
