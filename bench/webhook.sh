#!/usr/bin/env bash
# Reproduces the webhook figures of the triggers section in bench/README.md:
# a sync webhook -> transform -> end workflow answering POST {"n":21} with
# {"n":42,"ok":true}, driven by wrk at 1, 8 and 32 connections, on SQLite
# and on PostgreSQL; every delivery is a run stored in the database (the
# script counts them after each engine).
#
#   bench/webhook.sh                      # builds ./cmd/slipway
#   BINARY=/path/to/slipway bench/webhook.sh
#   ENGINES=sqlite CONNS="8" DURATION=20s bench/webhook.sh
#
# Needs wrk, curl and, for PostgreSQL, psql reaching a server (default: the
# local trust-auth server: PGSERVER=postgres://postgres@127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/serve.sh
bench_init webhook
bin=${BINARY:-}
if [ -z "$bin" ]; then
  go build -o "$out/slipway" ./cmd/slipway
  bin=$out/slipway
fi
DURATION=${DURATION:-20s}
CONNS=${CONNS:-1 8 32}

run_engine() { # $1 = sqlite|postgres
  local engine=$1 url pid csrf cookie
  serve_signed_in "$engine" 18094
  local project hook
  webhook_flow "$out/repo-$engine.git"
  # Warm up first (prepared statements on every pooled connection, caches):
  # without it PostgreSQL's first figure reads 10-40 % low.
  wrk -t1 -c8 -d3s -s "$out/post.lua" "$url$hook" >/dev/null
  for c in $CONNS; do
    echo "== $engine: sync webhook, wrk -t1 -c$c -d$DURATION"
    wrk -t1 -c"$c" -d"$DURATION" --latency -s "$out/post.lua" "$url$hook" | grep -E 'Requests/sec|  50%|  99%|Non-2xx|requests in'
  done
  local runs
  runs=$(curl -sf -H "$cookie" "$url/api/workflows/stats?project_id=$project")
  echo "== $engine: stats after the runs: $runs"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

for e in ${ENGINES:-sqlite postgres}; do run_engine "$e"; done
