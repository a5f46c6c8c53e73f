# Sourced by the bench scripts.
#
# bench_init NAME prepares one: wrk must be there; $out is a temporary
# directory holding post.lua (wrk's script for the webhook flow's POST
# {"n":21}); $pids are the servers to stop; $PGSERVER and $PGURL name the
# PostgreSQL server and $dbname a database of its own. On exit the servers
# stop, the database is dropped and $out removed.
bench_init() { # $1 = the script's name
  command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
  out=$(mktemp -d)
  pids=()
  PGSERVER=${PGSERVER:-postgres://postgres@127.0.0.1:5432}
  PGURL=$PGSERVER/postgres?sslmode=disable
  dbname=slipway_bench_$1_$$
  cat >"$out/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"n":21}'
wrk.headers["Content-Type"] = "application/json"
LUA
  trap bench_cleanup EXIT
}

bench_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  psql -q "$PGURL" -c "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$out"
}

# serve_signed_in ENGINE PORT starts the server
# ($bin) on a fresh SQLite file or PostgreSQL database and signs an admin in.
# It uses the caller's $out, $bin, $PGURL, $PGSERVER, $dbname and pids, and
# sets url, pid, csrf and cookie (the Cookie header of the session).
serve_signed_in() { # $1 = sqlite|postgres, $2 = port
  local engine=$1 port=$2 dburl headers token
  url=http://127.0.0.1:$port
  rm -rf "$out/data"
  if [ "$engine" = postgres ]; then
    psql -q "$PGURL" -c "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" >/dev/null 2>&1
    psql -q "$PGURL" -c "CREATE DATABASE $dbname" >/dev/null
    dburl=$PGSERVER/$dbname?sslmode=disable
  else
    dburl=sqlite:$out/data/slipway.db
  fi
  SERVER_PORT=$port SERVICE_DATA_DIR="$out/data" DATABASE_URL="$dburl" SERVICE_LOG_LEVEL=warn \
    SERVICE_INITIAL_ADMIN_EMAILS=bench@example.test SERVICE_AGENT_BACKEND=process \
    "$bin" serve >/dev/null 2>"$out/serve-$engine.log" &
  pid=$!
  pids+=($pid)
  for _ in $(seq 1 200); do curl -sf "$url/readyz" >/dev/null && break; sleep 0.1; done
  curl -sf -X POST -H 'Content-Type: application/json' \
    -d '{"email":"bench@example.test","password":"bench-password-42","display_name":"Bench"}' "$url/api/auth/register" >/dev/null
  headers=$(curl -s -D - -o /dev/null -X POST -H 'Content-Type: application/json' \
    -d '{"email":"bench@example.test","password":"bench-password-42"}' "$url/api/auth/login")
  token=$(sed -n 's/^Set-Cookie: service_session=\([^;]*\).*/\1/p' <<<"$headers" | tr -d '\r')
  csrf=$(sed -n 's/^Set-Cookie: service_csrf=\([^;]*\).*/\1/p' <<<"$headers" | tr -d '\r')
  [ -n "$token" ] || { echo "login failed" >&2; cat "$out/serve-$engine.log" >&2; exit 1; }
  cookie="Cookie: service_session=$token; service_csrf=$csrf"
}

# webhook_flow REPO makes, on the signed-in server, a project on a new bare
# repository at REPO and the sync webhook -> transform -> end workflow the
# webhook benchmarks drive (POST {"n":21} answers {"n":42,"ok":true}),
# checks one answer, and sets project to the project's id and hook to the
# receiver's path.
webhook_flow() { # $1 = path of the bare repository to create
  local workflow answer
  git init -q --bare -b main "$1"
  post() { curl -sf -X POST -H "$cookie" -H "X-CSRF-Token: $csrf" -H 'Content-Type: application/json' -d "$2" "$url$1"; }
  project=$(post /api/projects "{\"name\":\"bench\",\"repo_url\":\"$1\"}" | sed 's/.*"id":"\([^"]*\)".*/\1/')
  workflow=$(post /api/workflows "{\"project_id\":\"$project\",\"name\":\"double\",
    \"nodes\":[{\"key\":\"double\",\"kind\":\"transform\",\"config\":{\"mapping\":{\"ok\":\"true\",\"n\":\"input.n * 2\"}}},
               {\"key\":\"respond\",\"kind\":\"end\",\"config\":{\"output\":\"nodes.double.output\"}}],
    \"edges\":[{\"source\":\"double\",\"target\":\"respond\"}]}" | sed 's/^{"id":"\([^"]*\)".*/\1/')
  hook=$(post "/api/workflows/$workflow/triggers" '{"kind":"webhook","config":{"response_mode":"sync"}}' |
    sed 's/.*"receiver_url":"\([^"]*\)".*/\1/')
  answer=$(curl -sf -X POST -H 'Content-Type: application/json' -d '{"n":21}' "$url$hook")
  [ "$answer" = '{"n":42,"ok":true}' ] || { echo "unexpected answer: $answer" >&2; exit 1; }
}
