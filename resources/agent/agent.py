"""pilot-sandbox desktop agent.

Runs inside a sandbox as its user, started by the sidecar through one
long-lived `docker exec` with stdin and stdout attached. It reads one JSON
request a line on stdin and answers each with one JSON line on stdout; it ends
when stdin does. Input goes to the X server through the XTEST extension and
screenshots come from the X server's shared memory (MIT-SHM; XGetImage where
it is missing), all in this one process: a click costs well
under a millisecond here, where a `docker exec` of xdotool costs 45 ms plus
xdotool's own 100 ms wait after a click.

Typing any Unicode text exactly: a character the keyboard map lacks is given a
spare keycode first. Clients look a keycode up when they handle its event, so
a keycode must not be given another character while an event for the old one
may still be unhandled: that is how `xdotool type` drops and reorders such
characters under load. Here spare keycodes are used least recently used first
and never re-bound within REBIND_AFTER seconds of their last use, and the
characters of a whole stretch of text are bound at once, in one request per
run of keycodes: every binding makes every client refetch the keyboard map,
and one binding per character leaves a terminal seconds behind.

Perception (perception.py and the modules it uses): the accessibility tree
of the screen, finding and focusing an element of it by ref, and whether the
screen changed after an action (xscreen.py).

Only Python's standard library and libX11/libXtst/libXext/libXdamage
(installed with xdotool and x11vnc).
"""

import contextlib
import ctypes
import json
import struct
import subprocess
import sys
import time
import types
import zlib

# The agent's own modules, in the order they import one another.
MODULES = ("dbuswire", "atspi", "cdp", "web", "xscreen", "perception")


def install_modules(args):
    """Makes the agent's modules importable where the sidecar runs it: as
    python3 -I -u -c SOURCE NAME=SOURCE..., its modules come as arguments
    (desktop.Command), whatever image the sandbox was made from. Run from
    its directory (the tests), it imports them as files."""
    for arg in args:
        name, sep, source = arg.partition("=")
        if not sep or name not in MODULES:
            raise SystemExit("pilot-agent: unexpected argument %r" % arg[:40])
        module = types.ModuleType(name)
        module.__file__ = "<pilot-agent %s.py>" % name
        sys.modules[name] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)


if sys.argv[:1] == ["-c"]:
    install_modules(sys.argv[1:])

import perception  # noqa: E402 (after the modules are installed)
import xscreen  # noqa: E402

REBIND_AFTER = 0.5  # seconds a spare keycode keeps its character after use
CHUNK = 64  # key events sent between XSync calls while typing
CLIPBOARD_WAIT = 5  # seconds xclip has to take the clipboard
FOCUS_QUIET, FOCUS_SETTLE = 0.1, 1.0  # seconds still, and at most, after a focus by ref
GLIDE_STEP = 0.01  # seconds between the pointer's steps in a drag that takes a duration

XK_SHIFT_L = 0xFFE1
XK_RETURN = 0xFF0D
XK_TAB = 0xFF09
NO_SYMBOL = 0
XA_STRING = 31

x11 = ctypes.CDLL("libX11.so.6")
xtst = ctypes.CDLL("libXtst.so.6")

Display = ctypes.c_void_p
KeySym = ctypes.c_ulong


class XImage(ctypes.Structure):
    pass


XImage._fields_ = [
    ("width", ctypes.c_int), ("height", ctypes.c_int), ("xoffset", ctypes.c_int),
    ("format", ctypes.c_int), ("data", ctypes.c_void_p), ("byte_order", ctypes.c_int),
    ("bitmap_unit", ctypes.c_int), ("bitmap_bit_order", ctypes.c_int),
    ("bitmap_pad", ctypes.c_int), ("depth", ctypes.c_int),
    ("bytes_per_line", ctypes.c_int), ("bits_per_pixel", ctypes.c_int),
    ("red_mask", ctypes.c_ulong), ("green_mask", ctypes.c_ulong), ("blue_mask", ctypes.c_ulong),
    ("obdata", ctypes.c_void_p),
    # struct funcs: create_image, destroy_image, get_pixel, put_pixel, sub_image, add_pixel
    ("create_image", ctypes.c_void_p),
    ("destroy_image", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(XImage))),
    ("get_pixel", ctypes.c_void_p), ("put_pixel", ctypes.c_void_p),
    ("sub_image", ctypes.c_void_p), ("add_pixel", ctypes.c_void_p),
]


class XErrorEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int), ("display", Display), ("resourceid", ctypes.c_ulong),
        ("serial", ctypes.c_ulong), ("error_code", ctypes.c_ubyte),
        ("request_code", ctypes.c_ubyte), ("minor_code", ctypes.c_ubyte),
    ]


def _proto(fn, restype, *argtypes):
    fn.restype = restype
    fn.argtypes = list(argtypes)


_proto(x11.XOpenDisplay, Display, ctypes.c_char_p)
_proto(x11.XDefaultScreen, ctypes.c_int, Display)
_proto(x11.XRootWindow, ctypes.c_ulong, Display, ctypes.c_int)
_proto(x11.XDisplayWidth, ctypes.c_int, Display, ctypes.c_int)
_proto(x11.XDisplayHeight, ctypes.c_int, Display, ctypes.c_int)
_proto(x11.XSync, ctypes.c_int, Display, ctypes.c_int)
_proto(x11.XFree, ctypes.c_int, ctypes.c_void_p)
_proto(x11.XDisplayKeycodes, ctypes.c_int, Display, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
_proto(x11.XGetKeyboardMapping, ctypes.POINTER(KeySym), Display, ctypes.c_ubyte, ctypes.c_int, ctypes.POINTER(ctypes.c_int))
_proto(x11.XChangeKeyboardMapping, ctypes.c_int, Display, ctypes.c_int, ctypes.c_int, ctypes.POINTER(KeySym), ctypes.c_int)
_proto(x11.XStringToKeysym, KeySym, ctypes.c_char_p)
_proto(x11.XDefaultVisual, ctypes.c_void_p, Display, ctypes.c_int)
_proto(x11.XDefaultDepth, ctypes.c_int, Display, ctypes.c_int)
_proto(x11.XGetImage, ctypes.POINTER(XImage), Display, ctypes.c_ulong, ctypes.c_int, ctypes.c_int,
       ctypes.c_uint, ctypes.c_uint, ctypes.c_ulong, ctypes.c_int)
_proto(xtst.XTestFakeMotionEvent, ctypes.c_int, Display, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_ulong)
_proto(xtst.XTestFakeButtonEvent, ctypes.c_int, Display, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong)
_proto(xtst.XTestFakeKeyEvent, ctypes.c_int, Display, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong)

_proto(x11.XInternAtom, ctypes.c_ulong, Display, ctypes.c_char_p, ctypes.c_int)
_proto(x11.XGetWindowProperty, ctypes.c_int, Display, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_long,
       ctypes.c_long, ctypes.c_int, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int),
       ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.POINTER(ctypes.c_ubyte)))
_proto(x11.XChangeProperty, ctypes.c_int, Display, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
       ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int)

_proto(x11.XQueryPointer, ctypes.c_int, Display, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong),
       ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
       ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_uint))

_proto(x11.XGetSelectionOwner, ctypes.c_ulong, Display, ctypes.c_ulong)
_proto(x11.XFetchBytes, ctypes.c_void_p, Display, ctypes.POINTER(ctypes.c_int))

ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, Display, ctypes.POINTER(XErrorEvent))
_proto(x11.XSetErrorHandler, ctypes.c_void_p, ERROR_HANDLER)

_x_errors = []


@ERROR_HANDLER
def _on_x_error(display, event):
    # Xlib's default handler exits the process; record the error instead and
    # report it as the request's failure.
    e = event.contents
    _x_errors.append("X error %d (request %d.%d)" % (e.error_code, e.request_code, e.minor_code))
    return 0


class XShmSegmentInfo(ctypes.Structure):
    _fields_ = [("shmseg", ctypes.c_ulong), ("shmid", ctypes.c_int), ("shmaddr", ctypes.c_void_p),
                ("readOnly", ctypes.c_int)]


IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0
Z_PIXMAP = 2
ALL_PLANES = 0xFFFFFFFF


class ShmScreen:
    """The whole screen through MIT-SHM: the X server copies its pixels into
    a segment this process maps, where XGetImage sends 4 MB (at 1280x800)
    through the X socket, about ten times as long. The segment is private
    (mode 0600, no key) and marked for removal as soon as the server has
    attached it, so it goes when both let go of it, whatever ends them."""

    def __init__(self, d, root, width, height):
        self.d, self.root = d, root
        xext = ctypes.CDLL("libXext.so.6")
        libc = ctypes.CDLL(None, use_errno=True)
        _proto(xext.XShmQueryExtension, ctypes.c_int, Display)
        _proto(xext.XShmCreateImage, ctypes.POINTER(XImage), Display, ctypes.c_void_p, ctypes.c_uint, ctypes.c_int,
               ctypes.c_void_p, ctypes.POINTER(XShmSegmentInfo), ctypes.c_uint, ctypes.c_uint)
        _proto(xext.XShmAttach, ctypes.c_int, Display, ctypes.POINTER(XShmSegmentInfo))
        _proto(xext.XShmDetach, ctypes.c_int, Display, ctypes.POINTER(XShmSegmentInfo))
        _proto(xext.XShmGetImage, ctypes.c_int, Display, ctypes.c_ulong, ctypes.POINTER(XImage), ctypes.c_int,
               ctypes.c_int, ctypes.c_ulong)
        _proto(libc.shmget, ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_int)
        _proto(libc.shmat, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
        _proto(libc.shmctl, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
        self.xext, self.info = xext, XShmSegmentInfo()
        if not xext.XShmQueryExtension(d):
            raise OSError("no MIT-SHM extension")
        screen = x11.XDefaultScreen(d)
        self.img = xext.XShmCreateImage(d, x11.XDefaultVisual(d, screen), x11.XDefaultDepth(d, screen), Z_PIXMAP,
                                        None, ctypes.byref(self.info), width, height)
        if not self.img:
            raise OSError("XShmCreateImage failed")
        img = self.img.contents
        self.stride, self.size = img.bytes_per_line, img.bytes_per_line * img.height
        if img.bits_per_pixel != 32 or img.byte_order != 0:
            raise OSError("unsupported screen format: %d bits per pixel" % img.bits_per_pixel)
        self.info.shmid = libc.shmget(IPC_PRIVATE, self.size, IPC_CREAT | 0o600)
        if self.info.shmid < 0:
            raise OSError(ctypes.get_errno(), "shmget")
        addr = libc.shmat(self.info.shmid, None, 0)
        libc.shmctl(self.info.shmid, IPC_RMID, None)  # stays until both detach
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "shmat")
        self.info.shmaddr = img.data = addr
        errors = len(_x_errors)
        xext.XShmAttach(d, ctypes.byref(self.info))
        x11.XSync(d, 0)
        if len(_x_errors) > errors:  # a server that cannot reach the segment
            del _x_errors[errors:]
            raise OSError("XShmAttach failed")

    def grab(self):
        """The screen's pixels, BGRX rows of self.stride bytes."""
        if not self.xext.XShmGetImage(self.d, self.root, self.img, 0, 0, ALL_PLANES):
            raise Fail("XShmGetImage failed")
        return ctypes.string_at(self.info.shmaddr, self.size)


class Fail(Exception):
    """A request the agent cannot carry out; the message goes to the sidecar."""


# Key names a model is likely to use that X spells differently.
KEY_ALIASES = {
    "enter": "Return", "return": "Return", "esc": "Escape", "escape": "Escape",
    "backspace": "BackSpace", "del": "Delete", "delete": "Delete", "ins": "Insert",
    "insert": "Insert", "tab": "Tab", "space": "space", "home": "Home", "end": "End",
    "pageup": "Prior", "page_up": "Prior", "pgup": "Prior", "pagedown": "Next",
    "page_down": "Next", "pgdn": "Next", "up": "Up", "down": "Down", "left": "Left",
    "right": "Right", "capslock": "Caps_Lock", "menu": "Menu", "print": "Print",
}
MODIFIERS = {
    "ctrl": "Control_L", "control": "Control_L", "shift": "Shift_L", "alt": "Alt_L",
    "meta": "Meta_L", "super": "Super_L", "win": "Super_L", "cmd": "Super_L",
}
# The wheel's directions are pointer buttons.
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}


def keysym_of_char(ch):
    code = ord(ch)
    if ch == "\n":
        return XK_RETURN
    if ch == "\t":
        return XK_TAB
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code  # Latin-1 keysyms are the code points
    return 0x01000000 | code  # X's Unicode keysyms


class Desktop:
    def __init__(self):
        x11.XSetErrorHandler(_on_x_error)
        self.d = x11.XOpenDisplay(None)
        if not self.d:
            raise SystemExit("pilot-agent: cannot open the display")
        screen = x11.XDefaultScreen(self.d)
        self.root = x11.XRootWindow(self.d, screen)
        self.width = x11.XDisplayWidth(self.d, screen)
        self.height = x11.XDisplayHeight(self.d, screen)
        self.spares_atom = x11.XInternAtom(self.d, b"_PILOT_SANDBOX_SPARE_KEYCODES", 0)
        self.clipboard_atom = x11.XInternAtom(self.d, b"CLIPBOARD", 0)
        self._load_keymap()
        self._shm = None  # made at the first screenshot
        self._bands = BandDeflater()
        self.screen = xscreen.Screen(self.d, self.root, self.width, self.height, self._grab, _x_errors)
        self.refs = perception.Refs()

    def _grab(self):
        """The whole screen's pixels: (BGRX rows, the bytes of a row)."""
        shm = self._shm_screen()
        if shm:
            return shm.grab(), shm.stride
        img_p = x11.XGetImage(self.d, self.root, 0, 0, self.width, self.height, ALL_PLANES, Z_PIXMAP)
        if not img_p:
            raise Fail("XGetImage failed")
        try:
            img = img_p.contents
            return ctypes.string_at(img.data, img.bytes_per_line * img.height), img.bytes_per_line
        finally:
            img_p.contents.destroy_image(img_p)

    def _shm_screen(self):
        """The shared-memory capture of the whole screen, or None where the
        server or this machine cannot share memory (a remote display)."""
        if self._shm is None:
            try:
                self._shm = ShmScreen(self.d, self.root, self.width, self.height)
            except (OSError, Fail):
                self._shm = False
        return self._shm

    def _load_keymap(self):
        lo, hi = ctypes.c_int(), ctypes.c_int()
        x11.XDisplayKeycodes(self.d, ctypes.byref(lo), ctypes.byref(hi))
        per = ctypes.c_int()
        count = hi.value - lo.value + 1
        syms = x11.XGetKeyboardMapping(self.d, lo.value, count, ctypes.byref(per))
        self.per = per.value
        self.keys = {}  # keysym -> (keycode, needs shift)
        self.rows = {}  # spare keycode -> its current row of keysyms
        self.sym_spare = {}  # keysym -> spare keycode bound to it
        earlier = self._spares_property()
        free, media = [], []
        for kc in range(lo.value, hi.value + 1):
            row = tuple(syms[(kc - lo.value) * self.per + i] for i in range(self.per))
            if all(s == NO_SYMBOL for s in row):
                if kc > lo.value:  # the lowest keycode is avoided by some clients
                    free.append(kc)
                    self.rows[kc] = row
                continue
            if kc in earlier:
                # A spare an earlier agent bound: it is ours to rebind.
                free.append(kc)
                self.rows[kc] = row
                self.sym_spare.setdefault(row[0], kc)
                continue
            if all(s == NO_SYMBOL or 0x1008FF00 <= s <= 0x1008FFFF for s in row):
                media.append(kc)  # XF86 media keys only: fair game as spares
                self.rows[kc] = row
                continue
            for level in (0, 1):
                if level < self.per and row[level] != NO_SYMBOL:
                    self.keys.setdefault(row[level], (kc, level == 1))
        x11.XFree(syms)
        self.spares = free + media
        self._publish_spares()
        # Spares start out "used" in the order they should be taken: free first.
        self.spare_used = {kc: float(i - len(self.spares)) for i, kc in enumerate(self.spares)}
        self.shift = self.keys.get(XK_SHIFT_L, (None, False))[0]

    # The spare keycodes are listed in a property of the root window, which
    # lives exactly as long as the X server and its keyboard map: an agent
    # started later (the sidecar restarted) finds its predecessor's bindings
    # there, where the map itself cannot tell them from ordinary keys.

    def _spares_property(self):
        kind, fmt = ctypes.c_ulong(), ctypes.c_int()
        n, after = ctypes.c_ulong(), ctypes.c_ulong()
        data = ctypes.POINTER(ctypes.c_ubyte)()
        status = x11.XGetWindowProperty(self.d, self.root, self.spares_atom, 0, 4096, 0, XA_STRING,
                                        ctypes.byref(kind), ctypes.byref(fmt), ctypes.byref(n),
                                        ctypes.byref(after), ctypes.byref(data))
        if status != 0 or not data:
            return set()
        text = ctypes.string_at(data, n.value).decode("ascii", "replace")
        x11.XFree(data)
        return {int(w) for w in text.split() if w.isdigit()}

    def _publish_spares(self):
        text = " ".join(str(kc) for kc in self.spares).encode()
        x11.XChangeProperty(self.d, self.root, self.spares_atom, XA_STRING, 8, 0, text, len(text))

    def sync(self):
        x11.XSync(self.d, 0)
        if _x_errors:
            msg = "; ".join(_x_errors)
            del _x_errors[:]
            raise Fail(msg)

    # --- pointer ---

    def move(self, x, y):
        xtst.XTestFakeMotionEvent(self.d, -1, x, y, 0)

    def button(self, button, count=1):
        for _ in range(count):
            xtst.XTestFakeButtonEvent(self.d, button, 1, 0)
            xtst.XTestFakeButtonEvent(self.d, button, 0, 0)

    def op_move(self, r):
        self.move(r["x"], r["y"])
        self.sync()
        return {}

    def op_pointer(self, r):
        root, child = ctypes.c_ulong(), ctypes.c_ulong()
        rx, ry, wx, wy = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        mask = ctypes.c_uint()
        x11.XQueryPointer(self.d, self.root, ctypes.byref(root), ctypes.byref(child), ctypes.byref(rx),
                          ctypes.byref(ry), ctypes.byref(wx), ctypes.byref(wy), ctypes.byref(mask))
        return {"x": rx.value, "y": ry.value}

    def _modifiers(self, r):
        """The keycodes of the request's modifiers, each once, resolved
        before anything happens: an unknown name presses nothing."""
        codes = []
        for name in r.get("modifiers") or ():
            keysym_name = MODIFIERS.get(str(name).lower())
            if keysym_name is None:
                raise Fail("unknown modifier %r: use ctrl, shift, alt or super" % name)
            kc = self._key_for(self._resolve(keysym_name))[0]
            if kc not in codes:
                codes.append(kc)
        return codes

    @contextlib.contextmanager
    def _held(self, codes):
        """Holds keys down while the block runs and releases them however it
        ends: a modifier left down would change every later key and click."""
        for kc in codes:
            xtst.XTestFakeKeyEvent(self.d, kc, 1, 0)
        try:
            yield
        finally:
            for kc in reversed(codes):
                xtst.XTestFakeKeyEvent(self.d, kc, 0, 0)
                self._touch(kc)

    def op_click(self, r):
        mods = self._modifiers(r)
        self.move(r["x"], r["y"])
        with self._held(mods):
            self.button(r.get("button", 1), r.get("count", 1))
        self.sync()
        return {}

    def op_drag(self, r):
        points = [(r["x"], r["y"])] + [(p[0], p[1]) for p in r.get("path") or ()] + [(r["toX"], r["toY"])]
        mods = self._modifiers(r)
        self.move(*points[0])
        self.sync()
        with self._held(mods):
            xtst.XTestFakeButtonEvent(self.d, 1, 1, 0)
            self.sync()
            try:
                self._glide(points, r.get("durationMs", 0) / 1000.0)
            finally:
                xtst.XTestFakeButtonEvent(self.d, 1, 0, 0)
        self.sync()
        return {}

    def _glide(self, points, duration):
        """Moves the pointer from the first point through the others, in
        steps: toolkits start a drag only once the pointer has moved past a
        threshold while pressed. With a duration, the steps are spread over
        it, each segment taking its share by length (all of it, pressed in
        place, when the points are one); without, they go at once."""
        lengths = [max(abs(x1 - x0), abs(y1 - y0)) for (x0, y0), (x1, y1) in zip(points, points[1:])]
        total = sum(lengths)
        start, covered = time.monotonic(), 0
        for ((x0, y0), (x1, y1)), n in zip(zip(points, points[1:]), lengths):
            if duration and total:
                steps = max(2, int(duration * n / total / GLIDE_STEP))
            else:
                steps = max(2, min(20, n // 10))
            for i in range(1, steps + 1):
                if duration and total:
                    self._sleep_until(start + duration * (covered + n * i / steps) / total)
                self.move(x0 + (x1 - x0) * i // steps, y0 + (y1 - y0) * i // steps)
                self.sync()
            covered += n
        if duration:
            self._sleep_until(start + duration)

    def _sleep_until(self, when):
        wait = when - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    def op_scroll(self, r):
        button = SCROLL_BUTTONS.get(r["direction"])
        if button is None:
            raise Fail("unknown scroll direction %r" % r["direction"])
        mods = self._modifiers(r)
        self.move(r["x"], r["y"])
        with self._held(mods):
            self.button(button, r.get("amount", 3))
        self.sync()
        return {}

    # --- keyboard ---

    def _bind(self, needed):
        """Makes every keysym in needed (none of them in the keyboard map)
        typeable, binding the missing ones to the least recently used spare
        keycodes that hold none of needed. Each contiguous run of changed
        keycodes is one request, so clients refetch the map a few times per
        batch instead of once per character."""
        missing = [s for s in needed if s not in self.sym_spare]
        if not missing:
            return
        if len(needed) > len(self.spares):
            raise Fail("the keyboard map has too few spare keycodes")
        keep = {self.sym_spare[s] for s in needed if s in self.sym_spare}
        free = sorted((kc for kc in self.spares if kc not in keep), key=lambda k: self.spare_used[k])
        chosen = free[:len(missing)]
        wait = max(self.spare_used[kc] for kc in chosen) + REBIND_AFTER - time.monotonic()
        if wait > 0:
            self.sync()
            time.sleep(wait)  # a client may still be handling the old character
        for kc, sym in zip(chosen, missing):
            old = self.rows[kc][0]
            if self.sym_spare.get(old) == kc:
                del self.sym_spare[old]
            self.rows[kc] = (sym,) * self.per
            self.sym_spare[sym] = kc
        for first, last in runs(sorted(chosen)):
            flat = [s for kc in range(first, last + 1) for s in self.rows[kc]]
            x11.XChangeKeyboardMapping(self.d, first, self.per, (KeySym * len(flat))(*flat), last - first + 1)

    def _key_for(self, sym):
        if sym in self.keys:
            return self.keys[sym]
        self._bind([sym])
        return self.sym_spare[sym], False

    def _tap(self, kc, shift):
        if shift and self.shift:
            xtst.XTestFakeKeyEvent(self.d, self.shift, 1, 0)
        xtst.XTestFakeKeyEvent(self.d, kc, 1, 0)
        xtst.XTestFakeKeyEvent(self.d, kc, 0, 0)
        if shift and self.shift:
            xtst.XTestFakeKeyEvent(self.d, self.shift, 0, 0)

    def _touch(self, kc):
        if kc in self.spare_used:
            self.spare_used[kc] = time.monotonic()

    def op_type(self, r):
        """Types text into the focused window; with a ref that focus was
        given, into its element: a page's through the browser
        (perception.type_into), any other through the keyboard."""
        text = r["text"].replace("\r\n", "\n").replace("\r", "\n")
        if r.get("ref") is not None:
            try:
                if perception.type_into(self.refs, str(r["ref"]), text):
                    return {"typed": len(text)}
            except perception.Gone as e:
                raise Fail(str(e)) from None
        syms = [keysym_of_char(ch) for ch in text]
        if not self.spares and any(s not in self.keys for s in syms):
            raise Fail("the keyboard map has no spare keycode to type characters it lacks")
        i = 0
        while i < len(syms):
            # The longest run from i whose characters missing from the map
            # fit in the spare keycodes at once.
            needed, j = {}, i  # an ordered set: bindings follow the text
            while j < len(syms):
                s = syms[j]
                if s not in self.keys and s not in needed:
                    if len(needed) == len(self.spares):
                        break
                    needed[s] = None
                j += 1
            self._bind(needed)
            for n, s in enumerate(syms[i:j], 1):
                kc, shift = self.keys.get(s) or (self.sym_spare[s], False)
                self._tap(kc, shift)
                self._touch(kc)
                if n % CHUNK == 0:
                    self.sync()
            self.sync()
            i = j
        return {"typed": len(syms)}

    def _resolve(self, name):
        sym = x11.XStringToKeysym(name.encode())
        alias = KEY_ALIASES.get(name.lower()) or MODIFIERS.get(name.lower())
        if sym == NO_SYMBOL and alias:
            sym = x11.XStringToKeysym(alias.encode())
        if sym == NO_SYMBOL and len(name) == 1:
            sym = keysym_of_char(name)
        if sym == NO_SYMBOL:
            raise Fail("unknown key name %r" % name)
        return sym

    def op_key(self, r):
        # Resolve every combination first, so a bad name presses nothing.
        combos = []
        for combo in r["keys"].split():
            parts = combo.split("+")
            if any(p == "" for p in parts):
                raise Fail("malformed key combination %r" % combo)
            mods = [self._resolve(MODIFIERS.get(m.lower(), m)) for m in parts[:-1]]
            combos.append((mods, self._resolve(parts[-1])))
        hold = r.get("holdMs", 0) / 1000.0
        if hold and len(combos) != 1:
            raise Fail("holdMs holds one key combination, not %d" % len(combos))
        for mods, sym in combos:
            mod_codes = [self._key_for(m)[0] for m in mods]
            kc, shift = self._key_for(sym)
            if shift and self.shift not in mod_codes:
                mod_codes.append(self.shift)
            with self._held(mod_codes + [kc]):
                if hold:
                    # Held past the server's autorepeat delay, the key
                    # repeats, as a key held on a keyboard does.
                    self.sync()
                    time.sleep(hold)
        self.sync()
        return {}

    # --- screen ---

    def op_screenshot(self, r):
        """The whole screen, or with width and height the region of that
        size whose top left corner is x, y."""
        x, y = r.get("x", 0), r.get("y", 0)
        if "width" in r or "height" in r:
            w, h = r.get("width", 0), r.get("height", 0)
        elif (x, y) == (0, 0):
            w, h = self.width, self.height
        else:
            raise Fail("a screenshot from %d, %d needs a width and a height" % (x, y))
        if x < 0 or y < 0 or w < 1 or h < 1 or x + w > self.width or y + h > self.height:
            raise Fail("the region %dx%d at %d, %d is not on the %dx%d screen" % (w, h, x, y, self.width, self.height))
        shm = self._shm_screen() if (x, y, w, h) == (0, 0, self.width, self.height) else None
        if shm:
            data = self._bands.png(shm.grab(), w, h, shm.stride)
            return {"width": w, "height": h, "png": data}
        img_p = x11.XGetImage(self.d, self.root, x, y, w, h, 0xFFFFFFFF, 2)  # ZPixmap
        if not img_p:
            raise Fail("XGetImage failed")
        try:
            img = img_p.contents
            if img.bits_per_pixel != 32 or img.byte_order != 0:
                raise Fail("unsupported screen format: %d bits per pixel" % img.bits_per_pixel)
            raw = ctypes.string_at(img.data, img.bytes_per_line * img.height)
            w, h, stride = img.width, img.height, img.bytes_per_line
        finally:
            img_p.contents.destroy_image(img_p)
        return {"width": w, "height": h, "png": png_rgb(raw, w, h, stride)}

    # --- clipboard ---

    def op_clipboard_set(self, r):
        before = x11.XGetSelectionOwner(self.d, self.clipboard_atom)
        # xclip forks a child that keeps serving the selection and holds its
        # stdout: with output to /dev/null, only the parent is waited for.
        p = subprocess.Popen(["xclip", "-selection", "clipboard", "-in"], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        p.communicate(r["text"].encode(), timeout=5)
        if p.returncode != 0:
            raise Fail("xclip exited with %d" % p.returncode)
        self._await_new_clipboard_owner(before)
        return {}

    def _await_new_clipboard_owner(self, before):
        # xclip's parent can exit before its child's claim on the clipboard
        # reaches the server (1 to 10 sets in 200 here, the more the busier
        # the machine): a paste right after the set would get the old text.
        deadline = time.monotonic() + CLIPBOARD_WAIT
        while x11.XGetSelectionOwner(self.d, self.clipboard_atom) in (before, 0):
            if time.monotonic() > deadline:
                raise Fail("xclip did not take the clipboard within %d s" % CLIPBOARD_WAIT)
            time.sleep(0.002)

    def op_clipboard_get(self, r):
        for target in ("UTF8_STRING", "STRING"):
            p = subprocess.run(["xclip", "-selection", "clipboard", "-out", "-target", target],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=5)
            if p.returncode == 0:
                return {"text": decode_text(p.stdout), "empty": False}
        # No program serves the clipboard. Text a viewer pasted through VNC
        # may then be in the root window's cut buffer: x11vnc puts it there,
        # and takes the selections too only once its own window exists
        # (the entrypoint asks for that at once; older images wait 8 s).
        n = ctypes.c_int()
        data = x11.XFetchBytes(self.d, ctypes.byref(n))
        if not data or n.value == 0:
            return {"text": "", "empty": True}
        text = ctypes.string_at(data, n.value)
        x11.XFree(data)
        return {"text": decode_text(text), "empty": False}

    # --- perception ---

    def op_tree(self, r):
        """The accessibility tree of the screen (perception.py)."""
        return perception.tree(self.screen, self.refs)

    def op_locate(self, r):
        """Where the element of a ref of the latest tree is now."""
        try:
            return perception.locate(self.screen, self.refs, str(r["ref"]))
        except perception.Gone as e:
            raise Fail(str(e)) from None

    def op_focus(self, r):
        """Gives the element of a ref the keyboard focus, and returns once
        the element holds it (perception.focus) and the screen is still
        after it (at most FOCUS_SETTLE seconds): a Chromium window that
        becomes active redraws itself whole, and keys typed before it has
        are lost (TestTreeOfAPageAndActingByRef lost
        them one run in three). Under load they were still lost now and
        then, so typing by ref into a page goes through the browser
        (op_type); the wait stays for the windows the keyboard types into."""
        try:
            got = perception.focus(self.screen, self.refs, str(r["ref"]))
        except perception.Gone as e:
            raise Fail(str(e)) from None
        self.screen.still(FOCUS_QUIET, FOCUS_SETTLE)
        return got

    def op_mark(self, r):
        """Starts watching the screen: settle reports what changes after."""
        self.screen.mark()
        return {}

    def op_settle(self, r):
        """After an action: whether the screen changed within waitMs, and
        when it was still again for quietMs (at most longestMs)."""
        box, secs, still = self.screen.settle(r["waitMs"] / 1000.0, r["quietMs"] / 1000.0, r["longestMs"] / 1000.0)
        out = {"changed": box is not None, "ms": round(secs * 1000), "still": still}
        if box is not None:
            out["box"] = list(box)
        return out

    def op_still(self, r):
        """Waits until the screen has been still for quietMs, at most
        timeoutMs."""
        still, secs, box = self.screen.still(r["quietMs"] / 1000.0, r["timeoutMs"] / 1000.0)
        return {"still": still, "ms": round(secs * 1000), "changed": box is not None}

    def op_hello(self, r):
        return {"width": self.width, "height": self.height, "spares": len(self.spares)}


def decode_text(data):
    """Clipboard bytes as text: UTF-8, or Latin-1 (what STRING means)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def runs(keycodes):
    """Splits sorted keycodes into (first, last) runs of consecutive ones."""
    out = []
    for kc in keycodes:
        if out and out[-1][1] == kc - 1:
            out[-1][1] = kc
        else:
            out.append([kc, kc])
    return out


def png_rgb(raw, w, h, stride):
    """Encodes 32-bit BGRX pixels as an RGB PNG, fast rather than small."""
    return png_wrap(w, h, zlib.compress(rgb_rows(raw, w, h, stride), 1))


def rgb_rows(raw, w, h, stride):
    """BGRX pixels as a PNG's rows: a filter byte (none), then RGB."""
    rgb = bytearray(w * h * 3)
    if stride == w * 4:
        rgb[0::3], rgb[1::3], rgb[2::3] = raw[2::4], raw[1::4], raw[0::4]
    else:
        for y in range(h):
            row = raw[y * stride:y * stride + w * 4]
            o = y * w * 3
            rgb[o:o + w * 3:3], rgb[o + 1:o + w * 3:3], rgb[o + 2:o + w * 3:3] = row[2::4], row[1::4], row[0::4]
    line = w * 3
    return b"".join(b"\x00" + rgb[y * line:(y + 1) * line] for y in range(h))


def png_wrap(w, h, idat):
    """An RGB PNG of w x h pixels around its zlib stream."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", idat) + chunk(b"IEND", b""))


BAND_ROWS = 32  # rows of the screen deflated together, and kept for the next shot


class BandDeflater:
    """PNGs of the whole screen that compress only what changed since the
    last one. Deflating the 3 MB of a 1280x800 screen's rows takes most of a
    screenshot's time, and an agent's action mostly changes a small part of
    the screen. Each band of BAND_ROWS rows is a deflate stream of its own,
    ended on a byte boundary (a sync flush), so the bands join into one
    stream: a band whose pixels are the same as last time keeps its
    compressed bytes, and its checksum joins the others' (adler32_combine).
    Bands cannot refer back into one another, which costs a little size."""

    def __init__(self):
        self.bands = []  # (raw pixels, deflated rows, adler32 of the rows, their length)

    def png(self, raw, w, h, stride):
        raw = bytes(raw)
        bands, check = [], 1
        for i, y in enumerate(range(0, h, BAND_ROWS)):
            rows = min(BAND_ROWS, h - y)
            # Bytes, not a memoryview's slice: bytes compare with memcmp,
            # a memoryview element by element (5.7 of a 6.5 ms shot of an
            # unchanged 1280x800 screen; a copy of the bands is 0.3 ms).
            pixels = raw[y * stride:(y + rows) * stride]
            band = self.bands[i] if i < len(self.bands) else None
            if band is None or band[0] != pixels:
                scan = rgb_rows(pixels, w, rows, stride)
                c = zlib.compressobj(1, zlib.DEFLATED, -15)
                band = (pixels, c.compress(scan) + c.flush(zlib.Z_SYNC_FLUSH), zlib.adler32(scan), len(scan))
            bands.append(band)
            check = adler32_combine(check, band[2], band[3])
        self.bands = bands
        # The zlib header, the bands, an empty last block, the checksum.
        idat = b"\x78\x01" + b"".join(b[1] for b in bands) + b"\x03\x00" + struct.pack(">I", check)
        return png_wrap(w, h, idat)


ADLER_BASE = 65521


def adler32_combine(adler1, adler2, len2):
    """The adler32 of two pieces of data from theirs and the second's
    length, as zlib's adler32_combine (which Python's zlib lacks)."""
    rem = len2 % ADLER_BASE
    lo1, hi1 = adler1 & 0xFFFF, (adler1 >> 16) & 0xFFFF
    lo2, hi2 = adler2 & 0xFFFF, (adler2 >> 16) & 0xFFFF
    lo = (lo1 + lo2 + ADLER_BASE - 1) % ADLER_BASE
    hi = (rem * lo1 + hi1 + hi2 + ADLER_BASE - rem) % ADLER_BASE
    return lo | (hi << 16)

def handle(desktop, line):
    """Answers one request line with a response, or None for a blank line.
    Whatever the line holds, the answer is a response: a bad request or a
    bug is reported to the sidecar, and the agent keeps serving."""
    line = line.strip()
    if not line:
        return None
    rid = None
    try:
        req = json.loads(line)
        if not isinstance(req, dict):
            raise Fail("a request must be a JSON object, not %s" % type(req).__name__)
        rid = req.get("id")
        handler = getattr(desktop, "op_" + str(req.get("op")), None)
        if handler is None:
            raise Fail("unknown operation %r" % req.get("op"))
        resp = handler(req)
        resp["id"] = rid
    except Fail as e:
        resp = {"id": rid, "error": str(e)}
    except Exception as e:  # a bug or a bad request: say so, keep serving
        resp = {"id": rid, "error": "%s: %s" % (type(e).__name__, e)}
    return resp


def serve(desktop, inp, out):
    """Answers each line of inp on out (binary) until inp ends."""
    for line in inp:
        resp = handle(desktop, line)
        if resp is None:
            continue
        out.write(encode(resp))
        out.flush()


def encode(resp):
    """An answer as the sidecar reads it (desktop/lines.go): one JSON line,
    after a frame of the PNG's bytes when it has one ("=N", a newline, N
    bytes), which in the JSON would be base64 to encode, scan and decode."""
    frame = b""
    png = resp.pop("png", None)
    if png is not None:
        frame = b"=%d\n" % len(png) + png
    return frame + json.dumps(resp, separators=(",", ":")).encode() + b"\n"


def main():
    serve(Desktop(), sys.stdin, sys.stdout.buffer)


if __name__ == "__main__":
    main()
