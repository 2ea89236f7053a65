"""pilot-clipboard: hands text copied in the sandbox to x11vnc at once.

x11vnc 0.9.16 sends the sandbox's CLIPBOARD to viewers by polling it (about
every 2 s), and drops what it reads until 15 s have passed since the last
viewer connected (sel_waittime in its selection code, which no option
changes). A viewer that connects and sees something copied right away
waits 15 s or more for it, and the browser test gave up in about one run in
two. A change of the root window's CUT_BUFFER0 by another X client is sent
to every viewer at once, with no such wait: that is the route used here.

So this watcher, a thread of websockify's process (start, called by the
launcher beside this file), is told by XFixes each time the CLIPBOARD
changes owner, asks the new owner for the text, and writes it to
CUT_BUFFER0. Nothing is written when CUT_BUFFER0
already holds the text: x11vnc puts there what a viewer pasted, and takes
the CLIPBOARD with it, so the viewer's own text is not sent back to it.

Characters. RFB's clipboard is Latin-1 (x11vnc 0.9.16 has no extended
clipboard; noVNC decodes what it gets as Latin-1), while the sandbox's
programs copy UTF-8, and xclip hands its UTF-8 bytes out even when asked
for STRING (which means Latin-1). So the text is asked for as UTF8_STRING
(STRING if the owner has no such target) and written to CUT_BUFFER0 as
Latin-1, each character beyond it as '?', the same as the viewer page does
the other way. x11vnc runs with -noclipboard -noprimary (entrypoint), or
its own polling would send the raw UTF-8 again a second later.
The other way, x11vnc serves what a viewer pasted (Latin-1 bytes) as
UTF8_STRING too, which programs then read as broken UTF-8: an owner whose
UTF8_STRING is not valid UTF-8 has its text taken over here, as Latin-1,
and served as UTF8_STRING, STRING and TEXT (with PRIMARY too when the same
window owns it, as x11vnc does).

Any X client of the sandbox can already write CUT_BUFFER0 and have x11vnc
send it to viewers, so this gives the sandbox no new way in. What it reads
from the sandbox's owners is bounded (x11vnc's own limit, 256 KiB, beyond
which the text is cut, as x11vnc cuts it), and X errors a hostile owner
causes are ignored instead of ending the program.

Why a thread of websockify's (docs/performance.md, "An idle sandbox's
memory"): as a process of its own, a second Python, it cost an idle sandbox
about 4 MB of anonymous memory, where the thread costs the one Python
already running a few hundred KB. The two share nothing but the process:
the thread has its own X connection, which processes websockify forks for
its viewers close at once. The thread's end, for whatever reason (the
display lost, an exception), is written to websockify's log and ends the
process, which the entrypoint starts again, watcher and all; websockify
ending ends the watcher with it. Either way nothing stops silently.

Only the standard library and the X libraries x11vnc links (libX11,
libXfixes). Run as a program it watches in the foreground (the tests run it
so); `--check` loads the libraries and exits.
"""

import codecs
import ctypes
import os
import sys
import threading
import time
import traceback

# x11vnc's PROP_MAX: the most it reads of a selection or the cut buffer.
MAX_TEXT = 262144

XA_ATOM = 4
XA_PRIMARY = 1
XA_STRING = 31
XA_CUT_BUFFER0 = 9
SELECTION_CLEAR = 29  # the core event types
SELECTION_REQUEST = 30
SELECTION_NOTIFY = 31
XFIXES_SET_SELECTION_OWNER_NOTIFY_MASK = 1
PROP_MODE_REPLACE = 0
ANY_PROPERTY_TYPE = 0

x11 = ctypes.CDLL("libX11.so.6")
xfixes = ctypes.CDLL("libXfixes.so.3")

Display = ctypes.c_void_p
Window = Atom = Time = ctypes.c_ulong


class XSelectionEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
        ("display", Display), ("requestor", Window), ("selection", Atom),
        ("target", Atom), ("property", Atom), ("time", Time),
    ]


class XSelectionRequestEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
        ("display", Display), ("owner", Window), ("requestor", Window), ("selection", Atom),
        ("target", Atom), ("property", Atom), ("time", Time),
    ]


class XSelectionClearEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
        ("display", Display), ("window", Window), ("selection", Atom), ("time", Time),
    ]


class XFixesSelectionNotifyEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
        ("display", Display), ("window", Window), ("subtype", ctypes.c_int),
        ("owner", Window), ("selection", Atom), ("timestamp", Time),
        ("selection_timestamp", Time),
    ]


class XEvent(ctypes.Union):
    _fields_ = [
        ("type", ctypes.c_int), ("xselection", XSelectionEvent),
        ("xselectionrequest", XSelectionRequestEvent), ("xselectionclear", XSelectionClearEvent),
        ("xfixesselection", XFixesSelectionNotifyEvent), ("pad", ctypes.c_long * 24),
    ]


def _proto(fn, restype, *argtypes):
    fn.restype = restype
    fn.argtypes = list(argtypes)


_proto(x11.XOpenDisplay, Display, ctypes.c_char_p)
_proto(x11.XDefaultRootWindow, Window, Display)
_proto(x11.XCreateSimpleWindow, Window, Display, Window, ctypes.c_int, ctypes.c_int,
       ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_ulong, ctypes.c_ulong)
_proto(x11.XInternAtom, Atom, Display, ctypes.c_char_p, ctypes.c_int)
_proto(x11.XNextEvent, ctypes.c_int, Display, ctypes.POINTER(XEvent))
_proto(x11.XConvertSelection, ctypes.c_int, Display, Atom, Atom, Atom, Window, Time)
_proto(x11.XGetWindowProperty, ctypes.c_int, Display, Window, Atom, ctypes.c_long, ctypes.c_long,
       ctypes.c_int, Atom, ctypes.POINTER(Atom), ctypes.POINTER(ctypes.c_int),
       ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_ulong),
       ctypes.POINTER(ctypes.POINTER(ctypes.c_ubyte)))
_proto(x11.XDeleteProperty, ctypes.c_int, Display, Window, Atom)
_proto(x11.XChangeProperty, ctypes.c_int, Display, Window, Atom, Atom, ctypes.c_int, ctypes.c_int,
       ctypes.c_char_p, ctypes.c_int)
_proto(x11.XFlush, ctypes.c_int, Display)
_proto(x11.XSetSelectionOwner, ctypes.c_int, Display, Atom, Window, Time)
_proto(x11.XGetSelectionOwner, Window, Display, Atom)
_proto(x11.XSendEvent, ctypes.c_int, Display, Window, ctypes.c_int, ctypes.c_long, ctypes.POINTER(XEvent))
_proto(x11.XFree, ctypes.c_int, ctypes.c_void_p)
_proto(x11.XConnectionNumber, ctypes.c_int, Display)
ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, Display, ctypes.c_void_p)
_proto(x11.XSetErrorHandler, ctypes.c_void_p, ERROR_HANDLER)
IO_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, Display)
_proto(x11.XSetIOErrorHandler, ctypes.c_void_p, IO_ERROR_HANDLER)
_proto(xfixes.XFixesQueryExtension, ctypes.c_int, Display, ctypes.POINTER(ctypes.c_int),
       ctypes.POINTER(ctypes.c_int))
_proto(xfixes.XFixesSelectSelectionInput, None, Display, Window, Atom, ctypes.c_ulong)


@ERROR_HANDLER
def _ignore_x_error(display, event):
    # Xlib's default handler ends the process. An owner that vanishes, or
    # sets a property of the wrong kind, must not end this one.
    return 0


@IO_ERROR_HANDLER
def _lost_display(display):
    # The connection is gone (Xvfb ended). Xlib's default handler calls
    # exit(), which from a thread of websockify's would run the
    # interpreter's shutdown under its other threads: end the process at
    # once instead, saying why (the module's docstring).
    _stopped("lost the display")


def _stopped(why):
    sys.stderr.write("pilot-clipboard: %s; ending the process so that it starts again\n" % why)
    sys.stderr.flush()
    os._exit(1)


def read_property(d, window, prop, delete):
    """Up to MAX_TEXT bytes of an 8-bit property, or None if it has none."""
    kind, fmt = Atom(), ctypes.c_int()
    nitems, after = ctypes.c_ulong(), ctypes.c_ulong()
    data = ctypes.POINTER(ctypes.c_ubyte)()
    status = x11.XGetWindowProperty(d, window, prop, 0, MAX_TEXT // 4, delete, ANY_PROPERTY_TYPE,
                                    ctypes.byref(kind), ctypes.byref(fmt), ctypes.byref(nitems),
                                    ctypes.byref(after), ctypes.byref(data))
    if status != 0:
        return None
    try:
        if fmt.value != 8 or not data:
            return None
        return ctypes.string_at(data, min(nitems.value, MAX_TEXT))
    finally:
        if data:
            x11.XFree(data)


def decode(data):
    """The text of an owner's UTF8_STRING answer, and whether it was UTF-8.

    Bytes that are not UTF-8 are Latin-1 served under the wrong name (what
    x11vnc does with a viewer's paste). A character that MAX_TEXT cut in
    two is dropped, not taken for Latin-1.
    """
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(data, final=False), True
    except UnicodeDecodeError:
        return data.decode("latin-1"), False


def latin1(text):
    """text as RFB carries it: Latin-1, '?' for each character beyond."""
    return text.encode("latin-1", errors="replace")


class Watcher:
    def __init__(self, d):
        self.d = d
        self.root = x11.XDefaultRootWindow(d)
        # An unmapped window of our own for the owners to answer to.
        self.window = x11.XCreateSimpleWindow(d, self.root, 0, 0, 1, 1, 0, 0, 0)
        self.clipboard = x11.XInternAtom(d, b"CLIPBOARD", 0)
        self.prop = x11.XInternAtom(d, b"_PILOT_CLIPBOARD", 0)
        self.utf8 = x11.XInternAtom(d, b"UTF8_STRING", 0)
        self.targets = x11.XInternAtom(d, b"TARGETS", 0)
        self.text_atom = x11.XInternAtom(d, b"TEXT", 0)
        # The ownership change whose text is awaited (its timestamp): an
        # answer for an older one is not written over a newer one's.
        self.pending = None
        # The selections this program owns (atom -> text), after taking
        # over a Latin-1 owner's.
        self.owned = {}
        base, error_base = ctypes.c_int(), ctypes.c_int()
        if not xfixes.XFixesQueryExtension(d, ctypes.byref(base), ctypes.byref(error_base)):
            raise SystemExit("pilot-clipboard: the X server has no XFixes extension")
        self.owner_notify = base.value  # XFixesSelectionNotify is its first event
        xfixes.XFixesSelectSelectionInput(d, self.root, self.clipboard, XFIXES_SET_SELECTION_OWNER_NOTIFY_MASK)
        x11.XFlush(d)

    def run(self):
        self.catch_up()
        ev = XEvent()
        while True:
            x11.XNextEvent(self.d, ctypes.byref(ev))
            if ev.type == self.owner_notify:
                self.owner_changed(ev.xfixesselection)
            elif ev.type == SELECTION_NOTIFY:
                self.answered(ev.xselection)
            elif ev.type == SELECTION_REQUEST:
                self.serve(ev.xselectionrequest)
            elif ev.type == SELECTION_CLEAR:
                self.owned.pop(ev.xselectionclear.selection, None)

    def catch_up(self):
        """Hands on what was copied before this program watched: it starts
        beside the desktop (and again after a crash), and a program of the
        sandbox may copy first."""
        owner = x11.XGetSelectionOwner(self.d, self.clipboard)
        if owner in (0, self.window):
            return
        self.pending = (0, owner)  # CurrentTime, which the owner's answer carries
        self.ask(self.utf8)

    def owner_changed(self, e):
        if e.selection != self.clipboard or e.owner in (0, self.window):
            return
        self.owned.pop(self.clipboard, None)
        self.pending = (e.selection_timestamp, e.owner)
        self.ask(self.utf8)

    def ask(self, target):
        x11.XConvertSelection(self.d, self.clipboard, target, self.prop, self.window, self.pending[0])
        x11.XFlush(self.d)

    def answered(self, e):
        if e.requestor != self.window or e.selection != self.clipboard or not self.pending \
                or e.time != self.pending[0]:
            return
        if e.property == 0:
            if e.target == self.utf8:
                self.ask(XA_STRING)  # an owner with no UTF8_STRING
            else:
                self.pending = None  # the owner has no text
            return
        owner = self.pending[1]
        self.pending = None
        data = read_property(self.d, self.window, e.property, 1)
        x11.XDeleteProperty(self.d, self.window, e.property)
        if not data:
            x11.XFlush(self.d)
            return
        text, utf8 = decode(data) if e.target == self.utf8 else (data.decode("latin-1"), True)
        out = latin1(text)
        if out != read_property(self.d, self.root, XA_CUT_BUFFER0, 0):
            x11.XChangeProperty(self.d, self.root, XA_CUT_BUFFER0, XA_STRING, 8, PROP_MODE_REPLACE,
                                out, len(out))
        if not utf8:
            self.take_over(owner, text, e.time)
        x11.XFlush(self.d)

    def take_over(self, owner, text, when):
        """Owns the CLIPBOARD (and PRIMARY if owner has it too) with text."""
        sels = [self.clipboard]
        if x11.XGetSelectionOwner(self.d, XA_PRIMARY) == owner:
            sels.append(XA_PRIMARY)
        for sel in sels:
            if x11.XGetSelectionOwner(self.d, sel) != owner:
                continue  # a newer owner came meanwhile
            x11.XSetSelectionOwner(self.d, sel, self.window, when)
            if x11.XGetSelectionOwner(self.d, sel) == self.window:
                self.owned[sel] = text

    def serve(self, r):
        """Answers a request for a selection this program owns."""
        text = self.owned.get(r.selection)
        prop = r.property or r.target  # an old client names no property
        if text is None:
            prop = 0
        elif r.target == self.targets:
            atoms = (ctypes.c_ulong * 4)(self.targets, self.utf8, XA_STRING, self.text_atom)
            x11.XChangeProperty(self.d, r.requestor, prop, XA_ATOM, 32, PROP_MODE_REPLACE,
                                ctypes.cast(atoms, ctypes.c_char_p), 4)
        elif r.target in (self.utf8, self.text_atom, XA_STRING):
            data = latin1(text) if r.target == XA_STRING else text.encode("utf-8")
            kind = XA_STRING if r.target == XA_STRING else self.utf8
            x11.XChangeProperty(self.d, r.requestor, prop, kind, 8, PROP_MODE_REPLACE, data, len(data))
        else:
            prop = 0
        reply = XEvent()
        reply.xselection = XSelectionEvent(SELECTION_NOTIFY, 0, 1, self.d, r.requestor, r.selection,
                                           r.target, prop, r.time)
        x11.XSendEvent(self.d, r.requestor, 0, 0, ctypes.byref(reply))
        x11.XFlush(self.d)


# DISPLAY_WAIT: how long the watcher waits for the display to answer.
# websockify starts beside Xvfb (entrypoint.sh), about a second before the
# display is up; the entrypoint gives Xvfb 20 s.
DISPLAY_WAIT = 30
DISPLAY_POLL = 0.1


def open_display():
    """The display's connection, once it answers, for at most DISPLAY_WAIT."""
    deadline = time.monotonic() + DISPLAY_WAIT
    while True:
        d = x11.XOpenDisplay(None)
        if d:
            return d
        if time.monotonic() >= deadline:
            raise SystemExit("pilot-clipboard: cannot open the display")
        time.sleep(DISPLAY_POLL)


def watch():
    """Watches the CLIPBOARD until the display is lost."""
    x11.XSetErrorHandler(_ignore_x_error)
    x11.XSetIOErrorHandler(_lost_display)
    d = open_display()
    # A process forked for a viewer must not hold the desktop's connection
    # (it would outlive this one), nor ever write into it.
    fd = x11.XConnectionNumber(d)
    os.register_at_fork(after_in_child=lambda: os.close(fd))
    Watcher(d).run()


def start():
    """Runs the watcher on a daemon thread of this process; its end ends
    the process (the module's docstring)."""
    def run():
        try:
            watch()
            why = "stopped watching"
        except SystemExit as e:
            why = str(e).removeprefix("pilot-clipboard: ")
        except BaseException:  # noqa: B902 (any end of the thread ends the process)
            traceback.print_exc()
            why = "failed"
        _stopped(why)

    threading.Thread(target=run, name="pilot-clipboard", daemon=True).start()


def main(argv):
    if argv[1:] == ["--check"]:
        return 0
    watch()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
