#!/usr/bin/env bash
# Reproduces the Apps figures in bench/README.md (issue 27):
#   - a deployed app's static file through Slipway (/a/<route>/page.html,
#     signed in) against bare net/http serving the same file from disk
#     (bench/bare), with the same client (wrk -t1 -c8);
#   - a backend function that reads one row by its key, called with the App
#     token at 8 connections (p99), on SQLite and on PostgreSQL.
#
#   bench/apps.sh                          # builds ./cmd/slipway
#   BINARY=/path/to/slipway bench/apps.sh  # another build
#   ENGINES=sqlite bench/apps.sh           # one engine only
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/serve.sh
bench_init apps
bin=${BINARY:-}
if [ -z "$bin" ]; then
  go build -o "$out/slipway" ./cmd/slipway
  bin=$out/slipway
fi
go build -o "$out/bare" ./bench/bare
DURATION=${DURATION:-10s}

# The page: 4 KiB of HTML, the same bytes for both servers.
mkdir -p "$out/files"
{ echo '<!doctype html><title>bench</title>'; for i in $(seq 1 60); do echo "<p>row $i of the benchmark page, some text to fill it</p>"; done; } | head -c 4096 > "$out/files/page.html"

json_escape() { python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'; }

run_engine() { # $1 = sqlite|postgres
  local engine=$1 app tok content
  serve_signed_in "$engine" 18095
  post() { curl -sf -X "${3:-POST}" -H "$cookie" -H "X-CSRF-Token: $csrf" -H 'Content-Type: application/json' -d "$2" "$url$1"; }
  manifest=$'name: Bench\nfunctions:\n  - name: get_item\n    operation: query\n    sql: SELECT id, name FROM items WHERE id = $1\n    args:\n      - name: id\n        type: integer\n'
  app=$(post /api/apps "{\"name\":\"bench\",\"manifest_yaml\":$(printf '%s' "$manifest" | json_escape)}" | sed 's/^{"id":"\([^"]*\)".*/\1/')
  post "/api/apps/$app/files/index.html" '{"content":"<h1>bench</h1>"}' PUT >/dev/null
  content=$(json_escape < "$out/files/page.html")
  post "/api/apps/$app/files/page.html" "{\"content\":$content}" PUT >/dev/null
  post "/api/apps/$app/migrations" '{"name":"001_items","sql":"CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL); INSERT INTO items (id, name) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) SELECT x, '"'"'item '"'"' || x FROM c"}' >/dev/null
  post "/api/apps/$app/builds" '' >/dev/null
  post "/api/apps/$app/deploy" '{"route_path":"/bench"}' >/dev/null
  tok=$(post "/api/apps/$app/deployment/token" '' | sed 's/.*"token":"\([^"]*\)".*/\1/')
  cmp <(curl -sf -H "$cookie" "$url/a/bench/page.html") "$out/files/page.html" || { echo "the served page differs" >&2; exit 1; }
  curl -sf -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' -d '{"args":[42]}' "$url/api/apps/$app/backend/get_item" | grep -q '"name":"item 42"' ||
    { echo "get_item did not answer item 42" >&2; exit 1; }

  if [ "$engine" = sqlite ]; then
    "$out/bare" -addr 127.0.0.1:18099 -dir "$out/files" &
    pids+=($!)
    for _ in $(seq 1 50); do curl -sf http://127.0.0.1:18099/page.html >/dev/null && break; sleep 0.1; done
    for round in 1 2; do
      echo "== round $round: bare net/http, GET /page.html, wrk -t1 -c8 -d$DURATION"
      wrk -t1 -c8 -d"$DURATION" --latency http://127.0.0.1:18099/page.html | grep -E 'Requests/sec|  99%|Non-2xx'
      echo "== round $round: slipway ($engine), GET /a/bench/page.html signed in, wrk -t1 -c8 -d$DURATION"
      wrk -t1 -c8 -d"$DURATION" --latency -H "$cookie" "$url/a/bench/page.html" | grep -E 'Requests/sec|  99%|Non-2xx'
    done
  fi
  cat >"$out/call.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"args":[42]}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $tok"
LUA
  echo "== $engine: POST /api/apps/{id}/backend/get_item (one row by key), App token, wrk -t1 -c8 -d$DURATION"
  wrk -t1 -c8 -d"$DURATION" --latency -s "$out/call.lua" "$url/api/apps/$app/backend/get_item" | grep -E 'Requests/sec|  50%|  99%|Non-2xx'
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

for e in ${ENGINES:-sqlite postgres}; do run_engine "$e"; done
