#!/usr/bin/env bash
# Tests of the client libraries (clients/python, clients/typescript) against a live
# `tasklane serve` (task types clients/testdata/task-types.toml) on a fresh database:
# run/wait/release/delete over HTTP, the SQL API in the application's transaction
# (a rollback leaves no task), the Python Worker (cancellation reaches the handler, a
# lost lease is raised, a worker killed mid-task loses its lease and another takes the
# task), retries only as Retry-After says.
#
# Uses DATABASE_URL (default the local server) when it answers, else a private
# throwaway cluster (scripts/lib/private-pg.sh). Installs its own tools: the pinned
# Python venv (scripts/lib/clients-venv.sh) and the TypeScript packages from
# clients/typescript/package-lock.json (npm ci). Needs python3, node >= 18 with npm,
# cargo. Every wait is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVER_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
source scripts/lib/private-pg.sh
source scripts/lib/clients-venv.sh

PORT="${CLIENTS_PORT:-18441}"
DB="tasklane_clients_$$"
WORK="$(mktemp -d)"

cleanup() {
    if [[ -n "${SERVE_PID:-}" ]]; then kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; fi
    psql "$SERVER_URL" -q -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
    stop_private_cluster
    rm -rf "$WORK"
}
trap cleanup EXIT

ensure_clients_venv
(cd clients/typescript && npm ci --silent --no-audit --no-fund >/dev/null)
# The committed TypeScript schema is what openapi-typescript makes of clients/openapi.json
# (scripts/check-openapi.sh checks that document against the binary's).
(cd clients/typescript && npx openapi-typescript ../openapi.json -o "$WORK/schema.ts" >/dev/null 2>&1)
if ! diff -q clients/typescript/src/schema.ts "$WORK/schema.ts" >/dev/null; then
    echo "clients/typescript/src/schema.ts is stale: run (cd clients/typescript && npm run generate)" >&2
    exit 1
fi
cargo build --locked --quiet --bin tasklane

if ! psql "$SERVER_URL" -qtAc 'SELECT 1' >/dev/null 2>&1; then
    start_private_cluster
fi
DB_URL="${SERVER_URL%/*}/$DB"
psql "$SERVER_URL" -q -c "CREATE DATABASE $DB" >/dev/null

# A fast rescuer, so a killed worker's expired lease is noticed within a second.
DATABASE_URL="$DB_URL" TASKLANE_LOG=warn TASKLANE_RESCUE_INTERVAL_MS=200 \
    ./target/debug/tasklane serve --listen "127.0.0.1:$PORT" \
    --task-types clients/testdata/task-types.toml 2>"$WORK/serve.log" &
SERVE_PID=$!
for _ in $(seq 1 300); do
    if curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then break; fi
    sleep 0.1
done
curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null

export TASKLANE_URL="http://127.0.0.1:$PORT"
export TASKLANE_APP=clients
export TASKLANE_DATABASE_URL="$DB_URL"
TASKLANE_TOKEN="$(DATABASE_URL="$DB_URL" ./target/debug/tasklane token create --app clients \
    --perm submit,read,cancel,release,delete,work --name clients | tail -n 1)"
export TASKLANE_TOKEN

status=0
echo "--- Python client (clients/python)"
(cd clients/python && "$CLIENTS_VENV/bin/python" -m pytest -q -p no:cacheprovider) || status=1
echo "--- TypeScript client (clients/typescript)"
(cd clients/typescript && npm test --silent) || status=1

if grep -q "ERROR\|panicked" "$WORK/serve.log"; then
    echo "--- server errors during the client tests:"
    grep "ERROR\|panicked" "$WORK/serve.log" | head -50
    status=1
fi
exit $status
