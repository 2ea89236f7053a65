"""Tests of the task runner on this machine (Linux, for /proc and
PR_SET_CHILD_SUBREAPER): records, exit statuses, long lines and floods,
cancel and timeout of processes that fork away or ignore SIGTERM, follow
from a record, a supervisor that is gone.

    cd resources/tasks && python3 -m unittest -v
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import runner

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "runner.py")


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


class RunnerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.home = self.tmp.name
        self.workspace = os.path.join(self.home, "workspace")
        os.mkdir(self.workspace)
        self.env = dict(os.environ, HOME=self.home, PILOT_WORKSPACE_DIR=self.workspace, PILOT_TASK="t")

    def tearDown(self):
        self.tmp.cleanup()

    def run_cmd(self, *args, timeout=60):
        return subprocess.run([sys.executable, "-I", "-u", PROGRAM, *args], env=self.env,
                              capture_output=True, timeout=timeout)

    def start(self, task_id, *argv, timeout=60.0):
        """Starts a task without following it: the records come from follow."""
        return subprocess.Popen([sys.executable, "-I", "-u", PROGRAM, "start", task_id, str(timeout), "5", "--", *argv],
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def records(self, out):
        return [json.loads(line) for line in out.decode().splitlines() if line]

    def task(self, *argv, timeout=60.0, task_id="t1"):
        res = self.run_cmd("start", task_id, str(timeout), "5", "--", *argv)
        self.assertEqual(res.returncode, 0, res.stderr)
        return self.records(res.stdout)

    def wait_for_started(self, task_id):
        """Returns the pid of the task's program once it started."""
        path = os.path.join(self.home, ".pilot-tasks", task_id, "events")
        for _ in range(200):
            if os.path.exists(path):
                with open(path) as f:
                    for line in f:
                        record = json.loads(line)
                        if "started" in record:
                            return record["started"]["pid"]
            time.sleep(0.02)
        self.fail("the task did not start")

    def test_a_command_s_lines_come_in_order_and_it_ends(self):
        recs = self.task("sh", "-c", "echo one; echo two >&2; sleep 0.1; printf 'three\\nno newline'; pwd")
        self.assertIn("started", recs[0])
        lines = [(r["stream"], r["line"]) for r in recs if "line" in r]
        self.assertEqual(lines, [("stdout", "one"), ("stderr", "two"), ("stdout", "three"),
                                 ("stdout", "no newline" + self.workspace)])
        self.assertEqual([r["seq"] for r in recs], list(range(1, len(recs) + 1)))
        end = recs[-1]["end"]
        self.assertEqual((end["status"], end["exitCode"], end["droppedLines"]), ("succeeded", 0, 0))

    def test_the_environment_is_the_exec_s(self):
        recs = self.task("sh", "-c", "echo $PILOT_TASK")
        self.assertEqual([r["line"] for r in recs if "line" in r], ["t"])

    def test_a_failure_and_a_missing_program(self):
        end = self.task("sh", "-c", "exit 3")[-1]["end"]
        self.assertEqual((end["status"], end["exitCode"]), ("failed", 3))
        recs = self.run_cmd("start", "t2", "60", "1", "--", "no-such-program-here")
        recs = self.records(recs.stdout)
        self.assertEqual(recs[-1]["end"]["exitCode"], 127)
        self.assertTrue(any("cannot run" in r.get("line", "") for r in recs))

    def test_a_long_line_is_cut_and_says_how_long_it_was(self):
        recs = self.task(sys.executable, "-c", "import sys; sys.stdout.write('x' * (3 << 20) + '\\nafter\\n')")
        lines = [r for r in recs if "line" in r]
        self.assertEqual(len(lines[0]["line"]), runner.MAX_LINE)
        self.assertEqual(lines[0]["cut"], 3 << 20)
        self.assertEqual(lines[1]["line"], "after")

    def test_a_flood_stops_at_the_bound_and_the_rest_is_in_the_output_file(self):
        n = runner.MAX_RECORDS + 5000
        recs = self.task(sys.executable, "-c", f"print('\\n'.join(str(i) for i in range({n})))")
        lines = [r for r in recs if "line" in r]
        self.assertEqual(len(lines), runner.MAX_RECORDS)
        self.assertEqual(sum("flood" in r for r in recs), 1)
        self.assertEqual(recs[-1]["end"]["droppedLines"], 5000)
        with open(os.path.join(self.home, ".pilot-tasks", "t1", "output"), "rb") as f:
            self.assertEqual(f.read().count(b"\n"), n)

    def test_cancel_ends_children_that_fork_away_and_ignore_sigterm(self):
        # The task's grandchild leaves its session and ignores SIGTERM;
        # its child sleeps. All must end.
        script = (
            "import os, signal, sys, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "        os.write(1, b'stubborn %d\\n' % os.getpid())\n"
            "        time.sleep(300)\n"
            "    os._exit(0)\n"
            "os.system('sleep 300 &')\n"
            "os.write(1, b'parent %d\\n' % os.getpid())\n"
            "time.sleep(300)\n"
        )
        proc = self.start("t3", sys.executable, "-c", script)
        self.wait_for_started("t3")
        time.sleep(0.5)
        started = time.monotonic()
        res = self.run_cmd("cancel", "t3")
        self.assertEqual(res.returncode, 0, res.stderr)
        out, _ = proc.communicate(timeout=30)
        recs = self.records(out)
        self.assertEqual(recs[-1]["end"]["status"], "cancelled")
        self.assertGreaterEqual(time.monotonic() - started, runner.GRACE - 0.5, "SIGKILL came before the grace")
        pids = [int(r["line"].split()[1]) for r in recs if "line" in r]
        self.assertEqual(len(pids), 2, recs)
        for pid in pids:
            self.assertFalse(alive(pid), f"process {pid} outlived the cancel")
        self.assertEqual(self.run_cmd("cancel", "t3").returncode, 3, "a task that ended is not running")

    def test_a_timeout_ends_the_task(self):
        started = time.monotonic()
        recs = self.task("sh", "-c", "sleep 300", timeout=1.0)
        self.assertEqual(recs[-1]["end"]["status"], "timed_out")
        self.assertLess(time.monotonic() - started, 10)

    def test_what_a_task_leaves_in_the_background_stays_when_it_ends_by_itself(self):
        recs = self.task("sh", "-c", "sleep 300 & echo $!")
        pid = int(next(r["line"] for r in recs if "line" in r))
        self.assertEqual(recs[-1]["end"]["status"], "succeeded")
        self.assertTrue(alive(pid))
        os.kill(pid, signal.SIGKILL)

    def test_follow_from_a_record(self):
        self.task("sh", "-c", "echo a; echo b; echo c")
        res = self.run_cmd("follow", "t1", "2")
        recs = self.records(res.stdout)
        self.assertEqual(recs[0]["seq"], 3)
        self.assertIn("end", recs[-1])

    def test_a_supervisor_that_is_gone_is_reported_lost(self):
        proc = self.start("t4", "sleep", "300")
        sleeper = self.wait_for_started("t4")
        # The supervisor may write its first record before the start has
        # written its pid down.
        pid = os.path.join(self.home, ".pilot-tasks", "t4", "pid")
        for _ in range(200):
            if os.path.exists(pid):
                break
            time.sleep(0.02)
        with open(pid) as f:
            supervisor = int(f.read())
        os.kill(supervisor, signal.SIGKILL)
        out, _ = proc.communicate(timeout=30)
        recs = self.records(out)
        self.assertIn("lost", recs[-1])
        res = self.run_cmd("follow", "t4", "0")
        self.assertIn("lost", self.records(res.stdout)[-1])
        os.kill(sleeper, signal.SIGKILL)

    def test_running_lists_the_tasks_whose_supervisor_runs(self):
        self.task("true")
        proc = self.start("t5", "sleep", "300")
        self.wait_for_started("t5")
        res = self.run_cmd("running")
        self.assertEqual(json.loads(res.stdout), ["t5"])
        self.run_cmd("cancel", "t5")
        proc.communicate(timeout=30)
        self.assertEqual(json.loads(self.run_cmd("running").stdout), [])

    def test_a_start_past_the_limit_is_refused(self):
        proc = self.start("t6", "sleep", "300")
        self.wait_for_started("t6")
        res = self.run_cmd("start", "t7", "60", "1", "--", "true")
        self.assertEqual(res.returncode, runner.BUSY)
        self.assertIn(b"t6", res.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.home, ".pilot-tasks", "t7")))
        self.run_cmd("cancel", "t6")
        proc.communicate(timeout=30)

    def test_old_task_directories_are_pruned(self):
        for i in range(runner.KEEP_TASKS + 3):
            os.makedirs(os.path.join(self.home, ".pilot-tasks", f"old{i}"))
        self.task("true", task_id="new")
        left = [n for n in os.listdir(os.path.join(self.home, ".pilot-tasks")) if not n.startswith(".")]
        self.assertEqual(len(left), runner.KEEP_TASKS)
        self.assertIn("new", left)

    def test_bad_ids_are_refused(self):
        for task_id in ("../x", "", "a/b"):
            res = self.run_cmd("follow", task_id, "0")
            self.assertEqual(res.returncode, 2, task_id)


if __name__ == "__main__":
    unittest.main()
