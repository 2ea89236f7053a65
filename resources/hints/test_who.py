"""Tests of pilot_who.py: the table parsing on captured lines, and the whole
lookup on a real connection of this process's own."""

import io
import json
import os
import socket
import subprocess
import sys
import unittest

import pilot_who

# Lines of /proc/net/tcp as the kernel writes them (trimmed of the columns
# after the inode): a listener on 15080, a connection from port 43210
# (0xA8CA) established, one from the same port in TIME_WAIT (06), and the
# proxy's side of the first (local 15001, remote 43210).
TABLE = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:3AE8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 1111 1
   1: 020012AC:A8CA 050012C6:01BB 01 00000000:00000000 00:00000000 00000000  1000        0 2222 1
   2: 020012AC:A8CA 060012C6:01BB 06 00000000:00000000 00:00000000 00000000  1000        0 0 1
   3: 050012C6:3A99 020012AC:A8CA 01 00000000:00000000 00:00000000 00000000  1002        0 3333 1
""".splitlines(True)


class Table(unittest.TestCase):
    def test_the_connections_own_socket_only(self):
        self.assertEqual(pilot_who.inodes_in(TABLE[1:], "A8CA"), ["2222"])

    def test_nothing_for_another_port(self):
        self.assertEqual(pilot_who.inodes_in(TABLE[1:], "0050"), [])

    def test_short_lines_are_skipped(self):
        self.assertEqual(pilot_who.inodes_in(["garbage\n", "\n"], "A8CA"), [])


class Cause(unittest.TestCase):
    def test_found(self):
        self.assertEqual(pilot_who.cause_of(b"A=1\0PILOT_CAUSE=0123abcd\0B=2\0"), "0123abcd")

    def test_absent(self):
        self.assertIsNone(pilot_who.cause_of(b"A=1\0B=2\0"))

    def test_hostile_values_are_dropped(self):
        for value in (b"", b"x" * 65, b"a b", b"\xff", b"1;rm"):
            self.assertIsNone(pilot_who.cause_of(b"PILOT_CAUSE=" + value + b"\0"))


class Lookup(unittest.TestCase):
    """A connection of a child process, looked up by its source port as
    the sidecar does."""

    def setUp(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(1)
        self.addCleanup(self.server.close)
        port = self.server.getsockname()[1]
        env = dict(os.environ, PILOT_CAUSE="feedface01")
        # The parent has the cause; the connecting child's environment is
        # cleared, so the cause is found through its parent.
        script = (
            "import os, socket, subprocess, sys;"
            "subprocess.run([sys.executable, '-c', "
            "'import socket, sys; c = socket.create_connection((\"127.0.0.1\", %d)); "
            "print(c.getsockname()[1], flush=True); sys.stdin.read()'], env={})" % port
        )
        self.child = subprocess.Popen([sys.executable, "-c", script], env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.addCleanup(self.stop)
        self.src = int(self.child.stdout.readline())
        self.accepted, _ = self.server.accept()
        self.addCleanup(self.accepted.close)

    def stop(self):
        self.child.stdin.close()
        self.child.wait(10)
        self.child.stdout.close()

    def test_the_process_and_its_cause(self):
        answer = pilot_who.who(self.src)
        self.assertEqual(answer["port"], self.src)
        self.assertIn("socket.create_connection", answer["command"])
        self.assertNotEqual(answer["pid"], self.child.pid)  # the grandchild
        self.assertEqual(answer["cause"], "feedface01")

    def test_the_line_protocol(self):
        out = io.StringIO()
        pilot_who.main(io.StringIO("%d\nnot a port\n0\n70000\n1\n" % self.src), out)
        answers = [json.loads(line) for line in out.getvalue().splitlines()]
        self.assertEqual([a["port"] for a in answers], [self.src, 1])
        self.assertEqual(answers[0]["cause"], "feedface01")
        self.assertEqual(answers[1], {"port": 1})


if __name__ == "__main__":
    unittest.main()
