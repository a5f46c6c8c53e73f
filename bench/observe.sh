#!/usr/bin/env bash
# Reproduces the observability figures in bench/README.md: what measuring
# costs on authenticated GET /api/me and on the sync webhook -> transform ->
# end flow of bench/webhook.sh, with metrics off (SERVICE_METRICS_ADDR=off:
# no listener, requests not measured) and on (the default: every request in
# the histogram, a scrape of /metrics every second), rounds alternating so
# each mode sees the same machine weather. Prints req/s per round and the
# median of each mode.
#
#   bench/observe.sh                          # builds ./cmd/slipway; modes off and on
#   BEFORE=/path/to/slipway bench/observe.sh  # adds "before": a build without the instrumentation
#   MODES="off on traced" bench/observe.sh    # traced: every span exported over OTLP/HTTP to a local sink
#   ENGINES=sqlite ROUNDS=5 DURATION=10s CONNS=8 bench/observe.sh
#
# Needs wrk, curl, python3 (the OTLP sink of the traced mode) and, for
# PostgreSQL, psql reaching a server (PGSERVER=postgres://postgres@127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/serve.sh
bench_init observe
go build -o "$out/slipway" ./cmd/slipway
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-8}
MODES=${MODES:-off on}
if [ -n "${BEFORE:-}" ]; then MODES="before $MODES"; fi
METRICS=127.0.0.1:18464
SINK=127.0.0.1:18318

case " $MODES " in *" traced "*)
  # An OTLP/HTTP endpoint that takes every export and drops it.
  python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.send_header("Content-Type", "application/x-protobuf"); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()' "${SINK%:*}" "${SINK#*:}" &
  pids+=($!)
esac

rps() { awk '/Requests\/sec/ {printf "%.0f", $2}'; }

results=$out/results
run_mode() { # $1 = engine, $2 = mode
  local engine=$1 mode=$2 url pid csrf cookie scraper
  unset SERVICE_METRICS_ADDR OTEL_EXPORTER_OTLP_ENDPOINT
  bin=$out/slipway
  case $mode in
    before) bin=$BEFORE ;;
    off) export SERVICE_METRICS_ADDR=off ;;
    on) export SERVICE_METRICS_ADDR=$METRICS ;;
    traced) export SERVICE_METRICS_ADDR=$METRICS OTEL_EXPORTER_OTLP_ENDPOINT=http://$SINK ;;
  esac
  serve_signed_in "$engine" 18095
  local project hook
  webhook_flow "$out/repo-$engine-$mode-$round.git"
  scraper=
  if [ "$mode" = on ] || [ "$mode" = traced ]; then
    local scraped
    scraped=$(curl -sf "http://$METRICS/metrics" || true)
    grep -q '^slipway_http_request_duration_seconds_count' <<<"$scraped" ||
      { echo "no metrics at $METRICS" >&2; cat "$out/serve-$engine.log" >&2; exit 1; }
    (while sleep 1; do curl -sf -o /dev/null "http://$METRICS/metrics" || true; done) &
    scraper=$!
  fi
  wrk -t1 -c"$CONNS" -d2s -H "$cookie" "$url/api/me" >/dev/null # warm-up
  local me hookrps
  me=$(wrk -t1 -c"$CONNS" -d"$DURATION" -H "$cookie" "$url/api/me" | rps)
  hookrps=$(wrk -t1 -c"$CONNS" -d"$DURATION" -s "$out/post.lua" "$url$hook" | rps)
  [ -n "$scraper" ] && kill "$scraper" 2>/dev/null && wait "$scraper" 2>/dev/null || true
  echo "$engine $mode $round $me $hookrps" | tee -a "$results"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

echo "engine mode round me_rps webhook_rps"
for e in ${ENGINES:-sqlite postgres}; do
  for round in $(seq 1 "$ROUNDS"); do
    for m in $MODES; do run_mode "$e" "$m"; done
  done
done
echo "== medians (req/s) =="
for e in ${ENGINES:-sqlite postgres}; do
  for m in $MODES; do
    me=$(awk -v e="$e" -v m="$m" '$1==e && $2==m {print $4}' "$results" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    wh=$(awk -v e="$e" -v m="$m" '$1==e && $2==m {print $5}' "$results" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "$e $m GET /api/me $me, webhook $wh"
  done
done
