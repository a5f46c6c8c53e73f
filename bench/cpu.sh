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
bench_init cpu
bin=$BINARY
serve_signed_in $ENGINE $((18200 + RANDOM % 700))
webhook_flow "$out/repo.git"
wrk -t1 -c8 -d3s -s "$out/post.lua" "$url$hook" >/dev/null
cpu() { awk '{print $14+$15}' /proc/$pid/stat; }
c0=$(cpu)
reqs=$(wrk -t1 -c8 -d10s -s "$out/post.lua" "$url$hook" | sed -n 's/^ *\([0-9]*\) requests in.*/\1/p')
c1=$(cpu)
tck=$(getconf CLK_TCK)
awk -v a=$c0 -v b=$c1 -v n=$reqs -v t=$tck 'BEGIN{printf "runs %d, server CPU %.2f s, %.3f ms per run\n", n, (b-a)/t, (b-a)/t*1000/n}'
