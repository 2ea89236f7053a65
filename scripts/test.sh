#!/usr/bin/env bash
# Runs every test of pilot-sandbox: unit tests, and integration tests that
# start real sandboxes on a real Docker engine (scripts/dev-env.sh provides
# one). Without an engine the integration tests skip, unless
# PILOT_REQUIRE_DOCKER=1 (as .ci/run sets), where they fail instead.
#
# Then the JavaScript client in ui/: npm ci (from the npm registry, with the
# committed package-lock.json), tsc --noEmit over its JSDoc types, and its
# node --test suite against the binaries built here: the client and
# vscode-jsonrpc against `pilot-sandbox serve` over stdio, and the client's
# WebSocket side against `pilot-sandbox ui`.
#
# Extra arguments go to go test (e.g. -run Lifecycle -v); with them, the
# ui/ tests are left out unless PILOT_UI_TESTS=1.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! scripts/dev-env.sh; then
  if [ "${PILOT_REQUIRE_DOCKER:-}" = 1 ]; then
    echo "test: no Docker engine, and PILOT_REQUIRE_DOCKER=1" >&2
    exit 1
  fi
  echo "test: no Docker engine: tests that need one will be skipped" >&2
fi

go vet ./...
go test -count=1 -timeout 40m "$@" ./...

if [ "$#" -gt 0 ] && [ "${PILOT_UI_TESTS:-}" != 1 ]; then
  exit 0
fi

if ! command -v npm >/dev/null; then
  echo "test: npm is missing: install Node.js 20 or later to test ui/" >&2
  exit 1
fi
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/pilot-sandbox" ./cmd/pilot-sandbox
cd ui
npm ci --no-audit --no-fund --loglevel=error
npx tsc --noEmit -p .
PILOT_SANDBOX_BIN="$bin/pilot-sandbox" npm test
