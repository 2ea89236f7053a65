#!/bin/sh
# pilot-record FPS MAX_SECONDS COOKIE_BYTES DISPLAY
#
# Records the display to stdout as WebM (VP9), for package recording
# (docs/recording.md). Its standard input carries the display's X cookie
# first (COOKIE_BYTES bytes: never in the command line or environment),
# and then nothing: its end is the stop. ffmpeg then ends the file
# cleanly (SIGTERM, which ffmpeg handles as it does SIGINT: a command run
# in the background by a script starts with SIGINT ignored). It also ends
# by itself at MAX_SECONDS, or when the
# display goes away (the sandbox stopped); what it wrote is playable
# either way, as WebM needs no index at its end.
#
# The choices, measured in docs/recording.md: VP9 in realtime mode at its
# fastest (cpu-used 8), constant quality (crf 40, b:v 0) so that a still
# screen costs almost nothing, a key frame every 10 s so that a player can
# seek; -t writes MAX_SECONDS as the file's Duration, which the sidecar
# overwrites with the real one when the recording ends.
set -eu
usage() {
  echo "usage: pilot-record FPS MAX_SECONDS COOKIE_BYTES :DISPLAY" >&2
  exit 2
}
[ $# -eq 4 ] || usage
for n in "$1" "$2" "$3"; do
  case $n in '' | *[!0-9]*) usage ;; esac
done
case $4 in :[0-9]*) ;; *) usage ;; esac
fps=$1 max=$2 cookie_bytes=$3 display=$4
umask 077
# An asynchronous list's stdin is /dev/null unless redirected: keep ours.
exec 3<&0
# The container's own /dev/shm (a tmpfs; the root is read-only); a test
# on the host names another folder.
cookie=${PILOT_RECORD_DIR:-/dev/shm}/pilot-record-xauth
head -c "$cookie_bytes" <&3 >"$cookie"
XAUTHORITY=$cookie ffmpeg -hide_banner -loglevel error -nostdin \
  -f x11grab -draw_mouse 1 -framerate "$fps" -i "$display" \
  -t "$max" \
  -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -row-mt 1 -threads 2 \
  -b:v 0 -crf 40 -g "$((fps * 10))" -pix_fmt yuv420p \
  -f webm pipe:1 &
ffmpeg_pid=$!
# The end of stdin (the sidecar let go) stops ffmpeg; a recorder that
# ends by itself ends this shell, the container, and so this reader.
(cat <&3 >/dev/null; kill -TERM "$ffmpeg_pid" 2>/dev/null || true) &
wait "$ffmpeg_pid"
