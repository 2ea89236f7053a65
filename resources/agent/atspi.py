"""The accessibility trees of the sandbox's desktop programs, read from the
AT-SPI bus (GTK and Qt programs put theirs there).

The bus is the sandbox user's (resources/docker/browser/pilot-a11y.sh
starts it as that user, with at-spi2-registryd started by the bus when the
first program registers), at the fixed address in the image's
AT_SPI_BUS_ADDRESS. The agent reads it as a client (dbuswire.py): the
programs answer every call, so each level of a tree costs one round trip,
every call of the level sent before the answers are read.
"""

import os
import time

import dbuswire

BUS_PATH = "/run/pilot-a11y/bus"
SANDBOX_UID = 1000  # desktop.UID: the bus must be the sandbox user's
ACCESSIBLE = "org.a11y.atspi.Accessible"
COMPONENT = "org.a11y.atspi.Component"
PROPS = "org.freedesktop.DBus.Properties"
REGISTRY = "org.a11y.atspi.Registry"
ROOT = "/org/a11y/atspi/accessible/root"
SCREEN = 0  # ATSPI_COORD_TYPE_SCREEN

# AT-SPI's roles (enum AtspiRole, as libatspi 2.46 names them) in the
# words of ARIA where it has one, as Chromium's pages use them: one
# vocabulary for the whole tree.
ROLES = {
    2: "alert", 5: "calendar", 6: "canvas", 7: "checkbox", 8: "menuitemcheckbox", 10: "columnheader",
    11: "combobox", 16: "dialog", 18: "canvas", 19: "dialog", 23: "window", 26: "image", 27: "image",
    29: "label", 31: "list", 32: "listitem", 33: "menu", 34: "menubar", 35: "menuitem", 37: "tab",
    38: "tablist", 40: "textbox", 41: "menu", 42: "progressbar", 43: "button", 44: "radio",
    45: "menuitemradio", 47: "rowheader", 48: "scrollbar", 50: "separator", 51: "slider", 52: "spinbutton",
    54: "status", 55: "table", 56: "cell", 57: "columnheader", 58: "rowheader", 60: "terminal", 61: "textbox",
    62: "button", 63: "toolbar", 64: "tooltip", 65: "tree", 66: "treegrid", 69: "window", 71: "banner",
    72: "contentinfo", 73: "paragraph", 75: "application", 79: "textbox", 81: "caption", 82: "document",
    83: "heading", 84: "tabpanel", 85: "section", 87: "form", 88: "link", 90: "row", 91: "treeitem",
    94: "document", 95: "document", 98: "listbox", 99: "group", 101: "alert", 102: "status", 103: "meter",
    104: "titlebar", 105: "blockquote", 109: "article", 110: "region", 111: "log", 113: "math",
    115: "timer", 116: "text", 129: "button",
}
# Roles of containers that say nothing by themselves: listed only with a name.
PLAIN = {0, 14, 20, 21, 24, 25, 28, 30, 39, 46, 49, 53, 67, 68, 70, 78, 86}
TOP_LEVEL = {2, 16, 19, 23, 28, 33, 41, 64, 69}  # what an application's children are: windows, dialogs, menus

# AT-SPI's states (enum AtspiStateType): bit numbers in GetState's two words.
S_ACTIVE, S_CHECKED, S_COLLAPSED, S_EDITABLE, S_ENABLED, S_EXPANDABLE, S_EXPANDED = 1, 4, 5, 7, 8, 9, 10
S_FOCUSABLE, S_FOCUSED, S_MODAL, S_PRESSED, S_SELECTED, S_SENSITIVE, S_SHOWING = 11, 12, 16, 20, 23, 24, 25
S_VISIBLE, S_MANAGES_DESCENDANTS, S_INDETERMINATE, S_REQUIRED, S_INVALID, S_CHECKABLE, S_READ_ONLY = (
    30, 31, 32, 33, 36, 41, 43)

MAX_CHILDREN = 500  # of one node: a list of 10,000 rows is read no further
CALL_TIMEOUT = 1.0  # seconds one level's answers may take


class Unavailable(Exception):
    """No accessibility bus answers: the image has none, or it is not up."""


def connect(timeout=1.0):
    """A connection to the sandbox user's accessibility bus."""
    if not os.path.exists(BUS_PATH):
        raise Unavailable("this sandbox has no accessibility bus (%s)" % BUS_PATH)
    try:
        return dbuswire.Connection(BUS_PATH, peer_uid=SANDBOX_UID, timeout=timeout)
    except (OSError, dbuswire.Error) as e:
        raise Unavailable("the accessibility bus does not answer: %s" % e) from None


def states_of(words):
    bits = 0
    for i, w in enumerate(words[:2]):
        if isinstance(w, int):
            bits |= (w & 0xFFFFFFFF) << (32 * i)
    return bits


def has(bits, state):
    return bits >> state & 1 == 1


def state_words(bits, role):
    """The states a reader acts on, in the words the web's tree uses."""
    out = []
    if has(bits, S_FOCUSED):
        out.append("focused")
    if has(bits, S_CHECKED) or has(bits, S_CHECKABLE) or role in (7, 8, 44, 45):
        out.append("mixed" if has(bits, S_INDETERMINATE) else "checked" if has(bits, S_CHECKED) else "unchecked")
    if has(bits, S_PRESSED):
        out.append("pressed")
    if has(bits, S_SELECTED):
        out.append("selected")
    if has(bits, S_EXPANDABLE):
        out.append("expanded" if has(bits, S_EXPANDED) else "collapsed")
    if not (has(bits, S_ENABLED) or has(bits, S_SENSITIVE)) and role not in PLAIN and role not in (29, 116):
        out.append("disabled")
    if has(bits, S_READ_ONLY) and role in (40, 61, 79):
        out.append("readonly")
    for state, word in ((S_REQUIRED, "required"), (S_INVALID, "invalid"), (S_MODAL, "modal")):
        if has(bits, state):
            out.append(word)
    return out


class Node:
    """One accessible object as read: bus and path say which."""

    __slots__ = ("bus", "path", "role", "name", "bits", "bounds", "children", "value", "pid")

    def __init__(self, bus, path):
        self.bus, self.path = bus, path
        self.role, self.name, self.bits, self.bounds = 0, "", 0, None
        self.children, self.value, self.pid = [], None, None

    @property
    def key(self):
        return ("a", self.bus, self.path)

    def showing(self):
        return has(self.bits, S_SHOWING) and has(self.bits, S_VISIBLE)

    def role_word(self):
        return ROLES.get(self.role, "generic" if self.role in PLAIN else "object")

    def plain(self):
        return self.role in PLAIN


def applications(conn):
    """The registered applications' roots, as (bus, path), and the pid of
    each one's process."""
    try:
        apps = conn.call(REGISTRY, ROOT, ACCESSIBLE, "GetChildren", timeout=CALL_TIMEOUT)[0]
    except dbuswire.Error:
        return []
    apps = [(b, p) for b, p in apps if isinstance(b, str) and b.startswith(":")]
    serials = [conn.send("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                         "GetConnectionUnixProcessID", "s", [b]) for b, _ in apps]
    got = conn.replies(serials, CALL_TIMEOUT)
    out = []
    for (b, p), s in zip(apps, serials):
        pid = got.get(s)
        out.append((b, p, pid[0] if isinstance(pid, tuple) else None))
    return out


def read_level(conn, nodes):
    """Reads each node's role, name, states, extents and children, every
    call sent before the first answer is read. A node whose program does
    not answer in time keeps what it had: nothing."""
    calls = []
    for n in nodes:
        calls.append((n, "role", conn.send(n.bus, n.path, ACCESSIBLE, "GetRole")))
        calls.append((n, "name", conn.send(n.bus, n.path, PROPS, "Get", "ss", [ACCESSIBLE, "Name"])))
        calls.append((n, "state", conn.send(n.bus, n.path, ACCESSIBLE, "GetState")))
        calls.append((n, "extents", conn.send(n.bus, n.path, COMPONENT, "GetExtents", "u", [SCREEN])))
        calls.append((n, "children", conn.send(n.bus, n.path, ACCESSIBLE, "GetChildren")))
    got = conn.replies([s for _, _, s in calls], CALL_TIMEOUT)
    kids = {}
    for n, what, serial in calls:
        body = got.get(serial)
        if not isinstance(body, tuple) or not body:
            continue
        v = body[0]
        if what == "role" and isinstance(v, int):
            n.role = v
        elif what == "name" and isinstance(v, str):
            n.name = v
        elif what == "state" and isinstance(v, list):
            n.bits = states_of(v)
        elif what == "extents" and isinstance(v, tuple) and len(v) == 4 and all(isinstance(i, int) for i in v):
            n.bounds = v
        elif what == "children" and isinstance(v, list):
            kids[id(n)] = v
    return kids


def read_tree(conn, bus, path, limit, deadline):
    """The tree under one object, level by level, descending only into
    objects that show, at most limit objects and until the deadline.
    Returns the root and how many objects were left unread."""
    root = Node(bus, path)
    level, count, unread = [root], 1, 0
    while level:
        if time.monotonic() > deadline:
            unread += len(level)
            break
        kids = read_level(conn, level)
        nxt = []
        for n in level:
            refs = kids.get(id(n), []) if (n is root or n.showing()) else []
            if has(n.bits, S_MANAGES_DESCENDANTS) and len(refs) > MAX_CHILDREN:
                unread += len(refs) - MAX_CHILDREN
                refs = refs[:MAX_CHILDREN]
            for ref in refs:
                if not (isinstance(ref, tuple) and len(ref) == 2 and all(isinstance(r, str) for r in ref)):
                    continue
                if count >= limit:
                    unread += 1
                    continue
                child = Node(ref[0], ref[1])
                n.children.append(child)
                nxt.append(child)
                count += 1
        level = nxt
    read_values(conn, root)
    return root, unread


def read_values(conn, root):
    """The text of editable fields, one more round trip for those alone."""
    fields = [n for n in walk(root) if n.role in (40, 61, 79) and has(n.bits, S_EDITABLE) and n.showing()]
    serials = [conn.send(n.bus, n.path, "org.a11y.atspi.Text", "GetText", "ii", [0, 200]) for n in fields]
    got = conn.replies(serials, CALL_TIMEOUT)
    for n, s in zip(fields, serials):
        body = got.get(s)
        if isinstance(body, tuple) and body and isinstance(body[0], str):
            n.value = "•" * len(body[0]) if n.role == 40 else body[0]


def walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def refresh(conn, bus, path):
    """An object's current role, name, states and extents (to act on it),
    or None when it no longer exists."""
    n = Node(bus, path)
    calls = [conn.send(bus, path, ACCESSIBLE, "GetRole"),
             conn.send(bus, path, PROPS, "Get", "ss", [ACCESSIBLE, "Name"]),
             conn.send(bus, path, ACCESSIBLE, "GetState"),
             conn.send(bus, path, COMPONENT, "GetExtents", "u", [SCREEN])]
    got = conn.replies(calls, CALL_TIMEOUT)
    role, name, state, extents = (got.get(s) for s in calls)
    if not isinstance(role, tuple) or not isinstance(state, tuple):
        return None  # an error (UnknownObject: gone) or no answer
    n.role = role[0] if isinstance(role[0], int) else 0
    n.name = name[0] if isinstance(name, tuple) and isinstance(name[0], str) else ""
    n.bits = states_of(state[0]) if isinstance(state[0], list) else 0
    if has(n.bits, 6):  # ATSPI_STATE_DEFUNCT
        return None
    if isinstance(extents, tuple) and isinstance(extents[0], tuple) and len(extents[0]) == 4:
        n.bounds = extents[0]
    return n


def grab_focus(conn, bus, path):
    """Asks the object's program to give it the keyboard focus; whether it did."""
    try:
        return bool(conn.call(bus, path, COMPONENT, "GrabFocus", timeout=CALL_TIMEOUT)[0])
    except dbuswire.Error:
        return False


def await_focus(conn, bus, path, timeout):
    """Waits until the object says it has the keyboard focus (its FOCUSED
    state: a program sets it once its window is active and the object is
    its focus widget, in its own time after GrabFocus); whether it did
    within timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        n = refresh(conn, bus, path)
        if n is not None and has(n.bits, S_FOCUSED):
            return True
        if n is None or time.monotonic() > deadline:
            return False
        time.sleep(0.01)
