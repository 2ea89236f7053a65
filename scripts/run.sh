#!/usr/bin/env bash
# Starts a sandbox for a project (the current directory by default) and
# prints how to watch it, making the machine ready first (scripts/dev-env.sh).
# Any arguments are passed to 'pilot-sandbox', default: start --project "$PWD".
set -euo pipefail
here="$PWD"
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
scripts/dev-env.sh
mkdir -p bin
go build -o bin/pilot-sandbox ./cmd/pilot-sandbox
cd "$here"
if [ "$#" -eq 0 ]; then
  set -- start --project "$here"
fi
exec "$repo/bin/pilot-sandbox" "$@"
