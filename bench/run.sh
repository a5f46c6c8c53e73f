#!/usr/bin/env bash
# Reproduces the figures in bench/README.md. Needs wrk (apt-get install wrk).
# Usage: bench/run.sh [runs]   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
out=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$out"; }
trap cleanup EXIT

go build -o "$out/slipway" ./cmd/slipway
go build -o "$out/baseline" ./bench/baseline

echo "== start to ready, idle RSS"
go run ./bench/startup -bin "$out/slipway" -n 30

echo "== /livez requests per second (wrk -t1 -c32, ${runs} x 5 s, alternating with a bare net/http baseline)"
SERVER_PORT=18091 SERVICE_DATA_DIR="$out/data" SERVICE_LOG_LEVEL=warn "$out/slipway" serve >/dev/null 2>"$out/serve.log" &
pids+=($!)
"$out/baseline" :18090 >/dev/null 2>&1 &
pids+=($!)
sleep 1
for i in $(seq 1 "$runs"); do
  s=$(wrk -t1 -c32 -d5s http://127.0.0.1:18091/livez | awk '/Requests\/sec/ {print int($2)}')
  b=$(wrk -t1 -c32 -d5s http://127.0.0.1:18090/livez | awk '/Requests\/sec/ {print int($2)}')
  echo "run $i: slipway $s req/s, baseline $b req/s"
  echo "$s" >> "$out/s"; echo "$b" >> "$out/b"
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median: slipway $(median "$out/s") req/s, baseline $(median "$out/b") req/s"
