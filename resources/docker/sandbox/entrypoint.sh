#!/bin/bash
# Starts the sandbox desktop as the user desktop and keeps it running.
#
# - Waits for Xvfb through -displayfd instead of sleeping.
# - Clears the X lock and socket a stopped container (or a crashed Xvfb, or
#   the sandbox user) left in /tmp, or Xvfb refuses to start the display
#   again ("Server is already active"), with /tmp closed to other users
#   until Xvfb holds its lock (run_xvfb).
# - Gives the display a new cookie at each start, in a file the sandbox
#   group can read (XAUTHORITY): the sandbox user's X clients work, and no
#   other user's.
# - Supervises each desktop process: one that exits is started again, after
#   a pause that doubles while it keeps dying young. One that cannot be kept
#   up (5 deaths in a row within 10 s of starting) ends the sandbox with a
#   non-zero status, so a broken desktop shows as an error instead of
#   looking alive.
# - Logs go into desktop's home: in the sandbox's /tmp, a file of the
#   sandbox user's could stand where a log is written.
# - pilot-pidguard, which ends fork floods, is not started here: it must
#   signal the sandbox user's processes, so the sidecar starts it as that
#   user once the desktop answers.
# - The VNC passwords come from a file the sidecar copies into the container
#   before it starts (never the environment or the command line); without
#   it the desktop does not start.
set -uo pipefail

display_number="${DISPLAY#:}"
display_number="${display_number%%.*}"
resolution="${RESOLUTION:-1280x800x24}"
passwd_file=/etc/pilot-sandbox/vnc/passwd
xauth_file="${XAUTHORITY:-/run/pilot-x/Xauthority}"

log() { printf 'pilot-desktop: %s\n' "$*" >&2; }

cd "$HOME" || exit 1

# stop_child PID: SIGTERM, then SIGKILL if it still runs after 3 s. Waiting
# on one that ignores SIGTERM would hold a stop until Docker's own SIGKILL,
# and the sandbox would then look killed (exit code 137) instead of stopped.
stop_child() {
  local pid=$1 deadline=$((SECONDS + 3))
  kill "$pid" 2>/dev/null
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      kill -KILL "$pid" 2>/dev/null
      break
    fi
    sleep 0.1
  done
  wait "$pid" 2>/dev/null
}

# supervise NAME COMMAND...: runs COMMAND, again each time it exits. Runs in
# a subshell of its own; SIGTERM stops it and its command.
supervise() {
  local name=$1 child= pause=1 quick=0 began status
  shift
  trap '[ -n "$child" ] && stop_child "$child"; exit 0' TERM
  while :; do
    began=$SECONDS
    "$@" &
    child=$!
    wait "$child"
    status=$?
    child=
    if ((SECONDS - began >= 10)); then
      quick=0 pause=1
    elif ((++quick >= 5)); then
      log "${name} exited ${quick} times in a row within 10 s of starting (status ${status}): giving up"
      exit 1
    fi
    log "${name} exited (status ${status}); starting it again in ${pause} s"
    sleep "$pause" & wait $!
    pause=$((pause < 16 ? pause * 2 : 16))
  done
}

pids=()
names=()
stop_all() {
  trap - TERM INT
  local pid
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null
  done
}
# started NAME: records the supervisor just started in the background.
started() { pids+=("$!"); names+=("$1"); }
trap 'stop_all; exit 0' TERM INT

# Without a password anyone who can reach the port would control the
# desktop: refuse to serve it at all.
if [ ! -s "$passwd_file" ]; then
  log "no VNC password in ${passwd_file}: refusing to serve the desktop without one (start the sandbox with pilot-sandbox, which installs one)"
  exit 1
fi

# websockify needs neither the display nor the VNC server (it connects to
# x11vnc per viewer), and Python takes about 100 ms to start it: it starts
# first, beside Xvfb, rather than last (README, Performance). It runs
# through the image's own launcher: every request, page or
# WebSocket, must name 127.0.0.1 or localhost as its Host (no DNS
# rebinding) and come from the viewer's own origin, if from a browser at
# all; and no directory of the viewer's files is listed. Its process also
# runs pilot-clipboard, on a thread that waits for the display: x11vnc
# sends what is copied in the sandbox to viewers only from 15 s after the
# last one connected, and pilot-clipboard hands it over at once, through
# CUT_BUFFER0 (websockify/pilot_clipboard.py says how and why).
supervise websockify sh -c 'exec /usr/local/lib/pilot-websockify/websockify --web /usr/share/novnc \
  6080 127.0.0.1:5900 >>$HOME/websockify.log 2>&1' &
started websockify

# write_cookie writes an X authority file with one MIT-MAGIC-COOKIE-1 for
# the display on any host (family 0xffff): big-endian lengths, then bytes.
write_cookie() {
  local hex escaped
  hex=$(mcookie) || return 1
  escaped=$(printf '%s' "$hex" | sed 's/../\\x&/g')
  (
    umask 027
    {
      printf '\xff\xff\x00\x00'
      printf "\\x00\\x$(printf %02x "${#display_number}")%s" "$display_number"
      printf '\x00\x12MIT-MAGIC-COOKIE-1\x00\x10'
      printf "$escaped"
    } >"${xauth_file}.new" && mv -f "${xauth_file}.new" "$xauth_file"
  )
}
if ! write_cookie; then
  log "could not write the display's cookie to ${xauth_file}"
  stop_all
  exit 1
fi

ready_fifo="$(mktemp -u /tmp/.pilot-xvfb-ready.XXXXXX)"
mkfifo -m 0600 "$ready_fifo"
lock="/tmp/.X${display_number}-lock"
# reopen_tmp PID makes /tmp writable for all again once Xvfb (PID) listens
# on the display's socket, which it makes after taking its lock (run_xvfb
# removed the old one; one the sandbox user put there is not desktop's,
# and Xvfb replaces it), or has ended, or after 10 s.
reopen_tmp() {
  local pid=$1 i socket="/tmp/.X11-unix/X${display_number}"
  for ((i = 0; i < 100; i++)); do
    [ -S "$socket" ] && [ -O "$socket" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  chmod 1777 /tmp
}
# run_xvfb clears what an earlier Xvfb left and starts one; only the first
# says when it is ready, through the FIFO this script reads.
#
# Xvfb refuses to start while /tmp/.X99-lock (a path built into it) names a
# live process, and the sandbox user can write in /tmp: in the moment
# between a crashed Xvfb's lock going and the new one's being made, it
# could plant a lock of its own (naming a process Xvfb cannot ask about)
# and end the desktop. So no one else may create files in /tmp while Xvfb
# takes its lock: /tmp is desktop's, which closes it (1755) and opens it
# again (1777) once Xvfb listens, a fraction of a second; and as the
# directory's owner it removes whatever lock or socket was left, whoever's.
run_xvfb() {
  chmod 1755 /tmp
  if [ -e "$lock" ] && [ ! -O "$lock" ]; then
    log "an X lock of another user's was in the way of Xvfb: removing it"
  fi
  rm -f "$lock" "/tmp/.X11-unix/X${display_number}"
  local self=$BASHPID # Xvfb's, once exec'd
  (reopen_tmp "$self" &)
  local args=(":${display_number}" -screen 0 "$resolution" -nolisten tcp -auth "$xauth_file")
  [ -p "$ready_fifo" ] && exec Xvfb "${args[@]}" -displayfd 3 3>"$ready_fifo"
  exec Xvfb "${args[@]}"
}
supervise Xvfb run_xvfb &
started Xvfb
if ! read -r -t 20 _ <"$ready_fifo"; then
  rm -f "$ready_fifo"
  log "Xvfb did not start on :${display_number} (${resolution})"
  stop_all
  exit 1
fi
rm -f "$ready_fifo"
log "display :${display_number} ready at ${resolution}"

# read: makes x11vnc read the file at each connection, so passwords the
# sidecar installs for the next start are never stale. -noremote and
# -novncconnect: the sandbox's X clients may not give it commands through
# the X11VNC_REMOTE property, nor have it connect out to an address of
# their choosing through VNC_CONNECT (a reverse connection, which
# libvncserver lets in without a password).
# X11VNC_AVOID_WINDOWS=never: x11vnc 0.9.16 creates the window it owns
# selections with, and starts watching them, only once a viewer has been
# connected for 8 s (45 s without a window manager), to stay clear of a
# display manager this desktop does not have. Until then text a viewer
# pastes stops in CUT_BUFFER0 and the CLIPBOARD is not sent to viewers.
# -noclipboard -noprimary: x11vnc no longer polls the selections to send
# them to viewers (it still sets both to what a viewer pastes). It would
# send them as the raw bytes their owners give for STRING, which are UTF-8
# (xclip's), a second after pilot-clipboard sent the same text as Latin-1:
# the viewer's clipboard would end up garbled. Copies reach viewers through
# pilot-clipboard and CUT_BUFFER0; a mere selection (PRIMARY) no longer does.
# -threads: libvncserver accepts each viewer and serves it in a thread of
# its own. Without it x11vnc's one loop accepts a new client only between
# 200 ms naps while none is connected, and reads a new client's messages
# one per pass, between 250 ms naps while the screen is still: a viewer
# that connected right after a start waited 0.2 s for its handshake and,
# one start in two, 1 s for its first picture (README, Performance). The
# manual calls the mode experimental; every test of the desktop runs with
# it.
supervise x11vnc env X11VNC_AVOID_WINDOWS=never x11vnc -display ":${display_number}" -rfbport 5900 -forever -shared \
  -noclipboard -noprimary -passwdfile "read:${passwd_file}" -noremote -novncconnect -noxdamage -threads -quiet -o "$HOME/x11vnc.log" &
started x11vnc

# After x11vnc, which a start waits for: fluxbox's own start-up would
# otherwise take the CPU x11vnc needs to start listening.
supervise fluxbox sh -c 'exec fluxbox >>$HOME/fluxbox.log 2>&1' &
started fluxbox

wait -n "${pids[@]}"
status=$?
log "a desktop process could not be kept running (status ${status}); stopping the sandbox"
stop_all
exit 1
