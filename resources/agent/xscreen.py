"""What the X server says about the screen, for the desktop agent: its
top-level windows in stacking order, the window manager's activation of
one, and whether the screen changed (the DAMAGE extension).

Changes are watched, not polled: a Damage object on the root window at
the level "report non-empty" sends one event when something is drawn, and
none until it is subtracted again, so nothing piles up while no one asks;
the agent reads them only while an action settles or a wait runs.
"""

import ctypes
import select
import time

x11 = ctypes.CDLL("libX11.so.6")
Display = ctypes.c_void_p
Window = ctypes.c_ulong
XA_CARDINAL, XA_WINDOW, XA_STRING = 6, 33, 31
ANY_PROPERTY_TYPE = 0
IS_VIEWABLE = 2
CLIENT_MESSAGE = 33
SUBSTRUCTURE_MASK = (1 << 19) | (1 << 20)  # SubstructureNotify | SubstructureRedirect
REPORT_NON_EMPTY = 3

# A change no one would call a change of the screen: a text caret's
# blink, a rectangle a pixel or two wide.
CARET_WIDTH = 3

MAX_WINDOWS = 200
MAX_TITLE = 512  # bytes of a title read


def _proto(fn, restype, *argtypes):
    fn.restype = restype
    fn.argtypes = list(argtypes)


class XWindowAttributes(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int), ("height", ctypes.c_int),
                ("border_width", ctypes.c_int), ("depth", ctypes.c_int), ("visual", ctypes.c_void_p),
                ("root", Window), ("class", ctypes.c_int), ("bit_gravity", ctypes.c_int),
                ("win_gravity", ctypes.c_int), ("backing_store", ctypes.c_int),
                ("backing_planes", ctypes.c_ulong), ("backing_pixel", ctypes.c_ulong),
                ("save_under", ctypes.c_int), ("colormap", ctypes.c_ulong), ("map_installed", ctypes.c_int),
                ("map_state", ctypes.c_int), ("all_event_masks", ctypes.c_long),
                ("your_event_mask", ctypes.c_long), ("do_not_propagate_mask", ctypes.c_long),
                ("override_redirect", ctypes.c_int), ("screen", ctypes.c_void_p)]


class XClientMessageEvent(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", Display), ("window", Window), ("message_type", ctypes.c_ulong),
                ("format", ctypes.c_int), ("data", ctypes.c_long * 5)]


class XEvent(ctypes.Union):
    _fields_ = [("type", ctypes.c_int), ("xclient", XClientMessageEvent), ("pad", ctypes.c_long * 24)]


_proto(x11.XInternAtom, ctypes.c_ulong, Display, ctypes.c_char_p, ctypes.c_int)
_proto(x11.XGetWindowProperty, ctypes.c_int, Display, Window, ctypes.c_ulong, ctypes.c_long,
       ctypes.c_long, ctypes.c_int, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int),
       ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.POINTER(ctypes.c_ubyte)))
_proto(x11.XFree, ctypes.c_int, ctypes.c_void_p)
_proto(x11.XGetWindowAttributes, ctypes.c_int, Display, Window, ctypes.POINTER(XWindowAttributes))
_proto(x11.XTranslateCoordinates, ctypes.c_int, Display, Window, Window, ctypes.c_int, ctypes.c_int,
       ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(Window))
_proto(x11.XQueryTree, ctypes.c_int, Display, Window, ctypes.POINTER(Window), ctypes.POINTER(Window),
       ctypes.POINTER(ctypes.POINTER(Window)), ctypes.POINTER(ctypes.c_uint))
_proto(x11.XSendEvent, ctypes.c_int, Display, Window, ctypes.c_int, ctypes.c_long, ctypes.POINTER(XEvent))
_proto(x11.XGetInputFocus, ctypes.c_int, Display, ctypes.POINTER(Window), ctypes.POINTER(ctypes.c_int))
_proto(x11.XSync, ctypes.c_int, Display, ctypes.c_int)
_proto(x11.XPending, ctypes.c_int, Display)
_proto(x11.XNextEvent, ctypes.c_int, Display, ctypes.POINTER(XEvent))
_proto(x11.XConnectionNumber, ctypes.c_int, Display)


class Screen:
    """The windows and changes of one display, through the agent's own
    connection to it."""

    def __init__(self, d, root, width, height, grab, x_errors):
        self.d, self.root, self.width, self.height = d, root, width, height
        self.grab = grab  # the screen's pixels now: (BGRX rows, stride)
        # The X errors the agent's handler collects, which its next request
        # reports: windows() takes back those its own queries caused.
        self.x_errors = x_errors
        self.frame = None
        atom = lambda name: x11.XInternAtom(d, name, 0)
        self.a_clients = atom(b"_NET_CLIENT_LIST")
        self.a_name, self.a_utf8 = atom(b"_NET_WM_NAME"), atom(b"UTF8_STRING")
        self.a_pid, self.a_state = atom(b"_NET_WM_PID"), atom(b"_NET_WM_STATE")
        self.a_hidden, self.a_active = atom(b"_NET_WM_STATE_HIDDEN"), atom(b"_NET_ACTIVE_WINDOW")
        self.a_wm_name, self.a_class = atom(b"WM_NAME"), atom(b"WM_CLASS")
        self.damage = None  # made at the first watch

    # --- windows ---

    def _property(self, win, prop, kind, limit):
        """A window property's bytes and format (8, 16 or 32; 32 as C longs)."""
        actual, fmt = ctypes.c_ulong(), ctypes.c_int()
        n, after = ctypes.c_ulong(), ctypes.c_ulong()
        data = ctypes.POINTER(ctypes.c_ubyte)()
        if x11.XGetWindowProperty(self.d, win, prop, 0, limit, 0, kind, ctypes.byref(actual), ctypes.byref(fmt),
                                  ctypes.byref(n), ctypes.byref(after), ctypes.byref(data)) != 0 or not data:
            return b"", 0
        size = {8: 1, 16: 2, 32: ctypes.sizeof(ctypes.c_long)}.get(fmt.value, 0)
        raw = ctypes.string_at(data, n.value * size)
        x11.XFree(data)
        return raw, fmt.value

    def _longs(self, win, prop, kind, limit):
        raw, fmt = self._property(win, prop, kind, limit)
        if fmt != 32:
            return []
        return list((ctypes.c_ulong * (len(raw) // ctypes.sizeof(ctypes.c_ulong))).from_buffer_copy(raw))

    def _title(self, win):
        raw, fmt = self._property(win, self.a_name, self.a_utf8, MAX_TITLE // 4)
        if fmt != 8 or not raw:
            raw, fmt = self._property(win, self.a_wm_name, ANY_PROPERTY_TYPE, MAX_TITLE // 4)
        return raw.decode("utf-8", "replace") if fmt == 8 else ""

    def _children(self, win):
        """A window's parent and its children, bottom first."""
        root, parent = Window(), Window()
        kids, n = ctypes.POINTER(Window)(), ctypes.c_uint()
        if not x11.XQueryTree(self.d, win, ctypes.byref(root), ctypes.byref(parent), ctypes.byref(kids),
                              ctypes.byref(n)):
            return None, []
        out = [kids[i] for i in range(n.value)]
        if kids:
            x11.XFree(kids)
        return parent.value, out

    def _top_of(self, win):
        """The child of the root that holds win: its window manager's frame."""
        for _ in range(16):
            parent, _ = self._children(win)
            if parent in (None, 0, self.root):
                return win
            win = parent
        return win

    def _clients(self):
        """Top-level windows, bottom first: the window manager's clients in
        the order of their frames among the root's children (the X server's
        stacking order; fluxbox's _NET_CLIENT_LIST_STACKING lags a raise),
        or the root's own children where no window manager runs."""
        _, order = self._children(self.root)
        wins = self._longs(self.root, self.a_clients, XA_WINDOW, MAX_WINDOWS)
        if not wins:
            return order[-MAX_WINDOWS:]
        place = {w: i for i, w in enumerate(order)}
        return sorted(wins, key=lambda w: place.get(self._top_of(w), -1))

    def windows(self):
        """The windows on screen, topmost first: each a dict with id, title,
        pid, class and bounds (x, y, w, h) on the screen. A window that goes
        away while it is asked about (Chromium's popups and tooltips come
        and go all the time) is left out: the BadWindow errors its queries
        get are no failure of the request that asked."""
        before = len(self.x_errors)
        try:
            return self._windows()
        finally:
            x11.XSync(self.d, 0)
            del self.x_errors[before:]

    def _windows(self):
        out = []
        for win in self._clients():
            attrs = XWindowAttributes()
            if not x11.XGetWindowAttributes(self.d, win, ctypes.byref(attrs)) or attrs.map_state != IS_VIEWABLE:
                continue
            if self.a_hidden in self._longs(win, self.a_state, 4, 32):  # XA_ATOM
                continue
            x, y, child = ctypes.c_int(), ctypes.c_int(), Window()
            x11.XTranslateCoordinates(self.d, win, self.root, 0, 0, ctypes.byref(x), ctypes.byref(y), ctypes.byref(child))
            pid = self._longs(win, self.a_pid, XA_CARDINAL, 1)
            cls = [c for c in self._property(win, self.a_class, XA_STRING, 64)[0].split(b"\0") if c]
            out.append({"id": win, "title": self._title(win), "pid": pid[0] if pid else None,
                        "class": cls[-1].decode("latin-1", "replace") if cls else "",
                        "bounds": (x.value, y.value, attrs.width, attrs.height)})
        out.reverse()
        return out

    def activate(self, win, timeout=0.5):
        """Asks the window manager to raise and focus a window, and waits
        until it has the keyboard focus; whether it got it."""
        if self.focused() == win:
            return True
        ev = XEvent()
        ev.xclient.type, ev.xclient.window, ev.xclient.format = CLIENT_MESSAGE, win, 32
        ev.xclient.message_type = self.a_active
        ev.xclient.data[0], ev.xclient.data[1] = 2, 0  # from a pager, at the current time
        x11.XSendEvent(self.d, self.root, 0, SUBSTRUCTURE_MASK, ctypes.byref(ev))
        x11.XSync(self.d, 0)
        deadline = time.monotonic() + timeout
        while True:
            focus = self.focused()
            if focus == win or time.monotonic() > deadline:
                return focus == win
            time.sleep(0.005)

    def focused(self):
        """The window that has the keyboard focus."""
        focus, revert = Window(), ctypes.c_int()
        x11.XGetInputFocus(self.d, ctypes.byref(focus), ctypes.byref(revert))
        return focus.value

    # --- changes ---

    def _damage(self):
        if self.damage is None:
            self.damage = Damage(self.d, self.root)
        return self.damage

    def mark(self):
        """Forgets every change so far: what settle and still see next
        happened after this."""
        self._damage().reset()
        self.frame = self.grab()

    def _next_change(self, deadline):
        """Waits until deadline for the screen to change; the box of what
        changed since the last frame, or None. Each redraw the X server
        reports is compared with the frame before it, pixel by pixel:
        Chromium redraws its whole window for a caret's blink, and a
        change that is only a caret is none."""
        dmg = self._damage()
        while dmg.wait(deadline):
            frame = self.grab()
            box = changed_box(self.frame, frame, self.width, self.height)
            self.frame = frame
            if box is not None:
                return box
        return None

    def settle(self, wait, quiet, longest):
        """After an action (and a mark before it): waits up to wait seconds
        for the screen to change; once it has, until it has been still for
        quiet seconds, or longest seconds have passed. Returns (box of what
        changed or None, seconds from the call to the last change, still)."""
        start = time.monotonic()
        box = self._next_change(start + wait)
        if box is None:
            return None, 0.0, True
        box, last, still = self._until_still(box, time.monotonic(), quiet, start + longest)
        return box, last - start, still

    def still(self, quiet, timeout):
        """Waits until the screen has been still for quiet seconds, at most
        timeout; returns (whether it went still, seconds it took, box of
        what changed meanwhile or None)."""
        self.mark()
        start = time.monotonic()
        box, last, still = self._until_still(None, start, quiet, start + timeout)
        return still, (last + quiet if still else time.monotonic()) - start, box

    def _until_still(self, box, last, quiet, deadline):
        while True:
            change = self._next_change(min(last + quiet, deadline))
            if change is None:
                return box, last, time.monotonic() >= last + quiet
            box = union(box, change)
            last = time.monotonic()
            if last >= deadline:
                return box, last, False


def changed_box(a, b, width, height):
    """The bounding box (x, y, w, h) of the pixels that differ between two
    frames (each (bytes of BGRX rows, stride)), or None when none do or
    only a caret's sliver (at most CARET_WIDTH pixels across or down)."""
    (pa, stride), (pb, _) = a, b
    if pa == pb:
        return None
    ys = [y for y in range(height) if pa[y * stride:(y + 1) * stride] != pb[y * stride:(y + 1) * stride]]
    if not ys:
        return None
    left, right = width, -1
    for y in ys:
        ra, rb = pa[y * stride:y * stride + width * 4], pb[y * stride:y * stride + width * 4]
        left = min(left, _first_diff(ra, rb) // 4)
        right = max(right, (len(ra) - 1 - _first_diff(ra[::-1], rb[::-1])) // 4)
    w, h = right - left + 1, ys[-1] - ys[0] + 1
    if w <= CARET_WIDTH or h <= CARET_WIDTH:
        return None
    return (left, ys[0], w, h)


def _first_diff(a, b):
    """The index of the first byte where a and b (of one length) differ."""
    lo, hi = 0, len(a)  # a[:lo] == b[:lo]; they differ before hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def union(a, b):
    if a is None:
        return b
    x0, y0 = min(a[0], b[0]), min(a[1], b[1])
    x1, y1 = max(a[0] + a[2], b[0] + b[2]), max(a[1] + a[3], b[1] + b[3])
    return (x0, y0, x1 - x0, y1 - y0)


class Damage:
    """A Damage object on the root window, reporting non-empty: one event
    when something is drawn, then none until it is subtracted again."""

    def __init__(self, d, root):
        self.d = d
        self.xdamage = xd = ctypes.CDLL("libXdamage.so.1")
        _proto(xd.XDamageQueryExtension, ctypes.c_int, Display, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
        _proto(xd.XDamageCreate, ctypes.c_ulong, Display, ctypes.c_ulong, ctypes.c_int)
        _proto(xd.XDamageSubtract, None, Display, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
        base, err = ctypes.c_int(), ctypes.c_int()
        if not xd.XDamageQueryExtension(d, ctypes.byref(base), ctypes.byref(err)):
            raise OSError("the X server has no DAMAGE extension")
        self.notify = base.value  # XDamageNotify
        self.handle = xd.XDamageCreate(d, root, REPORT_NON_EMPTY)
        self.fd = x11.XConnectionNumber(d)

    def reset(self):
        """Forgets what was drawn so far."""
        x11.XSync(self.d, 0)
        self._drain()
        self.xdamage.XDamageSubtract(self.d, self.handle, 0, 0)
        x11.XSync(self.d, 0)
        self._drain()

    def _drain(self):
        """Reads every queued event (keyboard map changes come too); whether
        a damage event was among them."""
        seen, ev = False, XEvent()
        while x11.XPending(self.d):
            x11.XNextEvent(self.d, ctypes.byref(ev))
            seen = seen or ev.type == self.notify
        return seen

    def wait(self, deadline):
        """Waits until deadline for something to be drawn; whether it was.
        It is subtracted, so the next drawing is reported again."""
        while True:
            if self._drain():
                self.xdamage.XDamageSubtract(self.d, self.handle, 0, 0)
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            select.select([self.fd], [], [], left)
