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
#   out of reach: make the same Debian release's minbase with mmdebstrap
#   (checked against Debian's archive key), its packages already at
#   bookworm-updates' and bookworm-security's versions, and import it under
#   the tag. A machine that gets its engine installed here has no image
#   yet: mmdebstrap starts before the engine's install and runs beside it,
#   and its work is thrown away if the pull then succeeds.
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
    # with mmdebstrap, which needs no engine.
    if as_root; then
      start_base || return 1
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
    stop_base
    return 0
  fi
  local ref="${PILOT_BASE_IMAGE:-$pinned}"
  log "pulling $ref"
  if timeout 300 docker pull "$ref" >/dev/null 2>&1; then
    stop_base
    return 0
  fi
  # A root file system made here cannot match a digest: its packages are
  # the archive's of the day, checked against Debian's archive key.
  log "cannot pull $ref: making Debian bookworm with mmdebstrap and importing it as $base"
  start_base || return 1
  if ! wait "$base_job"; then
    base_job=
    log "mmdebstrap failed; its log ends:"; tail -n 20 /tmp/pilot-mmdebstrap.log >&2
    return 1
  fi
  base_job=
  docker import "$base_tar" "$base" >/dev/null
  stop_base
  log "imported $base"
}

# start_base starts mmdebstrap in the background ($base_job), in a session
# of its own so that stop_base ends its downloads too, writing Debian
# bookworm's minbase to a tarball ($base_tar); it does nothing if it has
# been started already. What the image is made of:
# - /usr merged as debootstrap merges it (the merged-usr hook, with
#   usr-is-merged): apt's choice, usrmerge, would bring in perl, which the
#   sandbox's Dockerfile checks is absent.
# - The packages of bookworm, bookworm-updates and bookworm-security, so
#   that the images' upgrade finds nothing to do (debootstrap takes one
#   suite: the upgrade then installed ten packages a second time).
# - Docker's own debian image's sources (debian.sources), in place of the
#   one-line sources mmdebstrap writes.
# - dpkg writes without an fsync per file (force-unsafe-io, as the
#   sandbox's Dockerfile installs its packages: a failure throws the tarball
#   away), a setting removed before the tarball is made.
# mmdebstrap took 23 s of CPU where debootstrap's two stages took 34
# (docs/performance.md, "A fresh machine").
start_base() {
  [ -z "$base_tar" ] || return 0
  command -v mmdebstrap >/dev/null || apt_install mmdebstrap || return 1
  [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || apt_install debian-archive-keyring || return 1
  base_tar="$(mktemp /tmp/pilot-base.XXXXXX.tar)"
  setsid mmdebstrap --variant=minbase --format=tar \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt=force-unsafe-io \
    --customize-hook='rm "$1"/etc/dpkg/dpkg.cfg.d/99mmdebstrap "$1"/etc/apt/sources.list' \
    --customize-hook='copy-in resources/docker/sandbox/debian.sources /etc/apt/sources.list.d' \
    bookworm "$base_tar" \
    'deb http://deb.debian.org/debian bookworm main' \
    'deb http://deb.debian.org/debian bookworm-updates main' \
    'deb http://deb.debian.org/debian-security bookworm-security main' \
    >/tmp/pilot-mmdebstrap.log 2>&1 &
  base_job=$!
}

# stop_base ends mmdebstrap, if it runs, and removes its tarball: the base
# has been imported, or came from elsewhere.
stop_base() {
  if [ -n "$base_job" ]; then
    kill -- "-$base_job" 2>/dev/null || true
    wait "$base_job" 2>/dev/null || true
    base_job=
  fi
  [ -z "$base_tar" ] || rm -f "$base_tar"
  base_tar=
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
# and the base's mmdebstrap, its output going to the terminal as it comes;
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

# A failure below exits at once: the build and mmdebstrap in the background
# go with it.
base_tar= base_job=
build_binary &
binary=$!
trap '[ -z "$binary" ] || kill "$binary" 2>/dev/null || true; stop_base' EXIT
ensure_engine
[ -z "$tests" ] || ensure_sshd
ensure_base_image
wait "$binary" || { binary=; log "go build of bin/pilot-sandbox failed"; exit 1; }
binary=
build_image
