#!/usr/bin/env bash
# Installs the peers the drain bench runs beside tasklane (exact versions from
# package-lock.json) into benches/peers/node_modules. Needs npm; brings its own Node 22.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
./node_modules/.bin/node --version
