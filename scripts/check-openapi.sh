#!/usr/bin/env bash
# The OpenAPI document as clients see it: dumps it from the binary (`tasklane openapi`),
# validates it as OpenAPI 3.1 (openapi-spec-validator), generates the Python HTTP client
# from it (openapi-python-client), failing on any warning the generator prints, and
# compares the result with the committed client in clients/python/tasklane/_http: a
# route or schema changed without regenerating the client fails here.
#
#   bash scripts/check-openapi.sh          check (CI)
#   bash scripts/check-openapi.sh --bless  regenerate clients/python/tasklane/_http and
#                                          clients/typescript/src/schema.d.ts's source
#                                          document (clients/openapi.json)
#
# Installs its pinned tools into a venv in a cache dir (scripts/lib/clients-venv.sh).
# Needs python3 (venv, pip) and cargo, unless TASKLANE_BIN names a built binary.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/clients-venv.sh

BLESS=0
if [[ "${1:-}" == "--bless" ]]; then BLESS=1; fi

ensure_clients_venv
if [[ -z "${TASKLANE_BIN:-}" ]]; then
    cargo build --locked --quiet --bin tasklane
    TASKLANE_BIN=./target/debug/tasklane
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

"$TASKLANE_BIN" openapi >"$WORK/openapi.json"
"$CLIENTS_VENV/bin/openapi-spec-validator" "$WORK/openapi.json"

# The generator formats with ruff from PATH: the venv's pinned one.
(
    cd "$WORK"
    PATH="$CLIENTS_VENV/bin:$PATH" openapi-python-client generate \
        --path openapi.json --meta none --output-path http \
        --config "$OLDPWD/clients/python/generator.yaml" >generate.log 2>&1
) || { cat "$WORK/generate.log"; echo "openapi-python-client failed" >&2; exit 1; }
if grep -qiE "warning|error" "$WORK/generate.log"; then
    cat "$WORK/generate.log"
    echo "openapi-python-client warned: the document is not clean" >&2
    exit 1
fi
rm -rf "$WORK/http/.ruff_cache"

if [[ "$BLESS" == 1 ]]; then
    rm -rf clients/python/tasklane/_http
    cp -r "$WORK/http" clients/python/tasklane/_http
    cp "$WORK/openapi.json" clients/openapi.json
    echo "regenerated clients/python/tasklane/_http and clients/openapi.json"
    exit 0
fi
status=0
diff -r clients/python/tasklane/_http "$WORK/http" >"$WORK/client.diff" || status=$?
diff clients/openapi.json "$WORK/openapi.json" >>"$WORK/client.diff" || status=$?
if [[ "$status" != 0 ]]; then
    head -100 "$WORK/client.diff"
    echo "the committed clients differ from the document: run bash scripts/check-openapi.sh --bless" >&2
    exit 1
fi
echo "openapi: valid, the Python client generates without warnings and matches"
