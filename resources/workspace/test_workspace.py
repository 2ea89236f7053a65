"""Tests of the workspace program against a real git, in a temporary
directory: syncs (first, incremental, full, stale), what a sync keeps and
saves, the refusals, and a task's save, diff and discard.

    cd resources/workspace && python3 -m unittest -v
"""

import io
import json
import os
import subprocess
import tempfile
import time
import unittest

import workspace


def stream(entries, base="", full=False, end=True):
    """A receive stream: entries are (name, data) for a file, (name, data,
    mode), (name, "->target") for a link, or (name, "remove")."""
    buf = io.BytesIO()
    buf.write(json.dumps({"base": base, "full": full}).encode() + b"\n")
    for entry in entries:
        buf.write(record(*entry))
    if end:
        buf.write(b"E")
    buf.seek(0)
    return buf


def record(name, what, mode=0o644):
    name = name.encode()
    if what == "remove":
        return b"R" + workspace.NAME_HEAD.pack(len(name)) + name
    if isinstance(what, str) and what.startswith("->"):
        target = what[2:].encode()
        return b"L" + workspace.LINK_HEAD.pack(len(name), len(target)) + name + target
    return b"F" + workspace.FILE_HEAD.pack(mode, len(name), len(what)) + name + what


class WorkspaceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "workspace")
        os.mkdir(self.root)
        self.ws = workspace.Workspace(self.root)

    def tearDown(self):
        self.tmp.cleanup()

    def run_cmd(self, *argv, stdin=None):
        out = io.StringIO()
        workspace.main(["--dir", self.root, *argv], stdin, out)
        return json.loads(out.getvalue())

    def receive(self, entries, base=None, full=False):
        if base is None:
            base = self.ws.rev("refs/pilot/base") if os.path.isdir(self.ws.git_dir) else ""
        return self.run_cmd("receive", stdin=stream(entries, base, full))

    def read(self, name):
        with open(os.path.join(self.root, name), "rb") as f:
            return f.read()

    def write(self, name, data):
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    def git(self, *args):
        return subprocess.run(["git", *args], cwd=self.root, check=True,
                              capture_output=True).stdout.decode()

    def test_first_sync_writes_files_links_and_modes_and_commits_them(self):
        got = self.receive([("a.txt", b"one\n"), ("bin/run", b"#!/bin/sh\n", 0o755),
                            ("deep/er/x", b"x"), ("link", "->a.txt"), ("out", "->../../etc/passwd")])
        self.assertTrue(got["changed"])
        self.assertEqual(got["base"], self.ws.rev("refs/pilot/base"))
        self.assertEqual(got["base"], self.ws.rev("HEAD"))
        self.assertEqual(self.read("a.txt"), b"one\n")
        self.assertTrue(os.stat(os.path.join(self.root, "bin/run")).st_mode & 0o100)
        self.assertEqual(os.readlink(os.path.join(self.root, "out")), "../../etc/passwd")
        self.assertEqual(sorted(self.git("ls-tree", "-r", "--name-only", "HEAD").split()),
                         ["a.txt", "bin/run", "deep/er/x", "link", "out"])
        self.assertIn("120000", self.git("ls-tree", "HEAD", "link"))
        self.assertEqual(self.git("status", "--porcelain"), "", "git status in the workspace sees no change")

    def test_an_incremental_sync_changes_adds_and_removes_on_a_new_commit(self):
        first = self.receive([("a", b"1"), ("gone/x", b"x"), ("keep", b"k")])["base"]
        got = self.receive([("a", b"2"), ("new", b"n"), ("gone/x", "remove")])
        self.assertTrue(got["changed"])
        self.assertEqual(self.git("rev-parse", got["base"] + "^").strip(), first)
        self.assertEqual(self.read("a"), b"2")
        self.assertFalse(os.path.exists(os.path.join(self.root, "gone")), "an emptied directory is removed")
        self.assertEqual(sorted(self.git("ls-files").split()), ["a", "keep", "new"])

    def test_a_sync_without_changes_keeps_the_base(self):
        first = self.receive([("a", b"1")])["base"]
        got = self.receive([])
        self.assertEqual(got, {"base": first, "changed": False, "saved": ""})
        got = self.receive([("a", b"1")])  # sent again, same content
        self.assertEqual(got["base"], first)
        self.assertFalse(got["changed"])

    def test_a_stream_made_for_another_base_is_stale(self):
        self.receive([("a", b"1")])
        with self.assertRaises(workspace.Fail) as cm:
            self.receive([("a", b"2")], base="0" * 40)
        self.assertEqual(cm.exception.status, workspace.STALE)
        self.assertEqual(self.read("a"), b"1", "a stale stream writes nothing")

    def test_a_full_sync_removes_what_it_does_not_name(self):
        self.receive([("a", b"1"), ("b/c", b"2")])
        got = self.receive([("a", b"1")], base="whatever", full=True)
        self.assertTrue(got["changed"])
        self.assertEqual(self.git("ls-files").split(), ["a"])
        self.assertFalse(os.path.exists(os.path.join(self.root, "b")))

    def test_a_file_becomes_a_directory_and_back(self):
        self.receive([("a", b"file")])
        self.receive([("a", "remove"), ("a/b", b"inside")])
        self.assertEqual(self.read("a/b"), b"inside")
        self.write("a/ignored-by-the-host", b"x")
        self.receive([("a/b", "remove"), ("a", b"file again")])
        self.assertEqual(self.read("a"), b"file again")
        self.assertEqual(self.git("ls-files").split(), ["a"])

    def test_changes_no_task_saved_are_kept_on_a_ref_and_the_tree_goes_back_to_base(self):
        self.write(".gitignore", b"node_modules/\n")
        base = self.receive([(".gitignore", b"node_modules/\n"), ("a", b"host")])["base"]
        self.write("a", b"edited inside")
        self.write("added", b"new inside")
        self.write("node_modules/dep/index.js", b"ignored")
        got = self.receive([])
        self.assertTrue(got["saved"].startswith("refs/pilot/saved/"), got)
        self.assertEqual(got["base"], base)
        saved = self.git("show", got["saved"] + ":a")
        self.assertEqual(saved, "edited inside")
        self.assertEqual(self.git("show", got["saved"] + ":added"), "new inside")
        self.assertEqual(self.read("a"), b"host")
        self.assertFalse(os.path.exists(os.path.join(self.root, "added")))
        self.assertEqual(self.read("node_modules/dep/index.js"), b"ignored", "ignored files stay")

    def test_changes_a_task_saved_are_not_saved_again(self):
        base = self.receive([("a", b"host")])["base"]
        self.write("a", b"task")
        self.run_cmd("save", "t1", base)
        self.assertEqual(self.receive([])["saved"], "")
        self.assertEqual(self.read("a"), b"host")

    def test_a_link_planted_where_a_directory_was_is_not_written_through(self):
        outside = os.path.join(self.tmp.name, "outside")
        os.mkdir(outside)
        self.receive([("src/x", b"1")])
        os.remove(os.path.join(self.root, "src/x"))
        os.rmdir(os.path.join(self.root, "src"))
        os.symlink(outside, os.path.join(self.root, "src"))
        self.receive([("src/x", b"2"), ("src/y", b"3")])
        self.assertEqual(os.listdir(outside), [])
        self.assertFalse(os.path.islink(os.path.join(self.root, "src")))
        self.assertEqual(self.read("src/y"), b"3")

    def test_a_hard_link_is_replaced_not_written_through(self):
        other = os.path.join(self.tmp.name, "other")
        with open(other, "wb") as f:
            f.write(b"mine")
        self.receive([("a", b"1")])
        os.remove(os.path.join(self.root, "a"))
        os.link(other, os.path.join(self.root, "a"))
        self.git("add", "a")  # as if the host's content had been this
        self.receive([("a", b"host")], base=self.ws.rev("refs/pilot/base"))
        with open(other, "rb") as f:
            self.assertEqual(f.read(), b"mine")

    def test_a_stream_cut_short_writes_no_base(self):
        base = self.receive([("a", b"1")])["base"]
        cut = stream([("a", b"2"), ("b", b"3")], base, end=False)
        with self.assertRaises(workspace.Fail):
            self.run_cmd("receive", stdin=io.BytesIO(cut.getvalue()[:-1]))
        with self.assertRaises(workspace.Fail):
            self.run_cmd("receive", stdin=cut)
        self.assertEqual(self.ws.rev("refs/pilot/base"), base)
        got = self.receive([("a", b"2")])
        self.assertEqual(got["saved"], "", "a sync that did not finish leaves nothing to save")
        self.assertEqual(self.git("ls-files").split(), ["a"])
        self.assertFalse(os.path.exists(os.path.join(self.root, "b")))

    def test_names_that_leave_the_workspace_or_reach_git_are_refused(self):
        for name in ("../x", "a/../../x", "/etc/x", ".git/config", "a/.GIT/hooks/x", "./a"):
            with self.subTest(name=name):
                with self.assertRaises(workspace.Fail) as cm:
                    self.receive([(name, b"x")], base="")
                self.assertEqual(cm.exception.status, 2)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "x")))

    def test_a_task_is_saved_and_diffed_against_its_base(self):
        base = self.receive([("a", b"1\n2\n"), ("gone", b"g\n"), ("img", b"\x00\x01")])["base"]
        self.write("a", b"1\nTWO\n3\n")
        os.remove(os.path.join(self.root, "gone"))
        self.write("new/file", b"n\n")
        self.write("img", b"\x00\x02\x03")
        saved = self.run_cmd("save", "t1", base)
        self.assertTrue(saved["changed"])
        self.assertEqual(self.ws.rev("refs/pilot/tasks/t1"), saved["commit"])
        self.assertEqual(self.git("rev-parse", saved["commit"] + "^").strip(), base)
        got = self.run_cmd("diff", base, saved["commit"])
        files = {f["path"]: f for f in got["files"]}
        self.assertEqual(files["a"], {"path": "a", "status": "modified", "additions": 2, "deletions": 1, "binary": False})
        self.assertEqual(files["gone"]["status"], "deleted")
        self.assertEqual(files["new/file"]["status"], "added")
        self.assertTrue(files["img"]["binary"])
        self.assertIn("+TWO", got["patch"])
        self.assertIn("GIT binary patch", got["patch"])
        self.assertFalse(got["patchTruncated"])
        cut = self.run_cmd("diff", base, saved["commit"], "20")
        self.assertEqual(len(cut["patch"]), 20)
        self.assertTrue(cut["patchTruncated"])

    def test_a_change_within_the_same_second_at_the_same_size_is_seen(self):
        # The sync writes a file and the task rewrites it at the same size
        # within that second; the save comes a second later.
        time.sleep(1 - time.time() % 1)
        base = self.receive([("a", b"base")])["base"]
        self.write("a", b"task")
        time.sleep(1.05 - time.time() % 1)
        saved = self.run_cmd("save", "t1", base)
        self.assertTrue(saved["changed"], "the task's change was missed")
        self.assertEqual(self.git("show", saved["commit"] + ":a"), "task")

    def test_discard_drops_the_task_and_puts_the_base_back(self):
        base = self.receive([("a", b"host")])["base"]
        self.write("a", b"task")
        self.write("added", b"x")
        self.run_cmd("save", "t1", base)
        self.run_cmd("discard", "t1", base)
        self.assertEqual(self.ws.rev("refs/pilot/tasks/t1"), "")
        self.assertEqual(self.read("a"), b"host")
        self.assertFalse(os.path.exists(os.path.join(self.root, "added")))

    def test_a_task_id_is_checked(self):
        base = self.receive([("a", b"1")])["base"]
        with self.assertRaises(workspace.Fail):
            self.run_cmd("save", "../../heads/main", base)

    def test_a_missing_workspace_says_what_to_do(self):
        self.tmp.cleanup()
        with self.assertRaises(workspace.Fail) as cm:
            self.receive([("a", b"1")], base="")
        self.assertIn("remove the sandbox", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
