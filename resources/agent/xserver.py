"""Test support for the desktop agent: a private Xvfb, the agent running in it
as the sidecar runs it, and an observer, an X client of its own that sees
what the agent's requests did (pointer, key and button events, the keyboard
map, the cut buffer) and draws on the screen.

Not a test module; the tests import it. Only the standard library and libX11,
like the agent.
"""

import collections
import ctypes
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import time
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT = os.path.join(HERE, "agent.py")

# Set (as the Go test that runs these tests in the sandbox image does) to make
# a missing Xvfb a failure instead of a skip.
REQUIRE_ENV = "PILOT_AGENT_REQUIRE_X"


def need_xvfb(test):
    """Skips test (or fails it, under REQUIRE_ENV) where Xvfb or xclip
    (which the agent runs for the clipboard) is missing."""
    missing = [p for p in ("Xvfb", "xclip") if not shutil.which(p)]
    if not missing:
        return
    msg = "no %s here: run these in the sandbox image (go test ./resources -run TestAgentPython)" % " or ".join(missing)
    if os.environ.get(REQUIRE_ENV) == "1":
        test.fail(msg + ", and %s=1" % REQUIRE_ENV)
    raise unittest.SkipTest(msg)


def poll(what, check, timeout=10.0):
    """Calls check until it returns something true, and returns that."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("%s: not so after %gs" % (what, timeout))
        time.sleep(0.01)


class Xvfb:
    """A private X server: its own display number, black root window."""

    def __init__(self, width=320, height=200):
        self.width, self.height = width, height
        r, w = os.pipe()
        try:
            # -displayfd: Xvfb picks a free display and writes its number
            # once it accepts connections, so nothing races its start.
            self.proc = subprocess.Popen(
                ["Xvfb", "-displayfd", str(w), "-screen", "0", "%dx%dx24" % (width, height),
                 "-nolisten", "tcp", "-br", "-noreset"],
                pass_fds=(w,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, start_new_session=True)
            os.close(w)
            w = None
            number = self._read_number(r)
        except BaseException:
            if w is not None:
                os.close(w)
            self.close()
            raise
        finally:
            os.close(r)
        self.display = ":" + number

    def _read_number(self, fd):
        out = b""
        deadline = time.monotonic() + 20
        while not out.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            if not ready:
                raise AssertionError("Xvfb did not start within 20s")
            chunk = os.read(fd, 64)
            if not chunk:
                raise AssertionError("Xvfb exited: %s" % self.proc.stderr.read().decode(errors="replace"))
            out += chunk
        return out.decode().strip()

    path = None  # PATH for the programs run on this display, if not the test's

    def env(self):
        env = dict(os.environ)
        env["DISPLAY"] = self.display
        if self.path:
            env["PATH"] = self.path
        return env

    def close(self):
        if getattr(self, "proc", None) and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                # A loaded machine can leave Xvfb slow to end: the test is
                # over, so it is killed rather than failing the test.
                self.proc.kill()
                self.proc.wait(timeout=10)
        if getattr(self, "proc", None):
            self.proc.stderr.close()


def agent_argv():
    """The argv the sidecar runs the agent with (desktop.Command): its
    source, then its modules as NAME=SOURCE."""
    import agent
    with open(AGENT) as f:
        argv = [sys.executable, "-I", "-u", "-c", f.read()]
    for name in agent.MODULES:
        with open(os.path.join(HERE, name + ".py")) as f:
            argv.append(name + "=" + f.read())
    return argv


class Agent:
    """The agent as the sidecar runs it: python3 -I -u -c SOURCE
    NAME=SOURCE..., one JSON line in, one out."""

    def __init__(self, xvfb, env=None):
        self.proc = subprocess.Popen(agent_argv(), env=dict(xvfb.env(), **(env or {})),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     bufsize=0)
        self.buf = b""
        self.next_id = 0

    def send_line(self, line):
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, req, observer=None, timeout=60.0):
        """Sends req (its id set if it has none) and returns the answer;
        while waiting, observer (if any) keeps reading its events, as a live
        client does."""
        req = dict(req)
        if "id" not in req:
            self.next_id += 1
            req["id"] = self.next_id
        self.send_line(json.dumps(req))
        return self.read_answer(observer, timeout)

    def read_answer(self, observer=None, timeout=60.0):
        """The next answer as the sidecar reads it (desktop/lines.go): a
        JSON line, with the PNG of the frame before it, if one came, as its
        "png" (bytes)."""
        line = self.read_line(observer, timeout)
        png = None
        if line.startswith("="):
            png = self._read_bytes(int(line[1:]), observer, timeout)
            line = self.read_line(observer, timeout)
        resp = json.loads(line)
        if png is not None:
            resp["png"] = png
        return resp

    def read_line(self, observer=None, timeout=60.0):
        self._fill(lambda: b"\n" in self.buf, observer, timeout)
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def _read_bytes(self, n, observer, timeout):
        self._fill(lambda: len(self.buf) >= n, observer, timeout)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def _fill(self, enough, observer, timeout):
        deadline = time.monotonic() + timeout
        out = self.proc.stdout.fileno()
        while not enough():
            fds = [out] + ([observer.fd] if observer else [])
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("the agent did not answer within %gs" % timeout)
            ready, _, _ = select.select(fds, [], [], left)
            if observer:
                observer.pump()
            if out in ready:
                chunk = os.read(out, 1 << 20)
                if not chunk:
                    raise AssertionError("the agent exited: %s" % self.stderr())
                self.buf += chunk
        if observer:
            observer.catch_up()

    def stderr(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        return self.proc.stderr.read().decode(errors="replace")

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()


# --- the observer's Xlib ---

X = ctypes.CDLL("libX11.so.6")  # its own handle: the agent's prototypes stay its own
Display = ctypes.c_void_p

KEY_PRESS, KEY_RELEASE, BUTTON_PRESS, BUTTON_RELEASE, MOTION_NOTIFY = 2, 3, 4, 5, 6
SHIFT_MASK, CONTROL_MASK, MOD1_MASK, BUTTON1_MASK = 1, 4, 8, 0x100
EVENT_MASK = 1 | 2 | 4 | 8 | 64  # key press/release, button press/release, pointer motion
XK_RETURN, XK_TAB = 0xFF0D, 0xFF09


class XInputEvent(ctypes.Structure):
    # XKeyEvent, XButtonEvent and XMotionEvent share this layout; detail is
    # the keycode or the button.
    _fields_ = [
        ("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
        ("display", Display), ("window", ctypes.c_ulong), ("root", ctypes.c_ulong),
        ("subwindow", ctypes.c_ulong), ("time", ctypes.c_ulong), ("x", ctypes.c_int), ("y", ctypes.c_int),
        ("x_root", ctypes.c_int), ("y_root", ctypes.c_int), ("state", ctypes.c_uint),
        ("detail", ctypes.c_uint), ("same_screen", ctypes.c_int),
    ]


class XEvent(ctypes.Union):
    _fields_ = [("type", ctypes.c_int), ("input", XInputEvent), ("pad", ctypes.c_long * 24)]


def _proto(fn, restype, *argtypes):
    fn.restype = restype
    fn.argtypes = list(argtypes)


_proto(X.XOpenDisplay, Display, ctypes.c_char_p)
_proto(X.XCloseDisplay, ctypes.c_int, Display)
_proto(X.XDefaultRootWindow, ctypes.c_ulong, Display)
_proto(X.XConnectionNumber, ctypes.c_int, Display)
_proto(X.XSelectInput, ctypes.c_int, Display, ctypes.c_ulong, ctypes.c_long)
_proto(X.XSync, ctypes.c_int, Display, ctypes.c_int)
_proto(X.XPending, ctypes.c_int, Display)
_proto(X.XNextEvent, ctypes.c_int, Display, ctypes.POINTER(XEvent))
_proto(X.XQueryPointer, ctypes.c_int, Display, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong),
       ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
       ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_uint))
_proto(X.XDisplayKeycodes, ctypes.c_int, Display, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
_proto(X.XGetKeyboardMapping, ctypes.POINTER(ctypes.c_ulong), Display, ctypes.c_ubyte, ctypes.c_int,
       ctypes.POINTER(ctypes.c_int))
_proto(X.XChangeKeyboardMapping, ctypes.c_int, Display, ctypes.c_int, ctypes.c_int,
       ctypes.POINTER(ctypes.c_ulong), ctypes.c_int)
_proto(X.XKeysymToString, ctypes.c_char_p, ctypes.c_ulong)
_proto(X.XStringToKeysym, ctypes.c_ulong, ctypes.c_char_p)
_proto(X.XFree, ctypes.c_int, ctypes.c_void_p)
_proto(X.XInternAtom, ctypes.c_ulong, Display, ctypes.c_char_p, ctypes.c_int)
_proto(X.XGetSelectionOwner, ctypes.c_ulong, Display, ctypes.c_ulong)
_proto(X.XStoreBytes, ctypes.c_int, Display, ctypes.c_char_p, ctypes.c_int)
_proto(X.XCreateGC, ctypes.c_void_p, Display, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_void_p)
_proto(X.XFreeGC, ctypes.c_int, Display, ctypes.c_void_p)
_proto(X.XSetForeground, ctypes.c_int, Display, ctypes.c_void_p, ctypes.c_ulong)
_proto(X.XFillRectangle, ctypes.c_int, Display, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
       ctypes.c_uint, ctypes.c_uint)


def char_of_keysym(sym):
    """The character a keysym types, the inverse of agent.keysym_of_char;
    None for keys that type none (modifiers)."""
    if sym == XK_RETURN:
        return "\n"
    if sym == XK_TAB:
        return "\t"
    if 0x20 <= sym <= 0x7E or 0xA0 <= sym <= 0xFF:
        return chr(sym)
    if sym & 0xFF000000 == 0x01000000:
        return chr(sym & 0xFFFFFF)
    return None


# An input event as the observer saw it: kind (KEY_PRESS, ...), detail (the
# keycode or the button), the key's row of keysyms in the map when the event
# was read (None for the pointer's), the modifier and button state before it,
# where the pointer was on the screen, and the server's time in milliseconds.
Event = collections.namedtuple("Event", "kind detail row state x y time")


class Observer:
    """An X client watching the root window. With no window manager and no
    other window, every pointer and key event lands there."""

    def __init__(self, xvfb):
        self.d = X.XOpenDisplay(xvfb.display.encode())
        if not self.d:
            raise AssertionError("observer: cannot open %s" % xvfb.display)
        self.root = X.XDefaultRootWindow(self.d)
        self.fd = X.XConnectionNumber(self.d)
        X.XSelectInput(self.d, self.root, EVENT_MASK)
        X.XSync(self.d, 0)
        self.events = []  # Event

    def close(self):
        X.XCloseDisplay(self.d)

    def pump(self):
        """Reads every event the observer has, looking each key up in the
        keyboard map as it is when the event is read, as a client does. (It
        asks the server each time: Xlib speaks XKB to it, so a client sees no
        core MappingNotify to tell it when to refresh a cached map.)"""
        ev = XEvent()
        while X.XPending(self.d):
            X.XNextEvent(self.d, ctypes.byref(ev))
            if ev.type not in (KEY_PRESS, KEY_RELEASE, BUTTON_PRESS, BUTTON_RELEASE, MOTION_NOTIFY):
                continue
            e = ev.input
            row = self.row(e.detail) if ev.type in (KEY_PRESS, KEY_RELEASE) else None
            self.events.append(Event(ev.type, e.detail, row, e.state, e.x_root, e.y_root, e.time))

    def catch_up(self):
        """Reads every event the server sent before now."""
        X.XSync(self.d, 0)
        self.pump()

    def take(self):
        self.catch_up()
        out, self.events = self.events, []
        return out

    def row(self, keycode):
        per = ctypes.c_int()
        syms = X.XGetKeyboardMapping(self.d, keycode, 1, ctypes.byref(per))
        row = tuple(syms[i] for i in range(per.value))
        X.XFree(syms)
        return row

    def keymap(self):
        lo, hi = self.keycodes()
        return {kc: self.row(kc) for kc in range(lo, hi + 1)}

    def keycodes(self):
        lo, hi = ctypes.c_int(), ctypes.c_int()
        X.XDisplayKeycodes(self.d, ctypes.byref(lo), ctypes.byref(hi))
        return lo.value, hi.value

    def set_row(self, keycode, row):
        syms = (ctypes.c_ulong * len(row))(*row)
        X.XChangeKeyboardMapping(self.d, keycode, len(row), syms, 1)
        X.XSync(self.d, 0)

    def pointer(self):
        root, child = ctypes.c_ulong(), ctypes.c_ulong()
        rx, ry, wx, wy = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        mask = ctypes.c_uint()
        X.XQueryPointer(self.d, self.root, ctypes.byref(root), ctypes.byref(child), ctypes.byref(rx),
                        ctypes.byref(ry), ctypes.byref(wx), ctypes.byref(wy), ctypes.byref(mask))
        return rx.value, ry.value

    def fill(self, x, y, w, h, rgb):
        """Paints a rectangle of the root window in a 0xRRGGBB colour."""
        gc = X.XCreateGC(self.d, self.root, 0, None)
        X.XSetForeground(self.d, gc, rgb)
        X.XFillRectangle(self.d, self.root, gc, x, y, w, h)
        X.XFreeGC(self.d, gc)
        X.XSync(self.d, 0)

    def clipboard_owner(self):
        return X.XGetSelectionOwner(self.d, X.XInternAtom(self.d, b"CLIPBOARD", 0))

    def store_cut_buffer(self, data):
        X.XStoreBytes(self.d, data, len(data))
        X.XSync(self.d, 0)


def typed_text(events):
    """The text a client would read from key presses: the keysym of each
    press at the level its Shift state selects."""
    out = []
    for e in events:
        if e.kind != KEY_PRESS:
            continue
        sym = e.row[1] if e.state & SHIFT_MASK and len(e.row) > 1 and e.row[1] else e.row[0]
        ch = char_of_keysym(sym)
        if ch is not None:
            out.append(ch)
    return "".join(out)


def key_names(events):
    """Key events as ("press" or "release", the key's unshifted keysym name)."""
    out = []
    for e in events:
        if e.kind in (KEY_PRESS, KEY_RELEASE):
            name = X.XKeysymToString(e.row[0])
            out.append(("press" if e.kind == KEY_PRESS else "release", name.decode() if name else hex(e.row[0])))
    return out


def decode_png(data):
    """Decodes the PNGs the agent writes (8-bit RGB, no interlace) into
    (width, height, rows of bytes); any other filter than None fails."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        n, = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise ValueError("bad CRC in %r" % kind)
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, colour, _, _, interlace = header
    if (depth, colour, interlace) != (8, 2, 0):
        raise ValueError("not 8-bit RGB: %r" % (header,))
    raw = zlib.decompress(idat)
    line = 1 + w * 3
    rows = []
    for y in range(h):
        if raw[y * line] != 0:
            raise ValueError("row %d has filter %d" % (y, raw[y * line]))
        rows.append(raw[y * line + 1:(y + 1) * line])
    return w, h, rows


def pixel(rows, x, y):
    return tuple(rows[y][x * 3:x * 3 + 3])
