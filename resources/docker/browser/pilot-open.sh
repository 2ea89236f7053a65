#!/bin/bash
# pilot-open [URL]: opens URL in Chromium on the sandbox desktop and returns
# at once. A running Chromium gets it as a new tab; otherwise Chromium starts,
# maximized, with its profile in the sandbox user's home (cookies and logins
# survive a stop and start) and its DevTools port on 127.0.0.1:9222 inside
# the container, which the sidecar relays for sandbox/browser. Also installed
# as xdg-open and x-www-browser.
#
# Chromium keeps its own sandbox: the sidecar gives browser sandboxes a
# seccomp profile that lets it start (see the README).
set -euo pipefail

profile="${PILOT_CHROMIUM_PROFILE:-$HOME/.config/pilot-chromium}"
port="${PILOT_CHROMIUM_PORT:-9222}"
url="${1:-about:blank}"
devtools=
if [ "$url" = --devtools ]; then
  # For the sidecar (sandbox/browser): start Chromium if it does not run,
  # wait for its DevTools port, and print the browser's WebSocket path.
  devtools=1 url=about:blank
fi

running() { pgrep -u "$(id -u)" -x chromium >/dev/null 2>&1; }

# A stop kills Chromium without a clean exit: mark the last session as ended
# normally, or it greets the next start with a "restore pages" bubble; and
# drop its single-instance lock, which names a process of the old container
# (a new one may have its number and look like a running Chromium).
tidy_profile() {
  rm -f "$profile"/Singleton{Lock,Socket,Cookie}
  local prefs="$profile/Default/Preferences"
  if [ -f "$prefs" ]; then
    sed -i -e 's/"exit_type":"[A-Za-z]*"/"exit_type":"Normal"/g' \
           -e 's/"exited_cleanly":false/"exited_cleanly":true/g' "$prefs"
  fi
}

flags=(
  --user-data-dir="$profile"
  --remote-debugging-address=127.0.0.1
  --remote-debugging-port="$port"
  --start-maximized
  --no-first-run
  --no-default-browser-check
  --password-store=basic
  --disable-component-update
  --disable-background-networking
  --disable-features=Translate,MediaRouter
  --hide-crash-restore-bubble
  --noerrdialogs
)

devtools_path() {
  python3 - "$port" <<'PY'
import json, sys, time, urllib.request
for _ in range(150):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/json/version", timeout=2) as r:
            url = json.load(r)["webSocketDebuggerUrl"]
        print(url[url.index("/devtools/"):])
        sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit("chromium's DevTools port does not answer")
PY
}

if [ -n "$devtools" ] && running; then
  devtools_path; exit
fi
if running; then
  # The running Chromium takes the URL through its single-instance socket
  # and opens a tab; this process then exits.
  exec chromium "${flags[@]}" "$url" >/dev/null 2>&1
fi
mkdir -p "$profile"
tidy_profile
setsid chromium "${flags[@]}" "$url" >>"/tmp/pilot-chromium.log" 2>&1 </dev/null &
if [ -n "$devtools" ]; then
  devtools_path
fi
