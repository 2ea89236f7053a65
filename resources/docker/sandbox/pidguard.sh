#!/bin/bash
# pilot-pidguard: ends a fork flood in the sandbox.
#
# The container's process limit (pids cgroup) keeps a flood from reaching
# the host, but not from holding every slot of the sandbox for good: a fork
# bomb whose first shell exits at once outlives the command's timeout, and
# meanwhile nothing new can start (no exec, no viewer connection). When the
# sandbox has been at its limit for a few seconds, this freezes every
# process, kills the process group that holds the most slots, or, when no
# group holds a quarter of them (each process in a session of its own),
# every process that is not part of the desktop, and thaws the rest.
#
# The sidecar starts it, as the sandbox user, once the desktop answers: the
# desktop's own user may not signal that user's processes. So the sandbox
# user can kill it too: the sidecar keeps an exec attached to it and starts
# another when it ends. An exec cannot start while the sandbox is at its
# process limit (runc forks inside it), so a guard killed in the same
# breath as a flood starts is not replaced until the flood ends or the
# sandbox is restarted. The first argument, if any, is the log file. It looks only at
# processes of its own user (the desktop's are out of its reach, and out of
# a flood's), and never touches its own process group or PID 1. In images
# from before the desktop had a user of its own, the entrypoint starts it;
# the sidecar restarts the desktop agent on its next call.
#
# The loop uses builtins only: while the flood lasts, nothing can fork,
# this script included.
set -u
exec </dev/null
# A log it cannot open (/tmp closed a moment while the display restarts)
# leaves it writing to the exec's output: a failed exec redirection would
# end it.
if [ $# -gt 0 ] && : 2>/dev/null >>"$1"; then
  exec >>"$1" 2>&1
fi

# The accessibility bus of this user's programs, in images that have one
# (the browser image's pilot-a11y): started here because this is the
# process the sidecar starts as this user at every start of the sandbox.
# It stays in this process group, which a flood's end spares.
if [ -x /usr/local/bin/pilot-a11y ]; then
  /usr/local/bin/pilot-a11y || echo "pilot-pidguard: the accessibility bus did not start" >&2
fi

cg=/sys/fs/cgroup/pids # cgroup v1
[ -r "$cg/pids.max" ] || cg=/sys/fs/cgroup # cgroup v2
read -r max <"$cg/pids.max" || exit 0
[ "$max" = max ] && exit 0 # no limit, nothing to guard

margin=$((max / 16 > 8 ? max / 16 : 8))
patience=3 # seconds at the limit before acting

log() { printf 'pilot-pidguard: %s\n' "$*" >&2; }
log "started (process $$): acting when ${max} processes are in use for ${patience}s"

# stat_fields sets comm and pgrp from a /proc/PID/stat line. The
# command name is in parentheses and may hold spaces and parentheses.
stat_fields() {
  local line=$1 rest
  comm=${line#*(}
  comm=${comm%) *}
  rest=${line##*) }
  # shellcheck disable=SC2086 # splitting is the point
  set -- $rest
  pgrp=$3
}

read -r self_stat </proc/$$/stat
stat_fields "$self_stat"
desktop=$pgrp


# groups_outside lists, in the associative array named by $1, the process
# groups outside the desktop with their sizes, and in names their commands.
groups_outside() {
  local -n out=$1
  local f line pid
  for f in /proc/[0-9]*/stat; do
    read -r line 2>/dev/null <"$f" || continue
    stat_fields "$line"
    pid=${f#/proc/}
    pid=${pid%/stat}
    [ "$pid" = 1 ] || [ "$pgrp" = "$desktop" ] || [ "$pgrp" = 1 ] && continue
    [ -O "/proc/$pid" ] || continue # test -O is a builtin: no fork
    # shellcheck disable=SC2004 # the keys of an associative array need the $
    out[$pgrp]=$((${out[$pgrp]:-0} + 1))
    names[$pgrp]=$comm
  done
}

# kill_flood freezes every process first (kill -1 reaches all but PID 1 and
# this script, in one call): a flood's processes spin on fork and would
# starve this script of CPU, and a frozen one cannot fork. Then it kills the
# biggest process group if that holds a quarter of the slots, or else every
# group outside the desktop (a flood whose processes each start a session of
# their own), and lets the rest carry on.
kill_flood() {
  local -A members=() names=()
  local pg best=0 most=0
  kill -STOP -1 2>/dev/null
  groups_outside members
  for pg in "${!members[@]}"; do
    if ((members[$pg] > most)); then
      best=$pg most=${members[$pg]}
    fi
  done
  if ((most * 4 >= max)); then
    kill -KILL -- "-$best" 2>/dev/null
    log "the sandbox used ${cur} of its ${max} processes for ${patience}s: killed process group ${best} (${most} processes of ${names[$best]})"
  else
    for pg in "${!members[@]}"; do
      kill -KILL -- "-$pg" 2>/dev/null
    done
    log "the sandbox used ${cur} of its ${max} processes for ${patience}s, in ${#members[@]} groups none of which held a quarter: killed every process outside the desktop"
  fi
  kill -CONT -1 2>/dev/null
}

# sleeper opens fd 9 for a sleep without fork: a read that times out on a
# FIFO nobody writes to. Making the FIFO forks, which fails during a flood.
sleeper() {
  local fifo
  fifo=$(mktemp -u /tmp/.pilot-pidguard.XXXXXX) 2>/dev/null &&
    mkfifo -m 0600 "$fifo" 2>/dev/null &&
    exec 9<>"$fifo" &&
    rm -f "$fifo"
}

# One guard acts at a time: the oldest. Each sidecar that starts or finds
# the sandbox running keeps a guard of its own, so several may run; the
# others stand by, and the oldest of them takes over when the one acting
# ends (killing the others would have each sidecar start its own again,
# in turn, for ever).

# start_of PID sets start to the process's start time (clock ticks).
start_of() {
  local line rest
  read -r line 2>/dev/null <"/proc/$1/stat" || return 1
  rest=${line##*) }
  # shellcheck disable=SC2086 # splitting is the point
  set -- $rest
  start=${20}
}

# is_guard PID: whether PID is a guard of this user.
is_guard() {
  local argv
  [ -O "/proc/$1" ] || return 1
  mapfile -d '' -t argv 2>/dev/null <"/proc/$1/cmdline" || return 1
  [ "${argv[1]:-}" = /usr/local/bin/pilot-pidguard ]
}

# find_leader sets leader to the oldest guard running, this one included.
find_leader() {
  local f pid best=$$ best_start
  start_of $$
  best_start=$start
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    [ "$pid" = $$ ] && continue
    is_guard "$pid" && start_of "$pid" || continue
    if ((start < best_start || (start == best_start && pid < best))); then
      best=$pid best_start=$start
    fi
  done
  leader=$best
}

sleeper || exit 1
find_leader
[ "$leader" = $$ ] || log "guard ${leader} acts; this one (process $$) stands by until it ends"

full=0
while :; do
  read -r -t 1 -u 9 _
  if [ "$leader" != $$ ]; then
    is_guard "$leader" && continue
    find_leader
    [ "$leader" = $$ ] && log "the guard that acted ended: this one (process $$) acts"
    continue
  fi
  read -r cur <"$cg/pids.current" || continue
  if ((cur < max - margin)); then
    full=0
    continue
  fi
  if ((++full >= patience)); then
    kill_flood
    full=0
  fi
done
