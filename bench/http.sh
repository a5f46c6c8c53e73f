#!/usr/bin/env bash
# Reproduces the HTTP figures of the execution-core section in bench/README.md:
# authenticated GET /api/me at 8 and 64 connections and GET /api/tasks (20
# rows) at 8 connections, on SQLite and on PostgreSQL, side by side.
#
#   bench/http.sh                      # builds ./cmd/slipway
#   BINARY=/path/to/slipway bench/http.sh   # measures another build (e.g. an older commit)
#   ENGINES=postgres bench/http.sh     # one engine only
#
# Needs wrk, curl and, for PostgreSQL, psql reaching a server (default: the local
# trust-auth server: PGSERVER=postgres://postgres@127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/serve.sh
bench_init http
bin=${BINARY:-}
if [ -z "$bin" ]; then
  go build -o "$out/slipway" ./cmd/slipway
  bin=$out/slipway
fi
DURATION=${DURATION:-10s}

run_engine() { # $1 = sqlite|postgres
  local engine=$1 url pid csrf cookie
  serve_signed_in "$engine" 18093
  # A project on a local repository and 20 held tasks (held: they stay queued,
  # so the list does not change while it is measured).
  git init -q --bare -b main "$out/repo-$engine.git"
  local project
  project=$(curl -sf -X POST -H "$cookie" -H "X-CSRF-Token: $csrf" -H 'Content-Type: application/json' \
    -d "{\"name\":\"bench\",\"repo_url\":\"$out/repo-$engine.git\"}" "$url/api/projects" | sed 's/.*"id":"\([^"]*\)".*/\1/')
  for i in $(seq 1 20); do
    curl -sf -X POST -H "$cookie" -H "X-CSRF-Token: $csrf" -H 'Content-Type: application/json' \
      -d "{\"project_id\":\"$project\",\"prompt\":\"echo task $i\",\"hold\":true}" "$url/api/tasks" >/dev/null
  done
  local n
  n=$(curl -sf -H "$cookie" "$url/api/tasks?limit=20" | grep -o '"id"' | wc -l)
  [ "$n" = 20 ] || { echo "expected 20 tasks, got $n" >&2; exit 1; }
  for c in 8 64; do
    echo "== $engine: GET /api/me, wrk -t1 -c$c -d$DURATION"
    wrk -t1 -c$c -d"$DURATION" --latency -H "$cookie" "$url/api/me" | grep -E 'Requests/sec|  99%|Non-2xx'
  done
  echo "== $engine: GET /api/tasks?limit=20, wrk -t1 -c8 -d$DURATION"
  wrk -t1 -c8 -d"$DURATION" --latency -H "$cookie" "$url/api/tasks?limit=20" | grep -E 'Requests/sec|  99%|Non-2xx'
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

for e in ${ENGINES:-sqlite postgres}; do run_engine "$e"; done
