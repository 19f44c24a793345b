#!/usr/bin/env bash
# Tests of the client libraries (clients/python, clients/typescript) against a live
# `tasklane serve` (task types clients/testdata/task-types.toml) on a fresh database:
# run/wait/release/delete over HTTP, the SQL API in the application's transaction
# (a rollback leaves no task), the Python Worker (cancellation reaches the handler, a
# lost lease is raised, a worker killed mid-task loses its lease and another takes the
# task, its live output reset for the next attempt on a second replica that serves the
# API alone), retries only as Retry-After says. Then the quick starts of docs/clients.md, as
# written, from the libraries installed as that doc says in a fresh directory outside
# the repository: TypeScript from the folder and from an `npm pack` tarball, Python by
# pip into a fresh venv (which must leave nothing in clients/python).
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
OBSERVER_PORT="$((PORT + 1))"
DB="tasklane_clients_$$"
WORK="$(mktemp -d)"

cleanup() {
    local pid
    for pid in ${SERVE_PID:-} ${OBSERVER_PID:-}; do
        kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
    done
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
# wait_ready PORT: bounded.
wait_ready() {
    for _ in $(seq 1 300); do
        if curl -fsS "http://127.0.0.1:$1/readyz" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    curl -fsS "http://127.0.0.1:$1/readyz" >/dev/null
}
wait_ready "$PORT"
# A second replica serving the API alone, where observers follow what the first one's
# workers publish; it starts on the schema the first one migrated.
DATABASE_URL="$DB_URL" TASKLANE_LOG=warn \
    ./target/debug/tasklane serve --no-migrate --roles api --listen "127.0.0.1:$OBSERVER_PORT" \
    --task-types clients/testdata/task-types.toml 2>"$WORK/observer.log" &
OBSERVER_PID=$!
wait_ready "$OBSERVER_PORT"

export TASKLANE_URL="http://127.0.0.1:$PORT"
export TASKLANE_OBSERVER_URL="http://127.0.0.1:$OBSERVER_PORT"
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

# The quick starts of docs/clients.md as a newcomer runs them: each library installed the
# way the doc says into a fresh directory outside the repository (TypeScript from a fresh
# copy of the folder, as a clone has it, and from an `npm pack` tarball; Python into a
# fresh venv), then the doc's code blocks as written, but for the server's URL and the
# token, against this serve. The Python run and the TypeScript run from the folder share
# one app, as a newcomer's runs share `tasklane dev`'s token; the run from the tarball,
# which repeats the TypeScript one, has its own (the examples fence their scope at the
# end). The SQL examples insert into an `orders` table.
QS="$WORK/quickstart"
ROOT="$PWD"
mkdir -p "$QS"
doc_blocks() { python3 "$ROOT/scripts/lib/doc-blocks.py" "$ROOT/docs/clients.md" "$@"; }
qs_token() {
    DATABASE_URL="$DB_URL" ./target/debug/tasklane token create --app "$1" \
        --perm submit,read,cancel,release,delete,work --name "$1" | tail -n 1
}
# run_logged NAME CMD...: CMD's output in $QS/NAME.log, shown when it fails.
run_logged() {
    local name="$1"; shift
    if "$@" >"$QS/$name.log" 2>&1; then return 0; fi
    echo "$name failed:"; tail -n 40 "$QS/$name.log"; return 1
}
# expect_output NAME TEXT...: the quick start's output names every TEXT.
expect_output() {
    local name="$1" text; shift
    for text in "$@"; do
        if ! grep -qF -- "$text" "$QS/$name.log"; then
            echo "$name: no \"$text\" in its output:"; cat "$QS/$name.log"; return 1
        fi
    done
}
psql "$DB_URL" -q -c "CREATE TABLE orders (id int)"
QS_TOKEN="$(qs_token quickstart)"

quickstart_python() {
    local before psycopg
    before="$(git status --porcelain --ignored -- clients/python)"
    python3 -m venv "$QS/venv" || return 1
    # The doc's install command, run from the repository's root with the venv's pip.
    run_logged python-install env PATH="$QS/venv/bin:$PATH" bash -euc "$(doc_blocks 'Python quick start' sh)" || return 1
    if [[ "$(git status --porcelain --ignored -- clients/python)" != "$before" ]]; then
        echo "pip install ./clients/python left files in the tree:"
        diff <(echo "$before") <(git status --porcelain --ignored -- clients/python)
        return 1
    fi
    # The SQL example's connection (`conn`), which the doc leaves to the application.
    psycopg="$(printf '%s\n' "${CLIENTS_PINS[@]}" | grep '^psycopg')"
    run_logged python-psycopg "$QS/venv/bin/pip" install --quiet --disable-pip-version-check "$psycopg" || return 1
    { echo 'import os, psycopg'
      echo 'conn = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)'
      doc_blocks 'Python quick start' python "$TASKLANE_URL" "$QS_TOKEN"
    } >"$QS/quickstart.py" || return 1
    # From the fresh directory, so `import tasklane` is the installed package.
    (cd "$QS" && run_logged python-quickstart env DATABASE_URL="$DB_URL" timeout 300 "$QS/venv/bin/python" quickstart.py) || return 1
    expect_output python-quickstart "{'text': '...'}" "task.succeeded" "idempotency_conflict 409"
}

# quickstart_typescript NAME APP TOKEN: the doc's TypeScript blocks, type-checked with
# the package's pinned compiler and run with node in APP, where tasklane is installed.
quickstart_typescript() {
    local name="$1" app="$2" token="$3" tsc="$PWD/clients/typescript/node_modules/typescript/bin/tsc"
    doc_blocks 'TypeScript quick start' ts "$TASKLANE_URL" "$token" >"$app/quickstart.ts" || return 1
    run_logged "$name-tsc" node "$tsc" --strict --target es2022 --module nodenext --moduleResolution nodenext \
        --skipLibCheck --typeRoots "$PWD/clients/typescript/node_modules/@types" --types node "$app/quickstart.ts" || return 1
    (cd "$app" && run_logged "$name-quickstart" env DATABASE_URL="$DB_URL" timeout 300 node quickstart.js) || return 1
    expect_output "$name-quickstart" "{ text: '...' }" "task.succeeded" "idempotency_conflict 409"
}

quickstart_typescript_installs() {
    local app="$QS/typescript-folder" tarball="$QS/typescript-tarball" postgres
    # A clone's copy of the folder: what git has, no node_modules, no dist.
    mkdir -p "$app" "$tarball"
    git ls-files -c -- clients/typescript | tar -cf - -T - | tar -xf - -C "$app" || return 1
    # The doc's "postgres or pg for the SQL API", at the version the package tests with.
    postgres="postgres@$(node -p 'require("./clients/typescript/package.json").devDependencies.postgres')" || return 1
    [[ $postgres == postgres@?* ]] || return 1
    echo '{ "name": "quickstart", "private": true, "type": "module" }' | tee "$app/package.json" >"$tarball/package.json"
    (cd "$app" && run_logged typescript-folder-install bash -euc "$(doc_blocks 'TypeScript quick start' sh)") || return 1
    (cd "$app" && run_logged typescript-folder-postgres npm install --no-audit --no-fund "$postgres") || return 1
    quickstart_typescript typescript-folder "$app" "$QS_TOKEN" || return 1
    (cd "$app/clients/typescript" && run_logged typescript-pack npm pack --pack-destination "$QS") || return 1
    (cd "$tarball" && run_logged typescript-tarball-install npm install --no-audit --no-fund "$QS"/tasklane-*.tgz "$postgres") || return 1
    quickstart_typescript typescript-tarball "$tarball" "$(qs_token quickstart-tarball)"
}

echo "--- Python quick start (docs/clients.md) from pip install, in a fresh venv"
quickstart_python || status=1
echo "--- TypeScript quick start (docs/clients.md) from npm install of the folder and of npm pack"
quickstart_typescript_installs || status=1
orders="$(psql "$DB_URL" -qtAc "SELECT count(*) FROM orders")"
if [[ "$orders" != 3 ]]; then
    echo "the SQL examples of the three quick start runs committed $orders orders, not 3"
    status=1
fi

for log in serve observer; do
    if grep -q "ERROR\|panicked" "$WORK/$log.log"; then
        echo "--- server errors during the client tests ($log):"
        grep "ERROR\|panicked" "$WORK/$log.log" | head -50
        status=1
    fi
done
exit $status
