#!/usr/bin/env bash
# Starts a sandbox for a project (the current directory by default) and
# prints how to watch it, making the machine ready first (scripts/dev-env.sh,
# which also builds bin/pilot-sandbox).
# Any arguments are passed to 'pilot-sandbox', default: start --project "$PWD".
set -euo pipefail
here="$PWD"
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
scripts/dev-env.sh
cd "$here"
if [ "$#" -eq 0 ]; then
  set -- start --project "$here"
fi
exec "$repo/bin/pilot-sandbox" "$@"
