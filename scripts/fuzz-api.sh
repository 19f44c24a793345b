#!/usr/bin/env bash
# Schema-driven fuzzing of the HTTP API: starts `tasklane serve` on a fresh database,
# creates a token with every application permission, and runs schemathesis over
# /openapi.json, failing on any 5xx (`not_a_server_error`). Bounded: FUZZ_EXAMPLES
# examples per operation (default 100); FUZZ_SEED makes a run repeatable (CI pins one);
# FUZZ_PHASES picks schemathesis' phases (default all but stateful). CI runs the
# `examples,coverage` phases only (every operation at its boundaries). The server holds
# long polls 1 s at most (`--max-wait-seconds 1`): the phases keep drawing long-poll
# values (`?wait=` up to 60 s, `wait_seconds` up to 30 s), and held in full those made
# the coverage phase take 386 s of waiting.
#
# Uses DATABASE_URL (default the local server) when it answers; otherwise it starts a
# private throwaway cluster with the initdb/pg_ctl found on the machine, as the tests do.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVER_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
# start_private_cluster / stop_private_cluster (shared with scripts/check-helm.sh).
source scripts/lib/private-pg.sh

EXAMPLES="${FUZZ_EXAMPLES:-100}"
PORT="${FUZZ_PORT:-18431}"
DB="tasklane_fuzz_$$"
WORK="$(mktemp -d)"

if ! command -v schemathesis >/dev/null 2>&1; then
    echo "installing schemathesis from PyPI (once)" >&2
    python3 -m pip install --quiet 'schemathesis>=4,<5'
fi
cargo build --locked --quiet --bin tasklane

cleanup() {
    if [[ -n "${SERVE_PID:-}" ]]; then kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; fi
    psql "$SERVER_URL" -q -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
    stop_private_cluster
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
    --listen "127.0.0.1:$PORT" --task-types demo/task-types.toml --max-wait-seconds 1 \
    2>"$WORK/serve.log" &
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
