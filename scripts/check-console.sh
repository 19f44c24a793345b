#!/usr/bin/env bash
# Browser tests of the web console (/ui): Debian's chromium driven by playwright-core
# (npm, pinned by scripts/console/package-lock.json) against a real `tasklane serve`
# on a fresh database with the demo task types. The tests are
# scripts/console/console.test.mjs (node's test runner); each page's screenshot lands
# in CONSOLE_SHOTS (default target/console-screenshots), whose path is printed.
#
# Needs node/npm and chromium (CHROMIUM, default the one on PATH: Debian's package
# `chromium`; .ci/run installs it when missing). Uses DATABASE_URL (default the local
# server) when it answers; otherwise it starts a private throwaway cluster, as the
# tests do. Also checks that the vendored library (ui/vendor) is the locked package's.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVER_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
# start_private_cluster / stop_private_cluster (shared with the other scripts).
source scripts/lib/private-pg.sh

PORT="${CONSOLE_PORT:-18432}"
DB="tasklane_console_$$"
WORK="$(mktemp -d)"
SHOTS="${CONSOLE_SHOTS:-$PWD/target/console-screenshots}"
CHROMIUM="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
if [[ -z "$CHROMIUM" ]]; then
    echo "chromium is missing: install Debian's chromium package" >&2
    exit 1
fi

(cd scripts/console && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
if ! cmp -s scripts/console/node_modules/htm/preact/standalone.module.js ui/vendor/htm-preact-standalone.mjs; then
    echo "ui/vendor/htm-preact-standalone.mjs differs from the locked htm package (see ui/vendor/README.md)" >&2
    exit 1
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

DATABASE_URL="$DB_URL" TASKLANE_LOG=warn ./target/debug/tasklane serve \
    --listen "127.0.0.1:$PORT" --task-types demo/task-types.toml 2>"$WORK/serve.log" &
SERVE_PID=$!
for _ in $(seq 1 200); do
    if curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then break; fi
    sleep 0.1
done
curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null

token() { DATABASE_URL="$DB_URL" ./target/debug/tasklane token create "$@" | tail -n 1; }
ADMIN_TOKEN="$(token --app console --perm submit,read,cancel,release,delete,admin,work,webhooks --name console-admin)"
SCOPE_TOKEN="$(token --app console --scope mailbox-9 --perm read,cancel --name console-scope)"

rm -rf "$SHOTS"
mkdir -p "$SHOTS"
status=0
CONSOLE_URL="http://127.0.0.1:$PORT" CONSOLE_DATABASE_URL="$DB_URL" ADMIN_TOKEN="$ADMIN_TOKEN" SCOPE_TOKEN="$SCOPE_TOKEN" \
    CHROMIUM="$CHROMIUM" CONSOLE_SHOTS="$SHOTS" \
    node --test --test-concurrency=1 --test-reporter=spec scripts/console/console.test.mjs || status=$?
echo "console screenshots: $SHOTS"
ls "$SHOTS"

if grep -q "ERROR\|panicked" "$WORK/serve.log"; then
    echo "--- server errors during the console tests:"
    grep "ERROR\|panicked" "$WORK/serve.log" | head -50
    status=1
fi
exit $status
