#!/usr/bin/env bash
# Reproduces the identity figures in bench/README.md: authenticated GET /api/me
# throughput and latency on SQLite, and login throughput at the default
# argon2id cost. Needs wrk and curl. Usage: bench/auth.sh (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
out=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$out"; }
trap cleanup EXIT
go build -o "$out/slipway" ./cmd/slipway
port=18092
url=http://127.0.0.1:$port
SERVER_PORT=$port SERVICE_DATA_DIR="$out/data" SERVICE_LOG_LEVEL=warn SERVICE_INITIAL_ADMIN_EMAILS=bench@example.test \
  "$out/slipway" serve >/dev/null 2>"$out/serve.log" &
pids+=($!)
for _ in $(seq 1 100); do curl -sf "$url/readyz" >/dev/null && break; sleep 0.1; done
body='{"email":"bench@example.test","password":"bench-password-42","display_name":"Bench"}'
curl -sf -X POST -H 'Content-Type: application/json' -d "$body" "$url/api/auth/register" >/dev/null
token=$(curl -s -D - -o /dev/null -X POST -H 'Content-Type: application/json' \
  -d '{"email":"bench@example.test","password":"bench-password-42"}' "$url/api/auth/login" |
  sed -n 's/^Set-Cookie: service_session=\([^;]*\).*/\1/p' | tr -d '\r')
[ -n "$token" ] || { echo "login failed" >&2; exit 1; }

echo "== GET /api/me with a session cookie (wrk -t1 -c32 -d10s --latency)"
wrk -t1 -c32 -d10s --latency -H "Cookie: service_session=$token" "$url/api/me" | grep -E 'Requests/sec|Latency|50%|99%'

echo "== POST /api/auth/login, right password (wrk -t1 -c8 -d10s)"
cat > "$out/login.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"email":"bench@example.test","password":"bench-password-42"}'
LUA
wrk -t1 -c8 -d10s --latency -s "$out/login.lua" "$url/api/auth/login" | grep -E 'Requests/sec|Latency|50%|99%|Non-2xx'
echo "== one argon2id hash at the default cost"
go test -run XXX -bench HashPassword -benchtime 20x ./internal/auth/ | grep Benchmark
