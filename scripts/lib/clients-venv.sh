# Sourced (not run) by scripts/check-openapi.sh and scripts/test-clients.sh: a Python venv
# with the pinned tools of the OpenAPI check and the Python client's tests, in a cache dir
# (TASKLANE_TOOLS_DIR, default ~/.cache/tasklane-tools), rebuilt when the pins change.
#
#   ensure_clients_venv   sets CLIENTS_VENV (its directory); returns non-zero when it
#                         cannot install
#
# openapi-python-client formats what it generates with ruff, so ruff is pinned too: the
# committed client (clients/python/tasklane/_http) is byte-for-byte what these pins
# generate, and a different ruff would show as a diff.

CLIENTS_PINS=(
    "openapi-spec-validator==0.9.0"
    "openapi-python-client==0.29.1"
    "ruff==0.17.6"
    "httpx==0.28.1"
    "attrs==26.1.0"
    "python-dateutil==4.0.0"
    "pytest==9.2.0"
    "psycopg[binary]==3.3.9"
)

ensure_clients_venv() {
    local tools="${TASKLANE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tasklane-tools}"
    CLIENTS_VENV="$tools/clients-venv"
    if [[ -x "$CLIENTS_VENV/bin/python" && "$(cat "$CLIENTS_VENV/.pins" 2>/dev/null)" == "${CLIENTS_PINS[*]}" ]]; then
        return 0
    fi
    echo "installing the pinned Python tools into $CLIENTS_VENV (once, and when the pins change)" >&2
    rm -rf "$CLIENTS_VENV"
    mkdir -p "$tools" || return 1
    python3 -m venv "$CLIENTS_VENV" || return 1
    "$CLIENTS_VENV/bin/pip" install --quiet --disable-pip-version-check "${CLIENTS_PINS[@]}" || return 1
    echo "${CLIENTS_PINS[*]}" >"$CLIENTS_VENV/.pins"
}
