#!/usr/bin/env bash
# Schema-driven fuzzing of the HTTP API: starts `tasklane serve` on a fresh database,
# creates a token with every application permission, and runs schemathesis over
# /openapi.json, failing on any 5xx (`not_a_server_error`). Bounded: FUZZ_EXAMPLES
# examples per operation (default 100); FUZZ_SEED makes a run repeatable (CI pins one);
# FUZZ_PHASES picks schemathesis' phases (default all but stateful). CI runs the
# `examples,coverage` phases only (every operation at its boundaries, about a minute):
# the random `fuzzing` phase keeps drawing long-poll values (`?wait=` up to 60 s,
# `wait_seconds` up to 30 s) and can take far longer, so it is for runs by hand.
#
# Uses DATABASE_URL (default the local server) when it answers; otherwise it starts a
# private throwaway cluster with the initdb/pg_ctl found on the machine, as the tests do.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVER_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
PRIVATE_PG=""

# initdb and postgres refuse root: run them as postgres (or nobody) when we are root.
as_pg_user() {
    if [[ "$(id -u)" == 0 ]]; then
        local user=postgres
        id -u postgres >/dev/null 2>&1 || user=nobody
        runuser -u "$user" -- "$@"
    else
        "$@"
    fi
}

start_private_cluster() {
    local bin port
    bin="$(dirname "$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")"
    PRIVATE_PG="$(mktemp -d /tmp/tasklane-fuzz-pg.XXXXXX)"
    [[ "$(id -u)" == 0 ]] && chown "$(id -u postgres >/dev/null 2>&1 && echo postgres || echo nobody)" "$PRIVATE_PG"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    as_pg_user "$bin/initdb" -D "$PRIVATE_PG/data" -A trust -U postgres --no-sync -E UTF8 --locale=C >/dev/null
    as_pg_user "$bin/pg_ctl" -w -D "$PRIVATE_PG/data" -l "$PRIVATE_PG/log" \
        -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$PRIVATE_PG -c fsync=off" start >/dev/null
    PG_BIN="$bin"
    SERVER_URL="postgres://postgres@127.0.0.1:$port/postgres"
}

EXAMPLES="${FUZZ_EXAMPLES:-100}"
PORT="${FUZZ_PORT:-18431}"
DB="tasklane_fuzz_$$"
WORK="$(mktemp -d)"

if ! command -v schemathesis >/dev/null 2>&1; then
    python3 -m pip install --quiet 'schemathesis>=4,<5'
fi
cargo build --locked --quiet --bin tasklane

cleanup() {
    if [[ -n "${SERVE_PID:-}" ]]; then kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; fi
    psql "$SERVER_URL" -q -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
    if [[ -n "$PRIVATE_PG" ]]; then
        as_pg_user "$PG_BIN/pg_ctl" -D "$PRIVATE_PG/data" -m immediate stop >/dev/null 2>&1 || true
        rm -rf "$PRIVATE_PG"
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

if ! psql "$SERVER_URL" -qtAc 'SELECT 1' >/dev/null 2>&1; then
    start_private_cluster
fi
DB_URL="${SERVER_URL%/*}/$DB"

psql "$SERVER_URL" -q -c "CREATE DATABASE $DB" >/dev/null
# The demo task types, the same file `tasklane dev` and the chart's default use.
DATABASE_URL="$DB_URL" TASKLANE_LOG=warn ./target/debug/tasklane serve \
    --listen "127.0.0.1:$PORT" --task-types demo/task-types.toml 2>"$WORK/serve.log" &
SERVE_PID=$!
for _ in $(seq 1 200); do
    if curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then break; fi
    sleep 0.1
done
curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null

TOKEN="$(DATABASE_URL="$DB_URL" ./target/debug/tasklane token create --app fuzz \
    --perm submit,read,cancel,release,delete,work --name fuzz | tail -n 1)"

seed=()
if [[ -n "${FUZZ_SEED:-}" ]]; then seed=(--seed "$FUZZ_SEED"); fi

status=0
schemathesis run "${seed[@]}" "http://127.0.0.1:$PORT/openapi.json" \
    --phases "${FUZZ_PHASES:-examples,coverage,fuzzing}" \
    --checks not_a_server_error \
    --max-examples "$EXAMPLES" \
    --header "Authorization: Bearer $TOKEN" \
    --request-timeout 70 \
    --no-color || status=$?

if grep -q "ERROR\|panicked" "$WORK/serve.log"; then
    echo "--- server errors during the fuzz run:"
    grep "ERROR\|panicked" "$WORK/serve.log" | head -50
    status=1
fi
exit $status
