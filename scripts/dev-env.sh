#!/usr/bin/env bash
# Makes this machine ready to run sandboxes: a Docker engine that answers,
# the sandbox's base image, bin/pilot-sandbox, and the sandbox image itself.
#
# - bin/pilot-sandbox is built first, in the background: a first build
#   compiles every package and the standard library (165 to 225 s on a
#   busy 2-CPU machine, docs/performance.md, "A fresh machine"), and needs
#   nothing of the engine, so it runs while the engine is installed and the
#   base is made. The images are built by it, not by `go run`, which would
#   link the same program once more into a temporary file.
# - No engine answers: as root with apt-get, install docker.io if dockerd is
#   missing, then start dockerd in the background (machines without systemd,
#   such as CI containers, have nothing else to start it).
# - The base image (debian:bookworm-slim pinned by digest in the sandbox's
#   Dockerfile, or $PILOT_BASE_IMAGE) cannot be pulled, e.g. Docker Hub is
#   out of reach: build the same Debian release with debootstrap (checked
#   against Debian's archive key) and import it under the tag. A machine
#   that gets its engine installed here has no image yet: debootstrap's
#   first stage (downloads and unpacking, no chroot) starts before the
#   engine's install and runs beside it, and is thrown away if the pull
#   then succeeds.
# - With --tests (scripts/test.sh): sshd for the remote-engine tests, i.e.
#   openssh-server if missing. Running a sandbox needs none.
# - Build pilot-sandbox's image once, so that tests running in parallel do
#   not each start the same build.
#
# Exits non-zero if the engine cannot be had or the binary not built.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'dev-env: %s\n' "$*" >&2; }

as_root() { [ "$(id -u)" = 0 ]; }

apt_install() {
  if ! as_root || ! command -v apt-get >/dev/null; then
    log "cannot install $* (needs root and apt-get)"
    return 1
  fi
  if [ -z "${apt_updated:-}" ]; then
    apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

engine_answers() { docker info >/dev/null 2>&1; }

ensure_engine() {
  if command -v docker >/dev/null && engine_answers; then
    return 0
  fi
  if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
    # A new engine has no base image: unless a pull brings it, it is made
    # with debootstrap, whose first stage need not wait for the engine.
    if as_root; then
      start_first_stage || return 1
    fi
    log "installing Docker Engine (docker.io)"
    apt_install docker.io ca-certificates || return 1
  fi
  if ! as_root; then
    log "no Docker engine answers and this user cannot start one: start Docker, or run as root"
    return 1
  fi
  # A dockerd that is still shutting down, or a pid file a crashed one left,
  # makes a new one refuse to start ("pid file found").
  local pidfile=/var/run/docker.pid old
  if [ -f "$pidfile" ]; then
    old="$(cat "$pidfile" 2>/dev/null || true)"
    for _ in $(seq 1 60); do
      [ -n "$old" ] && kill -0 "$old" 2>/dev/null || break
      sleep 0.5
    done
    if [ -z "$old" ] || ! kill -0 "$old" 2>/dev/null; then
      rm -f "$pidfile"
    fi
  fi
  log "starting dockerd"
  mkdir -p /var/log
  nohup dockerd >/var/log/pilot-sandbox-dockerd.log 2>&1 &
  for _ in $(seq 1 120); do
    engine_answers && { log "dockerd is up"; return 0; }
    sleep 0.5
  done
  log "dockerd did not come up; its log ends:"
  tail -n 20 /var/log/pilot-sandbox-dockerd.log >&2 || true
  return 1
}

# The sandbox image's base: its Dockerfile pins it by digest (ARG
# BASE_IMAGE), and the sidecar builds on the engine's image under the
# digest, or else under its tag, or else has the engine pull the digest.
ensure_base_image() {
  local pinned base
  pinned="$(sed -n 's/^ARG BASE_IMAGE=//p' resources/docker/sandbox/Dockerfile)"
  base="${PILOT_BASE_IMAGE:-${pinned%@*}}"
  if docker image inspect "$base" >/dev/null 2>&1 ||
    { [ -z "${PILOT_BASE_IMAGE:-}" ] && docker image inspect "$pinned" >/dev/null 2>&1; }; then
    stop_first_stage
    return 0
  fi
  local ref="${PILOT_BASE_IMAGE:-$pinned}"
  log "pulling $ref"
  if timeout 300 docker pull "$ref" >/dev/null 2>&1; then
    stop_first_stage
    return 0
  fi
  # A root file system made here cannot match a digest: its packages are
  # the archive's of the day, checked against Debian's archive key.
  log "cannot pull $ref: building Debian bookworm with debootstrap and importing it as $base"
  start_first_stage || return 1
  if ! wait "$first" || ! second_stage "$root"; then
    first=
    log "debootstrap failed; its log ends:"; tail -n 20 /tmp/pilot-debootstrap.log >&2
    return 1
  fi
  first=
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  # The sources of Docker's own debian image: debootstrap names only the
  # release, so the images' upgrade would find no security update.
  cp resources/docker/sandbox/debian.sources "$root"/etc/apt/sources.list.d/debian.sources
  rm -f "$root"/etc/apt/sources.list
  tar -C "$root" -c . | docker import - "$base" >/dev/null
  rm -rf "$root"
  root=
  log "imported $base"
}

# start_first_stage starts debootstrap's first stage of Debian bookworm's
# minbase into a new directory ($root), in the background ($first), in a
# session of its own so that stop_first_stage ends its downloads too. It
# does nothing if the stage has been started already.
start_first_stage() {
  [ -z "$root" ] || return 0
  command -v debootstrap >/dev/null || apt_install debootstrap || return 1
  [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || apt_install debian-archive-keyring || return 1
  root="$(mktemp -d /tmp/pilot-rootfs.XXXXXX)"
  setsid debootstrap --foreign --variant=minbase --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
    bookworm "$root" http://deb.debian.org/debian >/tmp/pilot-debootstrap.log 2>&1 &
  first=$!
}

# stop_first_stage ends the first stage, if it runs, and removes its
# directory: the base came from elsewhere.
stop_first_stage() {
  if [ -n "$first" ]; then
    kill -- "-$first" 2>/dev/null || true
    wait "$first" 2>/dev/null || true
    first=
  fi
  [ -z "$root" ] || rm -rf "$root"
  root=
}

# second_stage DIR installs the first stage's packages in DIR, with dpkg
# writing without an fsync per file (force-unsafe-io, as the sandbox's
# Dockerfile installs its packages: a failure throws DIR away; what it
# saves: docs/performance.md, "A fresh machine"). The setting is removed
# before the image is made.
second_stage() {
  local unsafe=$1/etc/dpkg/dpkg.cfg.d/pilot-unsafe-io
  echo force-unsafe-io >"$unsafe" &&
    chroot "$1" /debootstrap/debootstrap --second-stage >>/tmp/pilot-debootstrap.log 2>&1 &&
    rm "$unsafe"
}

# The remote-engine tests (internal/sshtest) run an sshd of their own on
# 127.0.0.1 in front of this engine; they fail without one when
# PILOT_REQUIRE_DOCKER=1. Only the program is needed: the package's own
# service is left as it is (a machine without an init system starts none).
ensure_sshd() {
  [ -x /usr/sbin/sshd ] && return 0
  log "installing openssh-server (sshd, for the remote-engine tests)"
  apt_install openssh-server openssh-client || log "no sshd: the remote-engine tests will be skipped"
}

# The binary's build runs in the background, beside the engine's install
# and the base's debootstrap, its output going to the terminal as it comes;
# exec makes the background job the go command itself, which the exit trap
# below can end.
build_binary() {
  mkdir -p bin
  exec go build -o bin/pilot-sandbox ./cmd/pilot-sandbox
}

# pilot-sandbox build says itself whether it builds (its progress) or the
# image is up to date: saying "building" here, every run, was wrong on
# every run but the first (issue 26).
build_image() {
  bin/pilot-sandbox build
}

tests=
case "${1:-}" in
  --tests) tests=1 ;;
  "") ;;
  *) log "usage: scripts/dev-env.sh [--tests]"; exit 2 ;;
esac

# A failure below exits at once: the build and debootstrap's first stage in
# the background go with it.
root= first=
build_binary &
binary=$!
trap '[ -z "$binary" ] || kill "$binary" 2>/dev/null || true; stop_first_stage' EXIT
ensure_engine
[ -z "$tests" ] || ensure_sshd
ensure_base_image
wait "$binary" || { binary=; log "go build of bin/pilot-sandbox failed"; exit 1; }
binary=
build_image
