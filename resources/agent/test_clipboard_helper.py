"""Tests of pilot-clipboard (resources/docker/sandbox/websockify/pilot_clipboard.py),
the desktop's watcher that copies each new CLIPBOARD into CUT_BUFFER0 for
x11vnc, under a private Xvfb: what it writes, seen by another X client that
watches the root window's CUT_BUFFER0. Most run it as a program; the
sandbox runs it on a thread of websockify's process, as ClipboardThreadTest
does.

They run where the image has it, Xvfb and xclip (`go test ./resources -run
TestAgentPython` runs them in a sandbox); elsewhere they skip like the
agent's X tests. The source tree's copy is tested when it is beside these
tests, else the image's /usr/local/lib/pilot-websockify/pilot_clipboard.py.
"""

import ctypes
import os
import subprocess
import sys
import unittest

from xserver import REQUIRE_ENV, X, XEvent, Xvfb, _proto, need_xvfb, poll

HERE = os.path.dirname(os.path.abspath(__file__))
HELPERS = [os.path.join(HERE, "..", "docker", "sandbox", "websockify", "pilot_clipboard.py"),
           "/usr/local/lib/pilot-websockify/pilot_clipboard.py"]
MAX_TEXT = 262144  # x11vnc's PROP_MAX, which the helper keeps to
PROPERTY_NOTIFY, PROPERTY_CHANGE_MASK, XA_CUT_BUFFER0 = 28, 1 << 22, 9


class XPropertyEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
        ("display", ctypes.c_void_p), ("window", ctypes.c_ulong), ("atom", ctypes.c_ulong),
        ("time", ctypes.c_ulong), ("state", ctypes.c_int),
    ]


_proto(X.XFetchBytes, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int))
_proto(X.XCreateSimpleWindow, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_int,
       ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_ulong, ctypes.c_ulong)
_proto(X.XSetSelectionOwner, ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)


def helper_path(test):
    for path in HELPERS:
        if os.path.exists(path):
            return path
    msg = "no pilot-clipboard here (%s)" % " or ".join(HELPERS)
    if os.environ.get(REQUIRE_ENV) == "1":
        test.fail(msg)
    raise unittest.SkipTest(msg)


class CutBufferWatch:
    """An X client that counts the changes of the root window's
    CUT_BUFFER0 and reads it."""

    def __init__(self, xvfb):
        self.d = X.XOpenDisplay(xvfb.display.encode())
        if not self.d:
            raise AssertionError("cannot open %s" % xvfb.display)
        self.root = X.XDefaultRootWindow(self.d)
        X.XSelectInput(self.d, self.root, PROPERTY_CHANGE_MASK)
        X.XSync(self.d, 0)

    def close(self):
        if self.d:
            X.XCloseDisplay(self.d)
            self.d = None

    def changes(self):
        """How many times CUT_BUFFER0 changed since the last call."""
        X.XSync(self.d, 0)
        n, ev = 0, XEvent()
        while X.XPending(self.d):
            X.XNextEvent(self.d, ctypes.byref(ev))
            prop = ctypes.cast(ctypes.byref(ev), ctypes.POINTER(XPropertyEvent)).contents
            if ev.type == PROPERTY_NOTIFY and prop.atom == XA_CUT_BUFFER0:
                n += 1
        return n

    def value(self):
        n = ctypes.c_int()
        data = X.XFetchBytes(self.d, ctypes.byref(n))
        if not data:
            return b""
        out = ctypes.string_at(data, n.value)
        X.XFree(data)
        return out

    def store(self, data):
        X.XStoreBytes(self.d, data, len(data))
        X.XSync(self.d, 0)


class ClipboardHelperTest(unittest.TestCase):
    def setUp(self):
        need_xvfb(self)
        path = helper_path(self)
        self.xvfb = Xvfb()
        self.addCleanup(self.xvfb.close)
        self.watch = CutBufferWatch(self.xvfb)
        self.addCleanup(self.watch.close)
        self.helper = subprocess.Popen([sys.executable, "-B", path], env=self.xvfb.env(),
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.addCleanup(self.stop_helper)
        self.await_helper()

    def stop_helper(self):
        self.helper.terminate()
        self.helper.wait(timeout=10)

    def await_helper(self):
        """Copies until the helper, which may not yet be watching, hands a
        copy on."""
        for i in range(50):
            self.copy(b"ready %d" % i)
            try:
                poll("the helper's first copy", lambda: self.watch.value() == b"ready %d" % i, timeout=0.2)
                self.watch.changes()
                return
            except AssertionError:
                self.assertIsNone(self.helper.poll(), "pilot-clipboard exited")
        self.fail("pilot-clipboard never copied the clipboard into CUT_BUFFER0")

    def copy(self, data, *flags):
        """Copies as a program of the sandbox does, with xclip; returns once
        xclip owns the clipboard (or, with -quiet, has exited)."""
        # xclip's child keeps serving the clipboard and holds the output it
        # was given: with none, only xclip itself is waited for.
        p = subprocess.run(["xclip", "-selection", "clipboard", "-in", *flags], input=data, env=self.xvfb.env(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        self.assertEqual(p.returncode, 0)

    def test_each_copy_reaches_the_cut_buffer(self):
        # As Latin-1, what RFB carries, '?' for each character beyond it.
        for data, want in [(b"plain text", b"plain text"), ("h\u00e9llo \u2713 \u65e5".encode(), b"h\xe9llo ? ?"),
                           (b"two\nlines\ttabbed", b"two\nlines\ttabbed")]:
            with self.subTest(data=data):
                self.copy(data)
                poll("%r in CUT_BUFFER0" % want, lambda: self.watch.value() == want)

    def test_a_copy_made_before_it_started_is_handed_on(self):
        self.stop_helper()
        self.copy(b"copied while it was down")
        self.helper = subprocess.Popen([sys.executable, "-B", helper_path(self)], env=self.xvfb.env(),
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        poll("the earlier copy in CUT_BUFFER0", lambda: self.watch.value() == b"copied while it was down")

    def test_latin1_served_as_utf8_is_taken_over(self):
        # What x11vnc does with a viewer's paste: Latin-1 bytes, served
        # for UTF8_STRING too. Programs must read the characters as UTF-8.
        self.copy(b"h\xe9llo \xa9")
        poll("the text in CUT_BUFFER0", lambda: self.watch.value() == b"h\xe9llo \xa9")
        for target, want in [("UTF8_STRING", "h\u00e9llo \u00a9".encode()), ("STRING", b"h\xe9llo \xa9")]:
            with self.subTest(target=target):
                poll("%s read as %r" % (target, want), lambda: self.paste(target) == want)

    def paste(self, target):
        p = subprocess.run(["xclip", "-selection", "clipboard", "-out", "-target", target], env=self.xvfb.env(),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30)
        return p.stdout

    def test_text_already_in_the_cut_buffer_is_not_written_again(self):
        # What a viewer pastes: x11vnc puts it in CUT_BUFFER0 and takes the
        # CLIPBOARD with it. Written again, x11vnc would send it back to
        # the viewer.
        self.watch.store(b"pasted by a viewer")
        self.assertEqual(self.watch.changes(), 1)
        # xclip -quiet -loops 1 exits once it has answered one request:
        # the helper's, which it then acts on before it hears of the next
        # owner.
        self.copy(b"pasted by a viewer", "-quiet", "-loops", "1")
        self.copy(b"copied after")
        poll("the next copy in CUT_BUFFER0", lambda: self.watch.value() == b"copied after")
        self.assertEqual(self.watch.changes(), 1, "CUT_BUFFER0 written again with the text it held")

    def test_a_copy_longer_than_x11vnc_reads_is_cut_to_its_limit(self):
        data = b"0123456789abcdef" * (MAX_TEXT // 16 + 1000)
        self.copy(data)
        poll("the copy's first %d bytes in CUT_BUFFER0" % MAX_TEXT, lambda: self.watch.value() == data[:MAX_TEXT])

    def test_an_owner_that_never_answers_changes_nothing(self):
        # A client of the sandbox that takes the clipboard and ignores
        # every request for it.
        d = X.XOpenDisplay(self.xvfb.display.encode())
        self.addCleanup(X.XCloseDisplay, d)
        silent = X.XCreateSimpleWindow(d, X.XDefaultRootWindow(d), 0, 0, 1, 1, 0, 0, 0)
        X.XSetSelectionOwner(d, X.XInternAtom(d, b"CLIPBOARD", 0), silent, 0)
        X.XSync(d, 0)
        self.copy(b"text again")
        poll("the next copy in CUT_BUFFER0", lambda: self.watch.value() == b"text again")
        self.assertEqual(self.watch.changes(), 1)
        self.assertIsNone(self.helper.poll(), "pilot-clipboard exited")


# THREADED runs the watcher as websockify's launcher does, on a thread of a
# process whose main thread does something else (here: sleeps), and forks
# a child as websockify does for each viewer.
THREADED = """
import os, sys, time
sys.path.insert(0, os.path.dirname(sys.argv[1]))
import pilot_clipboard
pilot_clipboard.start()
if os.fork() == 0:
    time.sleep(60)
    os._exit(0)
time.sleep(60)
"""


class ClipboardThreadTest(unittest.TestCase):
    """The watcher on a thread of another program's process: copies are
    handed on, and the display's loss ends the process, with a word in its
    log, for the entrypoint to start it again (never a process that lives
    on without its watcher)."""

    def setUp(self):
        need_xvfb(self)
        path = helper_path(self)
        self.xvfb = Xvfb()
        self.addCleanup(self.xvfb.close)
        self.watch = CutBufferWatch(self.xvfb)
        self.addCleanup(self.watch.close)
        self.proc = subprocess.Popen([sys.executable, "-B", "-c", THREADED, path], env=self.xvfb.env(),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self.addCleanup(self.stop)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
        self.proc.wait(timeout=10)
        self.proc.stderr.close()

    def test_copies_are_handed_on_and_a_lost_display_ends_the_process(self):
        for i in range(50):
            data = b"from the thread %d" % i
            subprocess.run(["xclip", "-selection", "clipboard", "-in"], input=data, env=self.xvfb.env(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=True)
            try:
                poll("the thread's copy", lambda: self.watch.value() == data, timeout=0.2)
                break
            except AssertionError:
                self.assertIsNone(self.proc.poll(), "the process ended")
        else:
            self.fail("the thread never copied the clipboard into CUT_BUFFER0")
        self.watch.close()  # before its display goes, or Xlib would end this test
        self.xvfb.close()
        self.assertEqual(self.proc.wait(timeout=10), 1)
        self.assertIn(b"pilot-clipboard: lost the display", self.proc.stderr.read())


if __name__ == "__main__":
    unittest.main()
