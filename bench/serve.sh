# Sourced by the bench scripts: serve_signed_in ENGINE PORT starts the server
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
