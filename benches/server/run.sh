#!/usr/bin/env bash
# flowvec-server figures for the README (one run, one machine): upsert and publish throughput
# over HTTP with --fsync always vs off (wrk, 32 connections, batches of 100 384-d vectors from
# minilm-text), recovery time of the 43k index (snapshot with graph links + a log tail), and the
# data directory's size per vector and per waiting message.
#
#   bash benches/server/run.sh            # needs wrk (apt-get install wrk) and python3
#
# Environment: DURATION (wrk seconds per run, default 20), DATASET (default
# ../shared/datasets/minilm-text).
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-20}
DATASET=${DATASET:-../shared/datasets/minilm-text}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
cargo build --release -p flowvec-server
BIN=target/release/flowvec-server
WORK=$(mktemp -d "${TMPDIR:-/tmp}/flowvec-bench.XXXXXX")
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

echo "# flowvec-server figures, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"

python3 benches/server/bodies.py "$DATASET/base.fvecs" "$WORK/bodies" 200 100

start() { # dir fsync extra...
  local dir=$1 fsync=$2; shift 2
  "$BIN" --port 0 --token bench --dimension 384 --data-dir "$dir" --fsync "$fsync" "$@" >"$dir.log" 2>&1 &
  PIDS+=($!)
  SERVER_PID=$!
  for _ in $(seq 1 600); do
    PORT=$(sed -n 's|^flowvec-server listening on http://127.0.0.1:||p' "$dir.log")
    [[ -n "$PORT" ]] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$dir.log"; exit 1; }
    sleep 0.1
  done
  echo "server did not start" >&2; exit 1
}
stop() { kill -TERM "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; }

python3 benches/server/receiver.py "$WORK/receiver.port" &
PIDS+=($!)
for _ in $(seq 1 50); do [[ -s "$WORK/receiver.port" ]] && break; sleep 0.1; done
RECV=$(cat "$WORK/receiver.port")

echo
echo "| what | --fsync always | --fsync off | always / off |"
echo "|---|---|---|---|"
for what in upsert publish; do
  declare -A rate=()
  for fsync in always off; do
    dir="$WORK/$what-$fsync"
    start "$dir" "$fsync"
    BODIES="$WORK/bodies" RECV="$RECV" KIND=$what wrk -t 2 -c 32 -d "${DURATION}s" \
      -s benches/server/wrk.lua "http://127.0.0.1:$PORT" >"$dir.wrk" 2>&1
    rate[$fsync]=$(sed -n 's/^Requests\/sec: *//p' "$dir.wrk")
    stop
  done
  unit="requests/s"
  [[ $what == upsert ]] && unit="requests/s (x100 vectors)"
  ratio=$(python3 -c "print(f'{${rate[always]}/${rate[off]}:.2f}')")
  echo "| $what $unit | ${rate[always]} | ${rate[off]} | $ratio |"
done

echo
echo "## Recovery of the 43k minilm-text index (snapshot with graph links + a 10,000-entry log tail)"
dir="$WORK/recovery"
start "$dir" always --snapshot-every 100000000
python3 benches/server/load.py "http://127.0.0.1:$PORT" "$DATASET/base.fvecs" upsert 43000
stop # SIGTERM: a final snapshot with the graph links, the log truncated and compacted
cp -r "$dir" "$dir.base"
for tail in tail-publish tail-upsert; do
  rm -rf "$dir" && cp -r "$dir.base" "$dir"
  start "$dir" always --snapshot-every 100000000
  python3 benches/server/load.py "http://127.0.0.1:$PORT" "$DATASET/base.fvecs" "$tail" 10000 "$RECV"
  kill -9 "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
  start "$dir" always --snapshot-every 100000000
  echo "- $tail: $(grep '^recovered' "$dir.log" | sed 's/^recovered [^:]*: //')"
  stop
done
echo
echo "## Data directory size"
python3 benches/server/sizes.py "$BIN" "$WORK/sizes" "$DATASET/base.fvecs" "$RECV"
