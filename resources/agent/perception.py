"""One accessibility tree of everything on the screen, for the desktop
agent's tree, locate and focus operations.

The roots are the top-level windows, topmost first, as the X server
stacks them (xscreen.py). Under each is what its program exposes: a GTK or
Qt program's tree from the AT-SPI bus (atspi.py), matched to its window by
process and place; the page a Chromium window shows, from the DevTools
Protocol (web.py); or nothing, said in a note (xterm and most plain X
programs expose no tree). Menus and popups a program shows outside its
windows come first, being on top.

Every element gets a ref, "e" and a number, that names it until it is
gone: the same element keeps its ref from one tree to the next, and a ref
the latest tree did not see is forgotten. A ref is the element's identity
in its source: the window's X id, the AT-SPI object (bus name, path), or
the page's target and the DOM node's backendDOMNodeId.
"""

import time

import atspi
import cdp
import dbuswire
import web

MAX_REFS = 20000  # refs kept: more than any tree lists
AT_SPI_LIMIT = 3000  # objects read from one program
TREE_DEADLINE = 5.0  # seconds a whole tree may take to read
# Characters of a name or value sent: the sidecar shows 100 of them
# (tools/tree.go) and matches a query against these; a page's paragraph
# can be a name of megabytes, and the answer is read only up to 8 MiB.
MAX_TEXT = 500
FOCUS_WAIT = web.FOCUS_WAIT  # seconds an element has to take the keyboard focus
CHROMIUM_CLASSES = {"chromium", "chromium-browser", "google-chrome"}

NO_TREE = "exposes no accessibility tree (only GTK and Qt programs and Chromium's pages do); use the screenshot"


class Gone(Exception):
    """A ref that names nothing on the screen now; the message says why."""


class Refs:
    """Refs of the elements of the latest tree, and what each was."""

    def __init__(self):
        self.by_key, self.info, self.next = {}, {}, 0

    def ref(self, key, info):
        ref = self.by_key.get(key)
        if ref is None:
            self.next += 1
            ref = self.by_key[key] = "e%d" % self.next
        self.info[ref] = (key, info)
        return ref

    def keep(self, refs):
        """Forgets every ref not in refs (those the latest tree saw)."""
        self.by_key = {k: r for k, r in self.by_key.items() if r in refs}
        self.info = {r: v for r, v in self.info.items() if r in refs}
        if len(self.by_key) > MAX_REFS:  # a tree never lists this many; bound it all the same
            self.by_key, self.info = {}, {}

    def lookup(self, ref):
        got = self.info.get(ref)
        if got is None:
            raise Gone("%s is not a ref of the latest tree: take a screenshot with tree: true and use its refs" % ref)
        return got


def overlap(a, b):
    if a is None or b is None:
        return 0
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return max(0, w) * max(0, h)


def centre(box):
    return (box[0] + box[2] // 2, box[1] + box[3] // 2)


def inside(p, box):
    return box[0] <= p[0] < box[0] + box[2] and box[1] <= p[1] < box[1] + box[3]


def clip(box, width, height):
    """A box cut to the screen; None when none of it is on the screen."""
    if box is None:
        return None
    x0, y0 = max(box[0], 0), max(box[1], 0)
    x1, y1 = min(box[0] + box[2], width), min(box[1] + box[3], height)
    if x1 <= x0 or y1 <= y0:
        return None
    return (x0, y0, x1 - x0, y1 - y0)


class Builder:
    """Turns the windows and the trees read for them into the tree's lines."""

    def __init__(self, screen, refs):
        self.screen, self.refs = screen, refs
        self.nodes, self.seen = [], set()
        self.omitted = {"offscreen": 0, "covered": 0, "unread": 0}
        self.content = 0

    def add(self, key, depth, role, name, states=(), value=None, box=None, note=None, win=None, content=True):
        role, name = role[:MAX_TEXT], name[:MAX_TEXT]
        info = {"role": role, "name": name, "win": win}
        ref = self.refs.ref(key, info)
        self.seen.add(ref)
        node = {"ref": ref, "depth": depth, "role": role, "name": name}
        if states:
            node["states"] = list(states)
        if value is not None and str(value) != "":
            node["value"] = str(value)[:MAX_TEXT]
        if box is not None:
            node["box"] = list(box)
        if note:
            node["note"] = note
        self.nodes.append(node)
        self.content += 1 if content else 0

    def placed(self, box, above):
        """Where a node is, cut to the screen, or why it is not listed."""
        box = clip(box, self.screen.width, self.screen.height)
        if box is None:
            return None, "offscreen"
        c = centre(box)
        if any(inside(c, b) for b in above):
            return None, "covered"
        return box, None

    def atspi_node(self, n, depth, above, win):
        """An AT-SPI object and what shows under it; a container that says
        nothing, or one not shown, leaves its children at its depth."""
        box, why = self.placed(n.bounds, above) if n.bounds else (None, "offscreen")
        plain = n.plain() and not n.name.strip()
        if why is None and not plain:
            self.add(n.key, depth, n.role_word(), n.name.strip(), atspi.state_words(n.bits, n.role), n.value, box, win=win)
            depth += 1
        elif why is not None and not plain:
            self.omitted[why] += 1
        kids = [k for k in n.children if k.name.strip() != n.name.strip() or k.role not in (29, 116) or k.children]
        for k in kids:
            self.atspi_node(k, depth, above, win)

    def web_node(self, n, depth, above, win):
        box, why = self.placed(n.box, above) if n.box else (None, "offscreen")
        if why is None:
            self.add(n.key, depth, n.role, n.name, n.states, n.value, box, win=win)
            depth += 1
        else:
            self.omitted[why] += 1
        for k in n.children:
            self.web_node(k, depth, above, win)


def read_atspi(deadline):
    """The showing top-level objects of every program on the AT-SPI bus,
    each (node, pid), how many objects were left unread, and why there are
    none when the bus does not answer."""
    try:
        conn = atspi.connect()
    except atspi.Unavailable as e:
        return [], 0, str(e)
    try:
        tops, unread = [], 0
        for bus, path, pid in atspi.applications(conn):
            try:
                root, left = atspi.read_tree(conn, bus, path, AT_SPI_LIMIT, deadline)
            except dbuswire.Error:
                continue
            unread += left
            tops.extend((n, pid) for n in root.children if n.showing() and n.bounds)
        return tops, unread, None
    finally:
        conn.close()


def read_pages():
    """The pages Chromium shows, with their trees: each (page, root), the
    nodes left unread, and why there are none when its DevTools port does
    not answer."""
    try:
        browser = cdp.Browser()
    except (OSError, cdp.Error) as e:
        return [], 0, "its DevTools port does not answer (%s)" % e
    try:
        out, unread = [], 0
        for page in web.visible_pages(browser):
            try:
                root, left = web.read_tree(browser, page)
            except cdp.Error:
                continue
            unread += left
            if root is not None:
                out.append((page, root))
        return out, unread, None
    finally:
        browser.close()


def match_window(win, tops):
    """The AT-SPI top-level (and its index in tops) that is this window's:
    of its process, overlapping it most."""
    best, best_i, best_area = None, None, 0
    for i, (n, pid) in enumerate(tops):
        if win["pid"] is not None and pid is not None and pid != win["pid"]:
            continue
        area = overlap(n.bounds, win["bounds"])
        if area > best_area:
            best, best_i, best_area = n, i, area
    return best, best_i


def match_page(win, pages):
    for i, (page, root) in enumerate(pages):
        b = page.window
        got = (b.get("left"), b.get("top"), b.get("width"), b.get("height"))
        if all(isinstance(v, (int, float)) and abs(v - w) <= 2 for v, w in zip(got, win["bounds"])):
            return page, root, i
    return None, None, None


def tree(screen, refs):
    """The tree of the screen: its nodes in order (each with ref, depth,
    role, name and, where known, states, value, box, note), what was left
    out and why, and how many nodes came from a program's tree."""
    deadline = time.monotonic() + TREE_DEADLINE
    wins = screen.windows()
    tops, unread_a, no_bus = read_atspi(deadline)
    chromium = [w for w in wins if w["class"].lower() in CHROMIUM_CLASSES]
    pages, unread_w, no_cdp = read_pages() if chromium else ([], 0, None)
    b = Builder(screen, refs)
    b.omitted["unread"] = unread_a + unread_w
    mine = {}  # window id -> its AT-SPI top-level
    for win in wins:
        top, i = match_window(win, tops)
        if top is not None:
            mine[win["id"]] = tops.pop(i)[0]
    # What is left shows outside every window: menus, popups, tooltips.
    for n, _ in tops:
        b.atspi_node(n, 0, [], None)
    above = [n.bounds for n, _ in tops]
    for win in wins:
        add_window(b, win, mine.get(win["id"]), pages, above, no_bus, no_cdp)
        above.append(win["bounds"])
    refs.keep(b.seen)
    return {"nodes": b.nodes, "omitted": b.omitted, "content": b.content}


def add_window(b, win, top, pages, above, no_bus, no_cdp):
    """A window's node, and what its program exposes under it: top, its
    AT-SPI top-level, or the page it shows."""
    key, bounds = ("x", win["id"]), win["bounds"]
    box, why = b.placed(bounds, [])
    if box is None or any(overlap(box, a) == box[2] * box[3] for a in above):
        b.omitted["covered" if box else why] += 1
        return
    title = win["title"].strip() or win["class"]
    if top is not None:
        role = top.role_word() if top.role_word() not in ("object", "generic") else "window"
        b.add(key, 0, role, top.name.strip() or title, atspi.state_words(top.bits, top.role), box=box, win=win["id"])
        for k in top.children:
            b.atspi_node(k, 1, above, win["id"])
        return
    if win["class"].lower() not in CHROMIUM_CLASSES:
        note = NO_TREE if no_bus is None else NO_TREE + " (%s)" % no_bus
        b.add(key, 0, "window", title, box=box, win=win["id"], note=note, content=False)
        return
    page, root, i = match_page(win, pages)
    if page is None:
        b.add(key, 0, "window", title, box=box, win=win["id"], content=False,
              note="Chromium's page " + (no_cdp or "is not known to its DevTools port"))
        return
    pages.pop(i)
    b.add(key, 0, "window", title, box=box, win=win["id"], content=False)
    b.web_node(root, 1, above, win["id"])


def covered_by(screen, win_id, point):
    """The title of the window above win_id that covers point, if one does."""
    for w in screen.windows():
        if w["id"] == win_id:
            return None
        if inside(point, w["bounds"]):
            return w["title"] or w["class"]
    return None


def describe(info):
    return '%s "%s"' % (info["role"], info["name"][:60]) if info["name"] else info["role"]


def locate(screen, refs, ref):
    """Where a ref's element is on the screen now, to act on it: its box
    (cut to the screen), role and name. Gone when it is not there."""
    key, info = refs.lookup(ref)
    what = "%s (%s)" % (ref, describe(info))
    box = current_box(screen, key, what)
    box = clip(box, screen.width, screen.height)
    if box is None:
        raise Gone("%s is off the screen now: scroll it into view or take a new screenshot with tree: true" % what)
    if info["win"] is not None:
        over = covered_by(screen, info["win"], centre(box))
        if over is not None:
            raise Gone('%s is behind the window "%s" now: bring its window to the front first' % (what, over))
    return {"x": box[0], "y": box[1], "width": box[2], "height": box[3], "role": info["role"], "name": info["name"]}


def current_box(screen, key, what):
    if key[0] == "x":
        for w in screen.windows():
            if w["id"] == key[1]:
                return w["bounds"]
        raise Gone("%s is gone: its window was closed or hidden" % what)
    if key[0] == "a":
        try:
            conn = atspi.connect()
        except atspi.Unavailable as e:
            raise Gone("%s cannot be found: %s" % (what, e)) from None
        try:
            n = atspi.refresh(conn, key[1], key[2])
        finally:
            conn.close()
        if n is None:
            raise Gone("%s is gone: its program no longer has it" % what)
        if not n.showing() or not n.bounds:
            raise Gone("%s is not shown now" % what)
        return n.bounds
    browser = open_browser(what)
    try:
        got, _ = web.locate(browser, key[1], key[2])
    finally:
        browser.close()
    if got == "gone":
        raise Gone("%s is gone: the page changed or was left" % what)
    if got == "hidden":
        raise Gone("%s is on a page that is not shown now (another tab, or its window is minimized)" % what)
    if got == "offscreen":
        raise Gone("%s is outside the page's view now: scroll it into view first" % what)
    return got


def open_browser(what):
    try:
        return cdp.Browser()
    except (OSError, cdp.Error) as e:
        raise Gone("%s cannot be found: Chromium's DevTools port does not answer (%s)" % (what, e)) from None


def focus(screen, refs, ref):
    """Gives a ref's element the keyboard focus: its window to the front,
    then the element itself. Returns once the element holds the focus (a
    page's active element, an AT-SPI object's focused state), so that keys
    sent next reach it; Gone (with why) when it cannot, or did not within
    the wait."""
    key, info = refs.lookup(ref)
    what = "%s (%s)" % (ref, describe(info))
    if info["win"] is not None and not screen.activate(info["win"]):
        raise Gone("%s: its window did not take the keyboard focus" % what)
    if key[0] == "a":
        focus_atspi(key, what)
    elif key[0] == "w":
        browser = open_browser(what)
        try:
            page = web.attach(browser, key[1])
            if page is None:
                raise Gone("%s is on a page that is not shown now" % what)
            err = web.focus(browser, page, key[2])
            if err is not None:
                raise Gone("%s %s" % (what, err))
        finally:
            browser.close()
    return {"role": info["role"], "name": info["name"]}


def type_into(refs, ref, text):
    """Types text into the page that holds a ref's element, which focus
    gave the keyboard focus, through the browser (web.type_text): keys sent
    through the X server reach Chromium's window but can be dropped by it
    while it is still becoming the active window (on a loaded machine, a
    page that had the focus got none of three keys:
    TestTreeOfAPageAndActingByRef). False for an element that is not on a
    page: the keyboard types into it. Gone when it cannot."""
    key, info = refs.lookup(ref)
    if key[0] != "w":
        return False
    what = "%s (%s)" % (ref, describe(info))
    browser = open_browser(what)
    try:
        page = web.attach(browser, key[1])
        if page is None:
            raise Gone("%s is on a page that is not shown now" % what)
        err = web.type_text(browser, page, text)
        if err is not None:
            raise Gone("typing into %s stopped: %s" % (what, err))
    finally:
        browser.close()
    return True


def focus_atspi(key, what):
    try:
        conn = atspi.connect()
    except atspi.Unavailable as e:
        raise Gone("%s cannot be found: %s" % (what, e)) from None
    try:
        if not atspi.grab_focus(conn, key[1], key[2]):
            raise Gone("%s cannot take the keyboard focus: click it instead" % what)
        if not atspi.await_focus(conn, key[1], key[2], FOCUS_WAIT):
            raise Gone("%s did not take the keyboard focus within %g s (its program does not say it is focused)"
                       % (what, FOCUS_WAIT))
    finally:
        conn.close()
