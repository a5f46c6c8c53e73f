#!/usr/bin/env bash
# The n8n side of the webhook benchmark in bench/README.md: n8n 1.119.2 on
# SQLite, the same flow (Webhook -> Set n = n * 2, ok = true -> Respond to
# Webhook, imported from internal/n8nimport/testdata/bench.json), every
# execution saved, driven by the same wrk command as bench/webhook.sh.
#
#   bench/n8n.sh                      # installs n8n into a temporary directory (minutes)
#   N8N_DIR=/opt/n8n bench/n8n.sh     # reuses (or makes) an install there
#   POOL=4 bench/n8n.sh               # n8n's SQLite WAL pool (DB_SQLITE_POOL_SIZE)
#
# Needs node (20+), npm, wrk and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
N8N_DIR=${N8N_DIR:-$(mktemp -d)}
if [ ! -x "$N8N_DIR/node_modules/.bin/n8n" ]; then
  echo "== installing n8n 1.119.2 into $N8N_DIR (about five minutes, 1.4 GB)" >&2
  # n8n pins xlsx to a tarball on cdn.sheetjs.com; the override takes the
  # npm registry's build instead, so only the registry is needed.
  printf '%s\n' '{"private": true, "dependencies": {"n8n": "1.119.2"}, "overrides": {"xlsx": "0.18.5"}}' >"$N8N_DIR/package.json"
  (cd "$N8N_DIR" && npm install --no-audit --no-fund --loglevel=error) >&2
fi
n8n=$N8N_DIR/node_modules/.bin/n8n
home=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$home"; }
trap cleanup EXIT
export N8N_USER_FOLDER=$home N8N_PORT=${N8N_PORT:-5679} DB_TYPE=sqlite EXECUTIONS_DATA_SAVE_ON_SUCCESS=all \
  EXECUTIONS_DATA_SAVE_ON_ERROR=all N8N_DIAGNOSTICS_ENABLED=false N8N_PERSONALIZATION_ENABLED=false N8N_LOG_LEVEL=warn \
  N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS=false
[ -n "${POOL:-}" ] && export DB_SQLITE_POOL_SIZE=$POOL
DURATION=${DURATION:-20s}
CONNS=${CONNS:-1 8 32}
"$n8n" import:workflow --input=internal/n8nimport/testdata/bench.json >&2
"$n8n" update:workflow --id=BenchFlow0001 --active=true >&2
"$n8n" start >"$home/n8n.log" 2>&1 &
pid=$!
url=http://127.0.0.1:$N8N_PORT
for _ in $(seq 1 300); do curl -sf "$url/healthz" >/dev/null && break; sleep 0.2; done
answer=""
for _ in $(seq 1 50); do
  answer=$(curl -s -X POST -H 'Content-Type: application/json' -d '{"n":21}' "$url/webhook/bench" || true)
  case $answer in *'"n":42'*) break ;; esac
  sleep 0.2
done
case $answer in *'"n":42'*'"ok":true'*|*'"ok":true'*'"n":42'*) ;; *) echo "unexpected answer: $answer" >&2; tail -20 "$home/n8n.log" >&2; exit 1 ;; esac
post=$home/post.lua
printf 'wrk.method = "POST"\nwrk.body = %s\nwrk.headers["Content-Type"] = "application/json"\n' "'{\"n\":21}'" >"$post"
for c in $CONNS; do
  echo "== n8n${POOL:+ (pool $POOL)}: webhook, wrk -t1 -c$c -d$DURATION"
  wrk -t1 -c"$c" -d"$DURATION" --latency -s "$post" "$url/webhook/bench" | grep -E 'Requests/sec|  50%|  99%|Non-2xx|requests in'
done
