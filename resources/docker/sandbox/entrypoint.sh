#!/bin/bash
# Starts the sandbox desktop and stays in the foreground while all of it runs.
#
# - Waits for Xvfb through -displayfd instead of sleeping.
# - Clears the X lock and socket a stopped container keeps in /tmp, or Xvfb
#   refuses to start the display again ("Server is already active").
# - Exits non-zero as soon as any desktop process dies, so a broken sandbox
#   shows as stopped with an error instead of looking alive.
# - Starts pilot-pidguard, which ends fork floods.
# - The VNC passwords come from a file the sidecar copies into the container
#   before it starts (never the environment or the command line); without
#   it the desktop does not start.
set -uo pipefail

display_number="${DISPLAY#:}"
display_number="${display_number%%.*}"
resolution="${RESOLUTION:-1280x800x24}"
passwd_file=/etc/pilot-sandbox/vnc/passwd

log() { printf 'pilot-desktop: %s\n' "$*" >&2; }

pids=()
guard=
names=()
# stop_all ends every desktop process: SIGTERM, then SIGKILL for any still
# running after 3 s. Waiting on one that ignores SIGTERM would hold a stop
# until Docker's own SIGKILL at the end of its grace period, and the sandbox
# would then look killed (exit code 137) instead of stopped.
stop_all() {
  trap - TERM INT
  [ -n "$guard" ] && kill "$guard" 2>/dev/null
  [ "${#pids[@]}" -gt 0 ] || return 0
  kill "${pids[@]}" 2>/dev/null
  local deadline=$((SECONDS + 3)) i alive
  while :; do
    alive=()
    for i in "${!pids[@]}"; do
      kill -0 "${pids[$i]}" 2>/dev/null && alive+=("$i")
    done
    [ "${#alive[@]}" -eq 0 ] && break
    if [ "$SECONDS" -ge "$deadline" ]; then
      for i in "${alive[@]}"; do
        log "${names[$i]} did not stop on SIGTERM: killing it"
        kill -KILL "${pids[$i]}" 2>/dev/null
      done
      break
    fi
    sleep 0.1
  done
  wait 2>/dev/null
}
# started NAME: records the process just started in the background.
started() { pids+=("$!"); names+=("$1"); }
trap 'stop_all; exit 0' TERM INT

# Without a password anyone who can reach the port would control the
# desktop: refuse to serve it at all.
if [ ! -s "$passwd_file" ]; then
  log "no VNC password in ${passwd_file}: refusing to serve the desktop without one (start the sandbox with pilot-sandbox, which installs one)"
  exit 1
fi

# Ends fork floods (see the script). Not among the desktop's pids below: if
# it stops, the desktop goes on without it.
/usr/local/bin/pilot-pidguard &
guard=$!

rm -f "/tmp/.X${display_number}-lock" "/tmp/.X11-unix/X${display_number}"

ready_fifo="$(mktemp -u /tmp/.pilot-xvfb-ready.XXXXXX)"
mkfifo -m 0600 "$ready_fifo"
Xvfb ":${display_number}" -screen 0 "$resolution" -nolisten tcp \
  -displayfd 3 3>"$ready_fifo" &
started Xvfb
if ! read -r -t 20 _ <"$ready_fifo"; then
  rm -f "$ready_fifo"
  log "Xvfb did not start on :${display_number} (${resolution})"
  stop_all
  exit 1
fi
rm -f "$ready_fifo"
log "display :${display_number} ready at ${resolution}"

fluxbox >/tmp/fluxbox.log 2>&1 &
started fluxbox

# read: makes x11vnc read the file at each connection, so passwords the
# sidecar installs for the next start are never stale.
# X11VNC_AVOID_WINDOWS=never: x11vnc 0.9.16 creates the window it owns
# selections with, and starts watching them, only once a viewer has been
# connected for 8 s (45 s without a window manager), to stay clear of a
# display manager this desktop does not have. Until then text a viewer
# pastes stops in CUT_BUFFER0 and the CLIPBOARD is not sent to viewers.
X11VNC_AVOID_WINDOWS=never x11vnc -display ":${display_number}" -rfbport 5900 -forever -shared \
  -passwdfile "read:${passwd_file}" -noxdamage -quiet -o /tmp/x11vnc.log &
started x11vnc

websockify --web /usr/share/novnc 6080 127.0.0.1:5900 >/tmp/websockify.log 2>&1 &
started websockify

wait -n "${pids[@]}"
status=$?
log "a desktop process exited (status ${status}); stopping the sandbox"
stop_all
exit 1
