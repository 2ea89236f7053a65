#!/usr/bin/env bash
# Runs every test of pilot-sandbox: unit tests, and integration tests that
# start real sandboxes on a real Docker engine (scripts/dev-env.sh provides
# one). Without an engine the integration tests skip, unless
# PILOT_REQUIRE_DOCKER=1 (as .ci/run sets), where they fail instead.
# The desktop agent's Python tests run in the sandbox image through go test,
# and those that need no X server once more on the host's python3.
#
# Then ui/: npm ci (from the npm registry, with the committed
# package-lock.json), tsc --noEmit over its JSDoc types (the client, the
# panel and the sandbox's viewer page), and its node --test suite against
# the binary built here: the client and vscode-jsonrpc against
# `pilot-sandbox serve` over stdio, the MCP TypeScript SDK's client against
# `pilot-sandbox mcp`, the client's WebSocket side against
# `pilot-sandbox ui`, and the panel and the viewer in Chromium (installed
# with apt-get when missing and root), with screenshots in ui/test-output/.
#
# Extra arguments go to go test (e.g. -run Lifecycle -v); with them, the
# ui/ tests are left out unless PILOT_UI_TESTS=1.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! scripts/dev-env.sh --tests; then
  if [ "${PILOT_REQUIRE_DOCKER:-}" = 1 ]; then
    echo "test: no Docker engine, and PILOT_REQUIRE_DOCKER=1" >&2
    exit 1
  fi
  echo "test: no Docker engine: tests that need one will be skipped" >&2
fi

# Each scope of the tests makes a bridge network, and Docker has some 30
# address pools for them by default: the networks earlier runs left (a
# test killed before its cleanup) are removed first. Docker refuses to
# remove one a container still uses.
prune_test_networks() {
  command -v docker >/dev/null && docker info >/dev/null 2>&1 || return 0
  docker network ls --filter label=pilot.sandbox --format '{{.Name}} {{.Label "pilot.sandbox"}}' |
    awk '$2 ~ /^test/ {print $1}' | xargs -r -n1 docker network rm >/dev/null 2>&1 || true
}
prune_test_networks

# The sandboxes tests make carry pilot.sandbox=test, and every sidecar the
# tests run sees only those: a user's real sandboxes and projects are left
# alone, whatever runs beside the tests.
export PILOT_SCOPE=test
# Projects that name no sandbox.image get the desktop image in tests (the
# product's default is the browser image, 424 MB more): only the browser
# tests, which ask for it in their settings, build and run Chromium.
export PILOT_DEFAULT_IMAGE="${PILOT_DEFAULT_IMAGE:-desktop}"

# ui/'s packages first: the browser image's test drives the sandbox's
# Chromium with ui/'s playwright-core and puppeteer-core.
if command -v npm >/dev/null; then
  (cd ui && npm ci --no-audit --no-fund --loglevel=error)
fi

go vet ./...
# A failure of the Go tests is reported at the end: the ui/ tests run
# anyway, so that one failure does not hide the state of the other half.
go_failed=0
go test -count=1 -timeout 40m "$@" ./... || go_failed=1
# The race detector over the packages with concurrency, on their fakes
# (-short runs no sandbox, so this takes seconds, not the suite again).
# Then the CLI under a load of a hundred busy processes, alone: beside
# the other packages its load starved their sandboxes' starts.
if [ "$#" -eq 0 ]; then
  go test -count=1 -race -short ./service/... ./rpc/... ./desktop/... ./projectfs/... ./engine/... ./tools/...
  PILOT_LOAD_TEST=1 go test -count=1 -timeout 10m -run '^TestTheCLIUnderLoad$' ./cmd/pilot-sandbox || go_failed=1
fi

# A test that paused a sandbox must unpause it (t.Cleanup): a paused
# container racing an exec start wedges this engine (docs/sandbox.md,
# Pause). One left paused fails the run, named, and is thawed and removed
# so that it wedges nothing after.
paused_left() {
  command -v docker >/dev/null && docker info >/dev/null 2>&1 || return 0
  local left
  left="$(docker ps --filter status=paused --format '{{.ID}} {{.Names}} {{.Label "pilot.sandbox"}}' | awk '$3 ~ /^test/')"
  [ -z "$left" ] && return 0
  echo "test: containers of the tests were left paused:" >&2
  echo "$left" >&2
  echo "$left" | awk '{print $1}' | xargs -r docker unpause >/dev/null 2>&1 || true
  echo "$left" | awk '{print $1}' | xargs -r docker rm -f >/dev/null 2>&1 || true
  return 1
}
paused_left || go_failed=1

# The desktop agent's Python tests: go test ran them all in the sandbox image
# (resources/agent_test.go); here the ones that need no X server run on this
# machine's python3 too, when it can load the X libraries the agent imports.
if command -v python3 >/dev/null &&
  python3 -c 'import ctypes; ctypes.CDLL("libX11.so.6"); ctypes.CDLL("libXtst.so.6")' 2>/dev/null; then
  (cd resources/agent && python3 -B -m unittest)
else
  echo "test: no python3 with libX11 and libXtst here: the agent's Python tests ran in the sandbox image only" >&2
fi

# The network proxy's Python tests need no X server: they run here too
# (resources/netproxy_test.go ran them in the image).
if command -v python3 >/dev/null; then
  (cd resources/pilotnet && python3 -B -m unittest)
fi

# The workspace program's and the task runner's tests need git, /proc and
# PR_SET_CHILD_SUBREAPER (Linux): they run here when the machine has them
# (resources/programs_test.go ran them in the image).
if command -v python3 >/dev/null && command -v git >/dev/null && [ -d /proc/self ]; then
  (cd resources/workspace && python3 -B -m unittest)
  (cd resources/tasks && python3 -B -m unittest)
fi

if [ "$#" -gt 0 ] && [ "${PILOT_UI_TESTS:-}" != 1 ]; then
  exit "$go_failed"
fi

if ! command -v npm >/dev/null; then
  echo "test: npm is missing: install Node.js 20 or later to test ui/" >&2
  exit 1
fi
# The panel's browser tests drive Debian's Chromium through playwright-core
# (Playwright's own browser download does not work everywhere).
if [ -z "${PILOT_CHROMIUM:-}" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "test: installing chromium for the panel's browser tests" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "test: no Chromium: install it (apt-get install chromium) for the panel's browser tests" >&2
  fi
fi

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/pilot-sandbox" ./cmd/pilot-sandbox
cd ui
npx tsc --noEmit -p .
PILOT_SANDBOX_BIN="$bin/pilot-sandbox" npm test
paused_left || go_failed=1
if [ "$go_failed" = 1 ]; then
  echo "test: the Go tests failed (above); the ui/ tests ran anyway" >&2
  exit 1
fi
