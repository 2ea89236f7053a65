#!/bin/sh
# pilot-a11y: starts the accessibility bus of the sandbox user's programs
# (AT-SPI over D-Bus, at AT_SPI_BUS_ADDRESS), unless one answers, and
# returns once it answers. GTK and Qt programs register their trees there
# as they start; the desktop agent reads them (resources/agent/atspi.py).
#
# It runs as the sandbox user: pilot-pidguard, which the sidecar starts as
# that user at every start of the sandbox, runs it first. The bus is the
# sandbox user's own, and so is at-spi2-registryd, which the bus starts
# when the first program registers: the programs on the bus talk only to
# processes of their own user. The desktop user's only process that
# touches it is the agent, a client that checks the socket's owner and
# bounds what it reads. A bus of the desktop user's would have put the
# daemon and the registry, which parse every program's messages, in the
# sandbox user's reach.
#
# It is the sandbox user's, so that user can stop it: its programs then
# have no tree, and the agent says so. A stopped or stale bus is started
# again at the next start of the sandbox.
set -u
socket=/run/pilot-a11y/bus

answers() {
  dbus-send --bus="unix:path=$socket" --dest=org.freedesktop.DBus --type=method_call \
    --print-reply /org/freedesktop/DBus org.freedesktop.DBus.GetId >/dev/null 2>&1
}

answers && exit 0
# One at a time: each sidecar that finds the sandbox starts a guard of its
# own, and two could otherwise each remove the other's socket.
exec 9>/run/pilot-a11y/lock
flock -w 5 9 || exit 1
answers && exit 0
# A socket left by a stopped container's bus refuses connections, and
# dbus-daemon does not replace a socket it finds.
rm -f "$socket"
dbus-daemon --config-file=/etc/pilot-a11y/bus.conf --nofork --nopidfile \
  </dev/null >>/tmp/pilot-a11y.log 2>&1 9>&- &
i=0
while [ "$i" -lt 100 ]; do
  answers && exit 0
  sleep 0.02
  i=$((i + 1))
done
echo "pilot-a11y: the accessibility bus did not answer within 2 s" >&2
exit 1
