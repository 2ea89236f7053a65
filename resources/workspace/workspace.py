"""pilot-workspace: the project's copy in /workspace, inside the sandbox.

Runs as the sandbox user, started by the sidecar through `docker exec`
(workspace/ in the repository is its other half; docs/tasks.md says what
the user sees). /workspace is a git repository the sidecar keeps:

- refs/pilot/base is the last snapshot of the host's project (each sync
  that changes something commits one, its parent the one before);
- refs/pilot/tasks/ID is the working tree as task ID left it, its parent
  the base the task started from;
- refs/pilot/saved/TIME keeps changes in the working tree that no task
  saved, found by a sync before it puts the base back.

Its own index, .git/pilot-index, is the base with the files' stat data, so
finding what changed in the working tree reads only files whose stat
changed; .git/index gets a copy after each command, so `git status` in the
workspace says the same.

Commands (PILOT_WORKSPACE_DIR or --dir name the workspace, /workspace by
default); each prints one JSON object:

  receive          a sync: its stream on stdin (below) -> {base, changed, saved}
  save ID BASE     commit the working tree on refs/pilot/tasks/ID -> {commit, changed}
  discard ID BASE  drop refs/pilot/tasks/ID, the working tree back to BASE -> {}
  diff BASE COMMIT [MAXPATCH] -> {files: [{path, status, additions,
                   deletions, binary}], patch, patchTruncated}
  raw BASE COMMIT  git diff --raw -z of the two (what apply reads)
  blobs            git cat-file --batch (apply's contents, by blob id)

The stream of receive is one JSON line, {"base": B, "full": F}, then
records (FILE_HEAD below): files and links to write (whatever is in their
place goes, a directory too; a file or a link where a parent directory goes
is replaced by one) and removals. B is the base the sidecar's manifest was
made against ("" for none); with F true the stream holds every file, and
those it does not name are removed. A mismatched base fails with exit
status 3 (STALE): the sidecar then sends everything. Names are relative,
without "." or ".." components, never in a .git directory.

Only Python's standard library and git.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import struct
import time

STALE = 3  # exit status: the workspace's base is not the one the stream was made for
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
PILOT_INDEX = "pilot-index"  # in .git: the base, with the files' stat data
IN_PROGRESS = "pilot-sync"  # in .git while a receive writes files
IDENTITY = {
    "GIT_AUTHOR_NAME": "pilot-sandbox", "GIT_AUTHOR_EMAIL": "pilot-sandbox@localhost",
    "GIT_COMMITTER_NAME": "pilot-sandbox", "GIT_COMMITTER_EMAIL": "pilot-sandbox@localhost",
}
# Settings for the commands this program runs, whatever the workspace's own
# configuration says (it is the agent's to change): no hooks, no file
# system monitor, paths as they are.
GIT_OPTIONS = [
    "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
    "-c", "core.quotePath=false", "-c", "core.safecrlf=false", "-c", "core.autocrlf=false",
]


class Fail(Exception):
    """A refusal or failure, said on stderr; status is the exit status."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


class Workspace:
    def __init__(self, root):
        self.root = root
        self.git_dir = os.path.join(root, ".git")

    def path(self, *names):
        return os.path.join(self.git_dir, *names)

    def git(self, *args, index=PILOT_INDEX, stdin=None):
        """Runs git in the workspace with the given index file (in .git) and
        returns its stdout; a failure raises Fail with git's words."""
        env = dict(os.environ, **IDENTITY)
        env.pop("GIT_DIR", None)
        env.pop("GIT_WORK_TREE", None)
        if index:
            env["GIT_INDEX_FILE"] = self.path(index)
        run = subprocess.run(
            ["git", *GIT_OPTIONS, *args], cwd=self.root, env=env, input=stdin,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if run.returncode != 0:
            words = run.stderr.decode(errors="replace").strip().splitlines()
            raise Fail(f"git {args[0]}: {words[-1] if words else 'exit status %d' % run.returncode}")
        return run.stdout

    def rev(self, name):
        """The commit name names, or "" when there is none."""
        try:
            return self.git("rev-parse", "--verify", "-q", name + "^{commit}").decode().strip()
        except Fail:
            return ""

    def tree_of(self, commit):
        return self.git("rev-parse", commit + "^{tree}").decode().strip() if commit else EMPTY_TREE

    def ensure(self):
        """Makes the workspace a repository if it is not one."""
        if not os.path.isdir(self.root):
            raise Fail(f"{self.root} does not exist: this sandbox's image predates the workspace "
                       "(remove the sandbox and start it again)")
        if os.path.isdir(self.git_dir):
            return
        self.git("init", "-q", "-b", "main", index=None)
        self.git("config", "user.name", IDENTITY["GIT_AUTHOR_NAME"], index=None)
        self.git("config", "user.email", IDENTITY["GIT_AUTHOR_EMAIL"], index=None)
        # Speed over size: a sync writes every file of the project as an
        # object, and zlib's default level costs several times level 1.
        self.git("config", "core.compression", "1", index=None)

    def working_tree(self, base):
        """The tree of the working tree as git sees it: the base's files as
        they are now, and the files added since that .gitignore does not
        ignore. Starts from a copy of the pilot index, so only files whose
        stat changed are read."""
        tmp = "pilot-index-" + str(os.getpid())
        try:
            if os.path.exists(self.path(PILOT_INDEX)):
                copy_index(self.path(PILOT_INDEX), self.path(tmp))
            else:
                self.git("read-tree", base or EMPTY_TREE, index=tmp)
            self.git("add", "-A", ".", index=tmp)
            return self.git("write-tree", index=tmp).decode().strip()
        finally:
            with_missing_ok(os.remove, self.path(tmp))

    def commit(self, tree, parent, message):
        args = ["commit-tree", tree, "-m", message]
        if parent:
            args += ["-p", parent]
        return self.git(*args).decode().strip()

    def reset(self, base):
        """Puts the working tree back to base: its files as they were, and
        the files added since removed, but those .gitignore ignores (a
        project's dependencies and build output stay)."""
        self.git("symbolic-ref", "HEAD", "refs/heads/main", index=None)
        self.git("reset", "-q", "--hard", base)
        self.git("clean", "-q", "-f", "-d")

    def share_index(self):
        """Gives git's own index the pilot index's contents."""
        if os.path.exists(self.path(PILOT_INDEX)):
            copy_index(self.path(PILOT_INDEX), self.path("index"))


def copy_index(src, dst):
    """Copies an index file with its modification time: git takes an entry
    whose file is no older than the index for "racily clean" and reads its
    content, since a file changed within the same second at the same size
    looks unchanged by its stat. A copy made now would hide that."""
    shutil.copy2(src, dst)


def with_missing_ok(fn, *args):
    try:
        fn(*args)
    except FileNotFoundError:
        pass


def check_name(name):
    """A stream entry's name, checked: relative, clean, not in .git."""
    name = name.rstrip("/")
    parts = name.split("/")
    if (not name or name.startswith("/") or "\0" in name
            or any(p in ("", ".", "..") for p in parts)
            or any(p.lower() == ".git" for p in parts)):
        raise Fail(f"refused a stream entry named {name!r}", 2)
    return name


class Writer:
    """Puts a stream's entries in the working tree, making each parent a
    real directory (a file or a link in a parent's place is replaced: the
    host has a directory there)."""

    def __init__(self, root):
        self.root = root
        self.dirs = set()

    def parent(self, name):
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            rel = "/".join(parts[:i])
            if rel in self.dirs:
                continue
            full = os.path.join(self.root, rel)
            try:
                st = os.lstat(full)
                if not stat.S_ISDIR(st.st_mode):
                    os.unlink(full)
                    os.mkdir(full, 0o755)
            except FileNotFoundError:
                os.mkdir(full, 0o755)
            self.dirs.add(rel)

    def clear(self, name):
        """Removes what is at name, a directory with all it holds too."""
        full = os.path.join(self.root, name)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(full)
            self.dirs = {d for d in self.dirs if d != name and not d.startswith(name + "/")}
        else:
            os.unlink(full)

    def remove(self, name):
        """Removes a file or link, and the directories it leaves empty."""
        full = os.path.join(self.root, name)
        try:
            if stat.S_ISDIR(os.lstat(full).st_mode):
                return  # a directory came in its place: its files have entries of their own
            os.unlink(full)
        except FileNotFoundError:
            pass
        parent = os.path.dirname(name)
        while parent:
            try:
                os.rmdir(os.path.join(self.root, parent))
            except OSError:
                break
            self.dirs.discard(parent)
            parent = os.path.dirname(parent)

    def file(self, name, mode, stream, size, packer):
        """Writes size bytes of stream as the file name, and as a blob
        into packer's pack."""
        self.parent(name)
        self.clear(name)
        fd = os.open(os.path.join(self.root, name),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            packer.blob(size)
            while size > 0:
                data = stream.read(min(size, 1 << 20))
                if not data:
                    raise Fail(f"the stream ended in the middle of {name!r}", 2)
                write_all(fd, data)
                packer.write(data)
                size -= len(data)
            packer.write(b"\n")
            os.fchmod(fd, mode & 0o777)
        finally:
            os.close(fd)

    def link(self, name, target):
        self.parent(name)
        self.clear(name)
        os.symlink(target, os.path.join(self.root, name))


def receive(ws, stream, out):
    try:
        head = json.loads(stream.readline())
        expected, full = str(head["base"]), head["full"] is True
    except (ValueError, KeyError, TypeError):
        raise Fail("the stream does not start with its JSON line", 2)
    ws.ensure()
    base = ws.rev("refs/pilot/base")
    if not full and base != expected:
        raise Fail(f"the workspace's base is {base or 'none'}, not {expected or 'none'}", STALE)
    saved = save_unsaved(ws, base) if base else ""
    before = set()
    if base:
        ws.reset(base)
        if full:
            before = set(ws.git("ls-files", "-z").decode("utf-8", "surrogateescape").split("\0")) - {""}
    with open(ws.path(IN_PROGRESS), "w"):
        pass
    written, removed = extract(ws, stream)
    if full:
        gone = before - written
        w = Writer(ws.root)
        for name in gone:
            w.remove(name)
        removed |= gone
    update_index(ws, written, removed - written)
    new, changed = commit_base(ws, base)
    os.remove(ws.path(IN_PROGRESS))
    ws.share_index()
    if changed:
        # Each sync adds a pack: git packs them together once they are
        # many (gc.autoPackLimit), in the background.
        ws.git("gc", "--auto", "--quiet", index=None)
    json.dump({"base": new, "changed": changed, "saved": saved}, out)


def update_index(ws, written, removed):
    """Records the stream's changes in the pilot index: removals first, as
    a removed file may be where a written directory now is."""
    for names, args in ((removed, ["--force-remove"]), (written, ["--add", "--replace"])):
        if names:
            ws.git("update-index", *args, "-z", "--stdin",
                   stdin="\0".join(sorted(names)).encode("utf-8", "surrogateescape"))


# The records of receive's stream (after its JSON line): a kind byte, then
# for F (a file) ">HIQ" mode, name length, size, the name, the content;
# for L (a link) ">II" name length, target length, the name, the target;
# for R (a removal) ">I" name length, the name; E ends the stream. Names and
# targets are bytes, as the host's file system has them.
FILE_HEAD = struct.Struct(">HIQ")
LINK_HEAD = struct.Struct(">II")
NAME_HEAD = struct.Struct(">I")
MAX_NAME = 4096


class Packer:
    """Writes the files' contents into one pack as they come (git
    fast-import, started at the first file), where update-index would
    write each as a loose object, a file of its own: a first sync of
    10,000 files creates half as many files. update-index then finds the
    objects there and only hashes the files, for the index's stat data."""

    def __init__(self, ws):
        self.ws, self.proc = ws, None

    def blob(self, size):
        if self.proc is None:
            self.proc = subprocess.Popen(
                ["git", *GIT_OPTIONS, "fast-import", "--quiet", "--done"], cwd=self.ws.root,
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.write(b"blob\ndata %d\n" % size)

    def write(self, data):
        if self.proc is not None:
            self.proc.stdin.write(data)

    def close(self):
        if self.proc is None:
            return
        _, err = self.proc.communicate(b"done\n")
        if self.proc.returncode != 0:
            raise Fail(f"git fast-import: {err.decode(errors='replace').strip()}")

    def abort(self):
        """Ends fast-import without its pack: the stream broke."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.communicate()


def extract(ws, stream):
    """Writes the stream's records; returns the names written and the names
    removed."""
    packer = Packer(ws)
    try:
        return read_records(Writer(ws.root), packer, stream)
    except BaseException:
        packer.abort()
        raise


def read_records(w, packer, stream):
    written, removed = set(), set()
    while True:
        kind = stream.read(1)
        if kind == b"E":
            packer.close()
            return written, removed
        if kind == b"F":
            mode, name_len, size = FILE_HEAD.unpack(read_exactly(stream, FILE_HEAD.size))
            name = read_name(stream, name_len)
            w.file(name, mode, stream, size, packer)
            written.add(name)
        elif kind == b"L":
            name_len, target_len = LINK_HEAD.unpack(read_exactly(stream, LINK_HEAD.size))
            name = read_name(stream, name_len)
            w.link(name, os.fsdecode(read_exactly(stream, min(target_len, MAX_NAME + 1))))
            written.add(name)
        elif kind == b"R":
            name = read_name(stream, NAME_HEAD.unpack(read_exactly(stream, NAME_HEAD.size))[0])
            w.remove(name)
            removed.add(name)
            written.discard(name)
        else:
            raise Fail(f"the stream ended or is garbled (a record of kind {kind!r})", 2)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exactly(stream, n):
    data = stream.read(n)
    if len(data) != n:
        raise Fail("the stream ended in the middle of a record", 2)
    return data


def read_name(stream, n):
    if n > MAX_NAME:
        raise Fail(f"refused a name of {n} bytes", 2)
    return check_name(os.fsdecode(read_exactly(stream, n)))


def save_unsaved(ws, base):
    """Commits changes in the working tree that no task saved on
    refs/pilot/saved/TIME, and returns that name ("" when there are none).
    A sync that did not finish left the host's files, not changes."""
    if os.path.exists(ws.path(IN_PROGRESS)):
        return ""
    tree = ws.working_tree(base)
    if tree == ws.tree_of(base):
        return ""
    tasks = ws.git("for-each-ref", "--format=%(tree)", "refs/pilot/tasks/", index=None).decode().split()
    if tree in tasks:
        return ""
    name = "refs/pilot/saved/" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    n = 1
    while ws.rev(name):
        n += 1
        name = name.split("~")[0] + f"~{n}"
    ws.git("update-ref", name, ws.commit(tree, base, "pilot-sandbox: changes no task saved"), index=None)
    return name


def commit_base(ws, base):
    """Commits the pilot index as the new base if it differs from base."""
    tree = ws.git("write-tree").decode().strip()
    if base and tree == ws.tree_of(base):
        return base, False
    new = ws.commit(tree, base, "pilot-sandbox: the project's files")
    ws.git("update-ref", "refs/pilot/base", new, index=None)
    ws.git("update-ref", "refs/heads/main", new, index=None)
    ws.git("symbolic-ref", "HEAD", "refs/heads/main", index=None)
    return new, True


def check_id(task_id):
    if not task_id or not all(c.isalnum() or c in "-_" for c in task_id) or len(task_id) > 64:
        raise Fail(f"refused a task id {task_id!r}", 2)
    return task_id


def save(ws, task_id, base, out):
    tree = ws.working_tree(base)
    commit = ws.commit(tree, base, f"pilot-sandbox: task {task_id}")
    ws.git("update-ref", "refs/pilot/tasks/" + check_id(task_id), commit, index=None)
    json.dump({"commit": commit, "changed": tree != ws.tree_of(base)}, out)


def discard(ws, task_id, base, out):
    ref = "refs/pilot/tasks/" + check_id(task_id)
    if ws.rev(ref):
        ws.git("update-ref", "-d", ref, index=None)
    ws.reset(base)
    ws.share_index()
    json.dump({}, out)


STATUS = {"A": "added", "M": "modified", "D": "deleted", "T": "typechange"}


def diff(ws, base, commit, max_patch, out):
    base = base or EMPTY_TREE
    fields = ws.git("diff", "--no-renames", "--name-status", "-z", base, commit, index=None).split(b"\0")
    counts = ws.git("diff", "--no-renames", "--numstat", "-z", base, commit, index=None).split(b"\0")
    files = {}
    for i in range(0, len(fields) - 1, 2):
        path = fields[i + 1].decode(errors="replace")
        files[path] = {"path": path, "status": STATUS.get(fields[i].decode(), "modified"),
                       "additions": 0, "deletions": 0, "binary": False}
    for entry in counts:
        if not entry:
            continue
        added, deleted, path = entry.decode(errors="replace").split("\t", 2)
        f = files.get(path)
        if f is None:
            continue
        if added == "-":
            f["binary"] = True
        else:
            f["additions"], f["deletions"] = int(added), int(deleted)
    patch, truncated = bounded_patch(ws, base, commit, max_patch)
    json.dump({"files": list(files.values()), "patch": patch, "patchTruncated": truncated},
              out, ensure_ascii=False)


def bounded_patch(ws, base, commit, max_patch):
    """The unified diff, at most max_patch bytes of it."""
    proc = subprocess.Popen(["git", *GIT_OPTIONS, "diff", "--no-renames", "--binary", base, commit],
                            cwd=ws.root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    data = proc.stdout.read(max_patch + 1)
    truncated = len(data) > max_patch
    proc.kill()
    proc.wait()
    proc.stdout.close()
    return data[:max_patch].decode(errors="replace"), truncated


def exec_git(ws, *args):
    """Becomes git, run in the workspace with this program's settings: its
    output is the caller's to read."""
    os.chdir(ws.root)
    os.execvp("git", ["git", *GIT_OPTIONS, *args])


def main(argv, stdin, stdout):
    root = os.environ.get("PILOT_WORKSPACE_DIR", "/workspace")
    if argv[:1] == ["--dir"]:
        root, argv = argv[1], argv[2:]
    ws = Workspace(root)
    cmd, args = (argv[0], argv[1:]) if argv else ("", [])
    if cmd == "receive" and not args:
        receive(ws, stdin, stdout)
    elif cmd == "save" and len(args) == 2:
        save(ws, args[0], args[1], stdout)
    elif cmd == "discard" and len(args) == 2:
        discard(ws, args[0], args[1], stdout)
    elif cmd == "raw" and len(args) == 2:
        exec_git(ws, "diff", "--raw", "-z", "--no-renames", "--no-abbrev", args[0] or EMPTY_TREE, args[1])
    elif cmd == "blobs" and not args:
        exec_git(ws, "cat-file", "--batch")
    elif cmd == "diff" and len(args) in (2, 3):
        diff(ws, args[0], args[1], int(args[2]) if len(args) == 3 else 8 << 20, stdout)
    else:
        raise Fail("usage: workspace.py [--dir DIR] receive | save ID BASE | discard ID BASE | "
                   "diff BASE COMMIT [MAXPATCH] | raw BASE COMMIT | blobs", 2)
    stdout.write("\n")


if __name__ == "__main__":
    try:
        main(sys.argv[1:], sys.stdin.buffer, sys.stdout)
    except Fail as e:
        print(f"pilot-workspace: {e}", file=sys.stderr)
        sys.exit(e.status)
    except OSError as e:
        print(f"pilot-workspace: {e}", file=sys.stderr)
        sys.exit(1)
