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

# Accessibility: --force-renderer-accessibility keeps each page's
# accessibility tree built as the page changes, so the desktop agent's
# tree of the screen (sandbox_screenshot with tree: true) reads it without
# waiting for the renderer to build it first (docs/agent-tools.md has
# what it costs). The pages still reach the desktop agent through the
# DevTools port, not AT-SPI: Chromium joins the accessibility bus only
# when told a screen reader runs.
#
# WebGL: the image has no Mesa and the container no GPU, so ANGLE draws
# with Chromium's own SwiftShader (without these flags the GPU process fails
# on the missing GLX, twice per start, and WebGL is off); "unsafe" lets
# pages reach it. Rasterizing on SwiftShader is slower than Chromium's own
# software rasterizer: only WebGL and compositing use it.
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
  --use-angle=swiftshader
  --enable-unsafe-swiftshader
  --disable-gpu-rasterization
  --force-renderer-accessibility
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
# new_tab URL asks the running Chromium's DevTools port for a tab, which
# comes to the front with its window (TestBrowserOpenRaisesTheWindow), in
# bash alone: a few milliseconds, where a second chromium process that hands
# the URL over the single-instance socket takes 400 ms, and Python's start
# 50 (BenchmarkBrowserOpenWarm).
new_tab() {
  devtools PUT "/json/new?$(urlencode "$1")" | grep '"id"' >/dev/null
}

# devtools METHOD PATH prints the body of the DevTools port's answer, and
# fails unless it is a 200.
devtools() {
  local LC_ALL=C status line len=0 body=
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return
  printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$1" "$2" >&3
  IFS= read -r -t 5 status <&3 || return
  while IFS= read -r -t 5 line <&3 && [ "$line" != $'\r' ]; do
    case ${line,,} in content-length:*) len=${line//[!0-9]/} ;; esac
  done
  [ "$len" -eq 0 ] || IFS= read -r -t 5 -N "$len" body <&3
  exec 3<&-
  [[ $status == *" 200 "* ]] && printf '%s' "$body"
}

# urlencode S percent-encodes every byte of S but the unreserved ones:
# Chromium decodes /json/new's query as the whole URL.
urlencode() {
  local LC_ALL=C s=$1 out= c h i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    case $c in
      [A-Za-z0-9._~-]) out+=$c ;;
      *) printf -v h '%%%02X' "'$c"; out+=$h ;;
    esac
  done
  printf '%s' "$out"
}

if running; then
  # Only whole URLs go the fast way: Chromium's command line also takes
  # file paths relative to here, and a DevTools port that does not answer
  # (a Chromium started otherwise) leaves the usual way.
  case "$url" in
    http://* | https://* | file://* | about:* | data:*)
      if new_tab "$url" >/dev/null 2>&1; then exit 0; fi ;;
  esac
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
