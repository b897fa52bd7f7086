#!/usr/bin/env bash
# Figures of the replicated server for the README (one run, one machine; the nodes of a group
# share this machine's cores with each other and with wrk):
#   1. one node, this build vs BASELINE (a binary from before replication, if given): upsert
#      and publish throughput, --fsync always, alternating A B A B;
#   2. writes on a one-node group vs a three-node group (sent to the leader), and queries on one
#      node vs spread over the three nodes (the 43k-vector index would take long to load three
#      times: queries run on 20,000 minilm-text vectors);
#   3. snapshot installation: the 43k minilm-text index on a one-node group, then a second node
#      joins (POST /cluster/add-learner, which returns when the learner has caught up).
#
#   BASELINE=/path/to/old/flowvec-server bash benches/server/cluster.sh   # needs wrk, python3
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-15}
DATASET=${DATASET:-../shared/datasets/minilm-text}
BASELINE=${BASELINE:-}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
if [[ -z "${BIN:-}" ]]; then cargo build --release -p flowvec-server; BIN=target/release/flowvec-server; fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/flowvec-cluster.XXXXXX")
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

echo "# flowvec-server replication figures, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
python3 benches/server/bodies.py "$DATASET/base.fvecs" "$WORK/bodies" 200 100

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# start <binary> <log> args...: sets PORT (HTTP) and SERVER_PID
start() {
  local bin=$1 log=$2; shift 2
  "$bin" --port 0 --token bench --dimension 384 "$@" >"$log" 2>&1 &
  PIDS+=($!)
  SERVER_PID=$!
  for _ in $(seq 1 600); do
    PORT=$(sed -n 's|^flowvec-server listening on http://127.0.0.1:||p' "$log")
    [[ -n "$PORT" ]] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.1
  done
  echo "server did not start: $log" >&2; exit 1
}
metric() { curl -s "http://127.0.0.1:$1/cluster/metrics" | python3 -c "import json,sys; print(json.load(sys.stdin).get('$2'))"; }
rate() { sed -n 's/^Requests\/sec: *//p' "$1"; }

python3 benches/server/receiver.py "$WORK/receiver.port" &
PIDS+=($!)
for _ in $(seq 1 50); do [[ -s "$WORK/receiver.port" ]] && break; sleep 0.1; done
RECV=$(cat "$WORK/receiver.port")
load() { # kind port(s) out
  local kind=$1 ports=$2 out=$3
  BODIES="$WORK/bodies" RECV="$RECV" KIND=$kind PORTS=$ports wrk -t 3 -c 30 -d "${DURATION}s" \
    -s benches/server/wrk.lua "http://127.0.0.1:${ports%%,*}" >"$out" 2>&1
}

if [[ -n "$BASELINE" ]]; then
  echo
  echo "## One node: this build vs the baseline (--fsync always, wrk 30 connections, ${DURATION} s)"
  echo "| what | baseline | this build | this / baseline |"
  echo "|---|---|---|---|"
  for kind in upsert publish; do
    declare -A sum=([base]=0 [new]=0)
    for round in 1 2; do
      for who in base new; do
        bin=$BIN; [[ $who == base ]] && bin=$BASELINE
        dir="$WORK/one-$kind-$who-$round"
        start "$bin" "$dir.log" --data-dir "$dir"
        load "$kind" "$PORT" "$dir.wrk"
        sum[$who]=$(python3 -c "print(${sum[$who]} + $(rate "$dir.wrk"))")
        kill -TERM "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
      done
    done
    python3 -c "b=${sum[base]}/2; n=${sum[new]}/2; print(f'| $kind requests/s (mean of 2) | {b:,.1f} | {n:,.1f} | {n/b:.2f} |')"
  done
fi

echo
echo "## One node vs a three-node group (same machine)"
R=(0 "$(free_port)" "$(free_port)" "$(free_port)")
PEERS="1=127.0.0.1:${R[1]},2=127.0.0.1:${R[2]},3=127.0.0.1:${R[3]}"
declare -A HTTP=()
for i in 1 2 3; do
  start "$BIN" "$WORK/n$i.log" --data-dir "$WORK/n$i" --node-id "$i" --peers "$PEERS" --raft-port "${R[$i]}"
  HTTP[$i]=$PORT
done
leader=""
for _ in $(seq 1 100); do leader=$(metric "${R[1]}" leader); [[ "$leader" =~ ^[0-9]+$ ]] && break; sleep 0.1; done
start "$BIN" "$WORK/single.log" --data-dir "$WORK/single"
SINGLE=$PORT
echo "| what | one node | three nodes | ratio |"
echo "|---|---|---|---|"
for kind in upsert publish; do
  load "$kind" "$SINGLE" "$WORK/w1-$kind"
  load "$kind" "${HTTP[$leader]}" "$WORK/w3-$kind"
  python3 -c "a=$(rate "$WORK/w1-$kind"); b=$(rate "$WORK/w3-$kind"); print(f'| $kind requests/s (to the leader) | {a:,.1f} | {b:,.1f} | {b/a:.2f} |')"
done
# The queries read what the upserts above wrote (20,000 vectors on each).
for kind in query; do
  load query "$SINGLE" "$WORK/q1"
  load query "${HTTP[1]},${HTTP[2]},${HTTP[3]}" "$WORK/q3"
  python3 -c "a=$(rate "$WORK/q1"); b=$(rate "$WORK/q3"); print(f'| query requests/s, linearizable reads (spread over the nodes) | {a:,.1f} | {b:,.1f} | {b/a:.2f} |')"
done
pkill -TERM -f "$WORK/n" 2>/dev/null || true
pkill -TERM -f "$WORK/single" 2>/dev/null || true
sleep 2

echo
echo "## Snapshot installation: the 43k minilm-text index, a second node joins"
r1=$(free_port); r2=$(free_port)
start "$BIN" "$WORK/s1.log" --data-dir "$WORK/s1" --node-id 1 --raft-port "$r1" --snapshot-every 50
S1=$PORT
python3 benches/server/load.py "http://127.0.0.1:$S1" "$DATASET/base.fvecs" upsert 43000
start "$BIN" "$WORK/s2.log" --data-dir "$WORK/s2" --node-id 2 --raft-port "$r2" --join
t0=$(date +%s.%N)
curl -s -X POST "http://127.0.0.1:$r1/cluster/add-learner" -d "{\"id\":2,\"addr\":\"127.0.0.1:$r2\"}" >/dev/null
t1=$(date +%s.%N)
echo "- add-learner returned (node 2 caught up) after $(python3 -c "print(f'{$t1-$t0:.2f}')") s; node 2: $(grep -h '^installed snapshot' "$WORK/s2.log" || echo 'no snapshot installed')"
echo "- node 2 lastApplied $(metric "$r2" lastApplied) vs node 1 $(metric "$r1" lastApplied)"
