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
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
out=$(mktemp -d)
pids=()
PGSERVER=${PGSERVER:-postgres://postgres@127.0.0.1:5432}
PGURL=$PGSERVER/postgres?sslmode=disable
dbname=slipway_bench_webhook_$$
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  psql -q "$PGURL" -c "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$out"
}
trap cleanup EXIT
bin=${BINARY:-}
if [ -z "$bin" ]; then
  go build -o "$out/slipway" ./cmd/slipway
  bin=$out/slipway
fi
DURATION=${DURATION:-20s}
CONNS=${CONNS:-1 8 32}
cat >"$out/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"n":21}'
wrk.headers["Content-Type"] = "application/json"
LUA

run_engine() { # $1 = sqlite|postgres
  local engine=$1 url pid csrf cookie
  serve_signed_in "$engine" 18094
  post() { curl -sf -X POST -H "$cookie" -H "X-CSRF-Token: $csrf" -H 'Content-Type: application/json' -d "$2" "$url$1"; }
  git init -q --bare -b main "$out/repo-$engine.git"
  local project workflow hook
  project=$(post /api/projects "{\"name\":\"bench\",\"repo_url\":\"$out/repo-$engine.git\"}" | sed 's/.*"id":"\([^"]*\)".*/\1/')
  workflow=$(post /api/workflows "{\"project_id\":\"$project\",\"name\":\"double\",
    \"nodes\":[{\"key\":\"double\",\"kind\":\"transform\",\"config\":{\"mapping\":{\"ok\":\"true\",\"n\":\"input.n * 2\"}}},
               {\"key\":\"respond\",\"kind\":\"end\",\"config\":{\"output\":\"nodes.double.output\"}}],
    \"edges\":[{\"source\":\"double\",\"target\":\"respond\"}]}" | sed 's/^{"id":"\([^"]*\)".*/\1/')
  hook=$(post "/api/workflows/$workflow/triggers" '{"kind":"webhook","config":{"response_mode":"sync"}}' |
    sed 's/.*"receiver_url":"\([^"]*\)".*/\1/')
  local answer
  answer=$(curl -sf -X POST -H 'Content-Type: application/json' -d '{"n":21}' "$url$hook")
  [ "$answer" = '{"n":42,"ok":true}' ] || { echo "unexpected answer: $answer" >&2; exit 1; }
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
