#!/usr/bin/env bash
# Runs every test of pilot-sandbox: unit tests, and integration tests that
# start real sandboxes on a real Docker engine (scripts/dev-env.sh provides
# one). Without an engine the integration tests skip, unless
# PILOT_REQUIRE_DOCKER=1 (as .ci/run sets), where they fail instead.
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
