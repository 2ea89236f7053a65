"""pilot-sandbox who: which process of the sandbox opened a connection, and
what the sidecar started it for (Go package egress, docs/network.md).

Runs inside a sandbox, started by the sidecar through a `docker exec` as
the sandbox user (the user of every exec), with stdin and stdout attached,
as `python3 -I -S -c SOURCE`: the source is passed whole, so it always
matches the sidecar, in any image with Python. A sandbox holds no
capability, so only that user's processes (the ones an agent starts) can
be read: another user's /proc/PID/fd and environ are closed to it, and
those are answered like a gone process.

Each line on stdin is a TCP source port of a connection the sandbox's
network proxy holds. Each answer, one JSON line on stdout, names it again:

    {"port": P, "pid": N, "command": "...", "cause": "ID"}

or {"port": P} when no process of the sandbox holds such a socket (gone,
or not of this network namespace). "cause" is the PILOT_CAUSE of the
process's environment, or of its nearest ancestor's that has one (a
program an exec started inherits it; one that cleared its environment is
found by its parents); absent where none has. Everything it says comes
from the sandbox, which can falsify it: the sidecar shows it as a hint and
never decides by it.

It ends with its stdin.
"""

import json
import os
import sys

CAUSE = b"PILOT_CAUSE="
MAX_COMMAND = 300  # characters of a command line reported
MAX_ENVIRON = 1 << 20  # bytes of an environment read
MAX_ANCESTORS = 16  # parents looked through for a cause
MAX_CAUSE = 64  # bytes of a cause id (the sidecar's are 16)
# The TCP states a connection being opened can be in, as /proc/net/tcp
# writes them: ESTABLISHED, SYN_SENT.
OPENING = ("01", "02")


def socket_inodes(port, tables=("/proc/net/tcp", "/proc/net/tcp6")):
    """The inodes of the TCP sockets whose local port is port, in the
    network namespace of this process (the sandbox's)."""
    want = "%04X" % port
    inodes = []
    for table in tables:
        try:
            with open(table) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        inodes.extend(inodes_in(lines, want))
    return inodes


def inodes_in(lines, want):
    """The inodes of the lines of a /proc/net/tcp table whose local port
    (hex) is want and whose state is one of OPENING."""
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) < 10:
            continue
        local, state, inode = fields[1], fields[3], fields[9]
        if local.rpartition(":")[2] == want and state in OPENING and inode != "0":
            found.append(inode)
    return found


def holder(inodes, proc="/proc"):
    """The pid of a process holding one of the sockets, newest first (the
    connection was just opened), or None."""
    links = set("socket:[%s]" % i for i in inodes)
    me = os.getpid()
    pids = sorted((int(p) for p in os.listdir(proc) if p.isdigit()), reverse=True)
    for pid in pids:
        if pid == me:
            continue
        fd_dir = "%s/%d/fd" % (proc, pid)
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("%s/%s" % (fd_dir, fd)) in links:
                    return pid
            except OSError:
                continue
    return None


def command(pid, proc="/proc"):
    """The process's command line, its arguments joined by spaces,
    bounded; "" when it is gone."""
    try:
        with open("%s/%d/cmdline" % (proc, pid), "rb") as f:
            raw = f.read(MAX_COMMAND * 4)
    except OSError:
        return ""
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    return text[:MAX_COMMAND]


def cause_of(environ):
    """PILOT_CAUSE in an environment block (NUL-separated), or None."""
    for var in environ.split(b"\0"):
        if var.startswith(CAUSE):
            value = var[len(CAUSE):]
            if 0 < len(value) <= MAX_CAUSE and value.isalnum():
                return value.decode("ascii")
            return None
    return None


def parent(pid, proc="/proc"):
    """The process's parent pid, or 0."""
    try:
        with open("%s/%d/stat" % (proc, pid), "rb") as f:
            stat = f.read(4096)
    except OSError:
        return 0
    # The command name, in parentheses, may hold spaces and parentheses.
    fields = stat[stat.rfind(b")") + 2:].split()
    return int(fields[1]) if len(fields) > 1 else 0


def cause(pid, proc="/proc"):
    """The cause in the process's environment, or its nearest ancestor's."""
    for _ in range(MAX_ANCESTORS):
        if pid <= 1:
            return None
        try:
            with open("%s/%d/environ" % (proc, pid), "rb") as f:
                found = cause_of(f.read(MAX_ENVIRON))
        except OSError:
            found = None
        if found:
            return found
        pid = parent(pid, proc)
    return None


def who(port):
    """The answer for a source port."""
    answer = {"port": port}
    pid = holder(socket_inodes(port))
    if pid is None:
        return answer
    answer["pid"] = pid
    answer["command"] = command(pid)
    c = cause(pid)
    if c:
        answer["cause"] = c
    return answer


def main(stdin, stdout):
    for line in stdin:
        try:
            port = int(line.strip())
        except ValueError:
            continue
        if not 0 < port < 65536:
            continue
        stdout.write(json.dumps(who(port)) + "\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.stdin, sys.stdout))
