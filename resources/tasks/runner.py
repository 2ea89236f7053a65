"""pilot-task: runs a task's agent in the sandbox, and tells the sidecar
what it writes.

Runs as the sandbox user, started by the sidecar through `docker exec`
(tasks/ in the repository is its other half; docs/tasks.md says what the
user sees). Commands:

  start ID TIMEOUT MAX -- ARGV...
                               starts the task's supervisor, detached from
                               the exec, unless MAX tasks run already (exit
                               status 4), then follows its records from
                               the first (as follow does)
  follow ID FROM               prints the task's records after number FROM
                               as they come, until its last; a task whose
                               supervisor is gone without a last record is
                               reported lost
  cancel ID                    asks the supervisor to end the task
  running                      prints the ids of the tasks whose supervisor
                               runs, as a JSON list

The supervisor makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so
every process the task starts stays its descendant, even one that forks
twice or calls setsid; it runs ARGV (no shell) in /workspace with the
exec's environment, and writes what ARGV prints to the task's directory
(TASKS/ID, under the sandbox user's home):

- events: one JSON record a line, numbered from 1 (seq), each with t,
  milliseconds since the start: {"started": {"pid"}}, an output line
  {"stream": "stdout"|"stderr", "line": TEXT} (TEXT at most MAX_LINE
  bytes; "cut": N says the line had N bytes), {"flood": {...}} once when
  the output passes MAX_RECORDS lines or MAX_RECORD_BYTES (the lines after
  it are in the output file only), and last {"end": {"status", "exitCode",
  "durationMs", "droppedLines"}}, status one of succeeded, failed,
  cancelled, timed_out;
- output: everything ARGV wrote, both streams as read, up to MAX_OUTPUT
  bytes.

A sidecar that restarts follows the records again from where it was: the
task goes on without it. Cancel (SIGTERM to the supervisor) and the
timeout end the task: SIGTERM to every descendant, SIGKILL to those left
after GRACE seconds, until none is left. When ARGV ends by itself, what it
left running in the background (a server it started, a browser) stays.

Only Python's standard library.
"""

import ctypes
import fcntl
import json
import os
import selectors
import shutil
import signal
import sys
import time

TASKS = os.path.join(os.path.expanduser("~"), ".pilot-tasks")
WORKSPACE = os.environ.get("PILOT_WORKSPACE_DIR", "/workspace")
MAX_LINE = 1 << 20  # bytes of one output line in a record
MAX_RECORDS = 100_000  # output lines in the events file before a flood
MAX_RECORD_BYTES = 64 << 20
MAX_OUTPUT = 1 << 30  # bytes of the output file
GRACE = 5.0  # seconds between SIGTERM and SIGKILL
DRAIN = 0.2  # seconds to read what is left once ARGV ended
KEEPALIVE = 5.0  # seconds between a follower's empty lines while nothing happens
KEEP_TASKS = 50  # task directories kept in the sandbox (the newest)
PR_SET_CHILD_SUBREAPER = 36
BUSY = 4  # exit status of a start refused: as many tasks as allowed run


class Fail(Exception):
    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


def task_dir(task_id):
    if not task_id or len(task_id) > 64 or not all(c.isalnum() or c in "-_" for c in task_id):
        raise Fail(f"refused a task id {task_id!r}", 2)
    return os.path.join(TASKS, task_id)


def now_ms(start):
    return int((time.monotonic() - start) * 1000)


class Records:
    """The events file, written one record a write (a follower sees whole
    lines, soon), with the flood bounds."""

    def __init__(self, path, start):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.start = start
        self.seq = 0
        self.lines = 0
        self.bytes = 0
        self.dropped = 0

    def write(self, record):
        self.seq += 1
        record = {"seq": self.seq, "t": now_ms(self.start), **record}
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        os.write(self.fd, data)
        return len(data)

    def line(self, stream, data, length):
        """One output line: data is its first bytes (MAX_LINE at most),
        length its whole length."""
        if self.lines >= MAX_RECORDS or self.bytes >= MAX_RECORD_BYTES:
            if self.dropped == 0:
                self.write({"flood": {"afterLines": self.lines, "output": "output"}})
            self.dropped += 1
            return
        record = {"stream": stream, "line": data.decode("utf-8", "replace")}
        if length > len(data):
            record["cut"] = length
        self.lines += 1
        self.bytes += self.write(record)


class Lines:
    """Splits one stream's output into lines, keeping at most MAX_LINE
    bytes of each."""

    def __init__(self, stream, records):
        self.stream, self.records = stream, records
        self.kept, self.length = b"", 0

    def feed(self, data):
        while data:
            nl = data.find(b"\n")
            part = data if nl < 0 else data[:nl]
            self.kept += part[:MAX_LINE - len(self.kept)]
            self.length += len(part)
            if nl < 0:
                return
            self.flush()
            data = data[nl + 1:]

    def flush(self):
        self.records.line(self.stream, self.kept, self.length)
        self.kept, self.length = b"", 0

    def close(self):
        if self.length:
            self.flush()


def descendants(root):
    """The processes under root, found through their parents in /proc."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name, in parentheses, may hold anything: the fields
        # after its last parenthesis are fixed.
        fields = stat[stat.rfind(b")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def reap():
    """Collects every ended child (a subreaper inherits orphans); returns
    {pid: status}."""
    ended = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended[pid] = status


def end_everything(me, grace):
    """SIGTERM to every descendant, then SIGKILL to those left after grace,
    again until none is left; returns the statuses reaped meanwhile."""
    ended = {}
    signal_all(descendants(me), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while descendants(me) and time.monotonic() < deadline:
        ended.update(reap())
        time.sleep(0.05)
    for _ in range(200):
        left = descendants(me)
        if not left:
            break
        signal_all(left, signal.SIGKILL)
        time.sleep(0.05)
        ended.update(reap())
    ended.update(reap())
    return ended


def exit_code(status):
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return -1


class Supervisor:
    def __init__(self, task_id, timeout, argv):
        self.dir = task_dir(task_id)
        self.timeout = timeout
        self.argv = argv
        self.start = time.monotonic()
        self.records = Records(os.path.join(self.dir, "events"), self.start)
        self.output = os.open(os.path.join(self.dir, "output"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.output_bytes = 0
        self.stop = None  # "cancelled" once asked to end
        self.wake_r, self.wake_w = os.pipe()

    def on_term(self, signum, frame):
        self.stop = self.stop or "cancelled"
        os.write(self.wake_w, b"x")

    def run(self):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        signal.signal(signal.SIGTERM, self.on_term)
        signal.signal(signal.SIGCHLD, lambda signum, frame: os.write(self.wake_w, b"c"))
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = spawn(self.argv, out_w, err_w)
        os.close(out_w)
        os.close(err_w)
        self.records.write({"started": {"pid": pid}})
        streams = {out_r: Lines("stdout", self.records), err_r: Lines("stderr", self.records)}
        status = self.pump(pid, streams)
        if self.stop:
            ended = end_everything(os.getpid(), GRACE)
            if status is None:
                status = ended.get(pid)
            self.drain(streams)
            return self.finish(self.stop, exit_code(status) if status is not None else -1)
        code = exit_code(status)
        return self.finish("succeeded" if code == 0 else "failed", code)

    def pump(self, pid, streams):
        """Reads ARGV's output until it ends and its pipes close (or DRAIN
        after it ended: what it started may hold them), or the task is
        stopped. Returns its wait status, None if it was stopped first."""
        sel = selectors.DefaultSelector()
        for fd in streams:
            sel.register(fd, selectors.EVENT_READ)
        sel.register(self.wake_r, selectors.EVENT_READ)
        status, drain_until = None, None
        deadline = self.start + self.timeout
        while True:
            now = time.monotonic()
            if now >= deadline and status is None:
                self.stop = self.stop or "timed_out"
            if self.stop or status is not None and (len(sel.get_map()) == 1 or now >= drain_until):
                return status
            for key, _ in sel.select(max(0, min(deadline, drain_until or deadline) - now)):
                if key.fd == self.wake_r:
                    os.read(self.wake_r, 64)
                elif not self.read(key.fd, streams[key.fd]):
                    sel.unregister(key.fd)
            ended = reap()
            if pid in ended:
                status = ended[pid]
                drain_until = time.monotonic() + DRAIN

    def read(self, fd, lines):
        """Reads what is there on one pipe; False at its end."""
        data = os.read(fd, 65536)
        if not data:
            lines.close()
            return False
        self.keep(data)
        lines.feed(data)
        return True

    def drain(self, streams):
        """Reads what the ended processes left in their pipes."""
        for fd, lines in streams.items():
            os.set_blocking(fd, False)
            try:
                while self.read(fd, lines):
                    pass
            except (BlockingIOError, OSError):
                lines.close()

    def keep(self, data):
        if self.output_bytes < MAX_OUTPUT:
            os.write(self.output, data[:MAX_OUTPUT - self.output_bytes])
        self.output_bytes += len(data)

    def finish(self, status, code):
        self.records.write({"end": {
            "status": status, "exitCode": code, "durationMs": now_ms(self.start),
            "droppedLines": self.records.dropped,
        }})
        return 0


def spawn(argv, out_w, err_w):
    """Starts ARGV in /workspace in a session of its own, its stdin empty,
    its stdout and stderr the pipes."""
    pid = os.fork()
    if pid:
        return pid
    try:
        os.setsid()
        os.chdir(WORKSPACE)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.execvp(argv[0], argv)
    except OSError as e:
        os.write(2, f"pilot-task: cannot run {argv[0]!r}: {e.strerror}\n".encode())
        os._exit(127)


def daemonize():
    """Forks twice: the grandchild is the supervisor, in a session of its
    own, its stdio /dev/null, no longer the exec's. Returns in the
    grandchild only, after the parent got its pid through a pipe; the
    original process gets that pid."""
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(w)
        os.waitpid(pid, 0)
        with os.fdopen(r, "rb") as f:
            data = f.read()
        return int(data) if data else None
    os.close(r)
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.write(w, str(os.getpid()).encode())
    os.close(w)
    return 0


def start(task_id, timeout, limit, argv, out):
    """Starts the task unless limit tasks run already (exit status BUSY),
    deciding under a lock, so two sidecars cannot both take the last
    place."""
    d = task_dir(task_id)
    os.makedirs(TASKS, mode=0o700, exist_ok=True)
    lock = os.open(os.path.join(TASKS, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    live = live_tasks()
    if len(live) >= limit:
        raise Fail(f"the sandbox runs {len(live)} task(s) ({', '.join(live)}), at most {limit} at once", BUSY)
    prune(KEEP_TASKS - 1)
    os.mkdir(d, 0o700)
    supervisor = daemonize()
    if supervisor == 0:
        os.close(lock)  # the lock would last as long as the task
        try:
            code = Supervisor(task_id, timeout, argv).run()
        except BaseException:
            code = 1
        os._exit(code)
    if not supervisor:
        raise Fail("the supervisor did not start")
    # Written whole under its name at once: a follow of another process
    # reads either no file or the pid, never an empty one.
    with open(os.path.join(d, "pid.new"), "w") as f:
        f.write(str(supervisor))
    os.rename(os.path.join(d, "pid.new"), os.path.join(d, "pid"))
    os.close(lock)
    follow(task_id, 0, out)


def supervisor_alive(d):
    """Says the task's supervisor still runs: its pid names a process whose
    command line is this program's start of this task."""
    try:
        with open(os.path.join(d, "pid")) as f:
            pid = int(f.read())
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except (OSError, ValueError):
        return False
    task_id = os.path.basename(d).encode()
    return b"start" in args and task_id in args


def follow(task_id, after, out):
    """Prints the records numbered above after, as they come, until the
    last one; an empty line now and then while nothing comes (a closed
    reader ends this process)."""
    d = task_dir(task_id)
    path = os.path.join(d, "events")
    pos, partial, idle = 0, b"", 0.0
    quiet_since = time.monotonic()
    while True:
        data = read_from(path, pos)
        pos += len(data)
        lines = (partial + data).split(b"\n")
        partial = lines.pop()
        if len(partial) > 2 * MAX_LINE:
            partial = b""  # not a record the supervisor wrote
        for line in lines:
            if forward(line, after, out):
                out.flush()
                return
        if data:
            out.flush()
            idle, quiet_since = 0.0, time.monotonic()
            continue
        if not supervisor_alive(d) and not read_from(path, pos):
            out.write(json.dumps({"seq": 0, "lost": "the task's supervisor is gone without a last record"}).encode() + b"\n")
            out.flush()
            return
        if time.monotonic() - quiet_since > KEEPALIVE:
            out.write(b"\n")
            out.flush()
            quiet_since = time.monotonic()
        idle = min(0.05, idle + 0.005)
        time.sleep(idle)


def forward(line, after, out):
    """Writes one record if it is numbered above after; says it is the last."""
    try:
        record = json.loads(line)
        seq, last = int(record["seq"]), "end" in record
    except (ValueError, KeyError, TypeError):
        return False
    if seq > after:
        out.write(line + b"\n")
    return last


def read_from(path, pos):
    try:
        with open(path, "rb") as f:
            f.seek(pos)
            return f.read(1 << 20)
    except FileNotFoundError:
        return b""


def live_tasks():
    """The ids of the tasks whose supervisor runs."""
    try:
        names = os.listdir(TASKS)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if not n.startswith(".") and supervisor_alive(os.path.join(TASKS, n)))


def running(out):
    out.write(json.dumps(live_tasks()).encode() + b"\n")


def prune(keep):
    """Removes the directories of ended tasks but the keep newest: each
    holds up to MAX_OUTPUT bytes of output."""
    try:
        names = os.listdir(TASKS)
    except FileNotFoundError:
        return
    dirs = [os.path.join(TASKS, n) for n in names if not n.startswith(".")]
    dirs.sort(key=lambda d: os.stat(d).st_mtime if os.path.exists(d) else 0, reverse=True)
    for d in dirs[keep:]:
        if not supervisor_alive(d):
            shutil.rmtree(d, ignore_errors=True)


def cancel(task_id):
    d = task_dir(task_id)
    if not supervisor_alive(d):
        raise Fail("the task is not running", 3)
    with open(os.path.join(d, "pid")) as f:
        os.kill(int(f.read()), signal.SIGTERM)


def main(argv, out):
    cmd, args = (argv[0], argv[1:]) if argv else ("", [])
    if cmd == "start" and len(args) >= 5 and args[3] == "--":
        start(args[0], float(args[1]), int(args[2]), args[4:], out)
    elif cmd == "follow" and len(args) == 2:
        follow(args[0], int(args[1]), out)
    elif cmd == "cancel" and len(args) == 1:
        cancel(args[0])
    elif cmd == "running" and not args:
        running(out)
    else:
        raise Fail("usage: runner.py start ID TIMEOUT MAX -- ARGV... | follow ID FROM | cancel ID | running", 2)


if __name__ == "__main__":
    try:
        main(sys.argv[1:], sys.stdout.buffer)
    except Fail as e:
        print(f"pilot-task: {e}", file=sys.stderr)
        sys.exit(e.status)
    except BrokenPipeError:
        sys.exit(0)  # the sidecar stopped reading; the task goes on
    except OSError as e:
        print(f"pilot-task: {e}", file=sys.stderr)
        sys.exit(1)
