#!/usr/bin/env bash
# Server CPU per stored webhook run: the sync webhook -> transform -> end
# flow of bench/webhook.sh, driven by wrk at 8 connections for 10 s after a
# 3 s warm-up; the server process's CPU time (user + system, from
# /proc/PID/stat) over the runs it stored.
#
#   BINARY=/path/to/slipway ENGINE=sqlite bench/cpu.sh     # or ENGINE=postgres
#
# Needs wrk, curl and, for PostgreSQL, psql reaching the local server.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/serve.sh
out=$(mktemp -d); pids=(); bin=$BINARY
PGSERVER=postgres://postgres@127.0.0.1:5432; PGURL=$PGSERVER/postgres?sslmode=disable; dbname=slipway_cpu_$$
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null||true; wait $p 2>/dev/null||true; done; psql -q "$PGURL" -c "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" >/dev/null 2>&1||true; rm -rf $out' EXIT
serve_signed_in $ENGINE $((18200 + RANDOM % 700))
webhook_flow "$out/repo.git"
cat >"$out/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"n":21}'
wrk.headers["Content-Type"] = "application/json"
LUA
wrk -t1 -c8 -d3s -s "$out/post.lua" "$url$hook" >/dev/null
cpu() { awk '{print $14+$15}' /proc/$pid/stat; }
c0=$(cpu)
reqs=$(wrk -t1 -c8 -d10s -s "$out/post.lua" "$url$hook" | sed -n 's/^ *\([0-9]*\) requests in.*/\1/p')
c1=$(cpu)
tck=$(getconf CLK_TCK)
awk -v a=$c0 -v b=$c1 -v n=$reqs -v t=$tck 'BEGIN{printf "runs %d, server CPU %.2f s, %.3f ms per run\n", n, (b-a)/t, (b-a)/t*1000/n}'
