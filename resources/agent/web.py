"""The pages Chromium shows on the screen and their accessibility trees,
through its DevTools Protocol (cdp.py): the tree from Accessibility's
getFullAXTree, each node's place from DOM.getBoxModel, turned from the
page's CSS pixels into the screen's with the window's place and the
page's zoom.

Chromium exposes its pages to AT-SPI only when told a screen reader runs,
and then its own tabs, menus and every page with them; the DevTools
Protocol gives the page alone, with the DOM's own ids (backendDOMNodeId)
to find an element again.
"""

import json
import time

import cdp

MAX_PAGES = 50  # page targets looked at: tabs of every window
MAX_NODES = 5000  # of a page's tree read into the merged tree
FOCUS_WAIT = 5.0  # seconds an element of a page has to take the keyboard focus, on a loaded machine too
MAX_WHY = 200  # characters of where a page's focus is instead

# What a page says of its place and state, in one evaluation.
GEOMETRY = ("JSON.stringify([document.visibilityState, screenX, screenY, outerWidth, outerHeight, innerWidth, "
            "innerHeight, devicePixelRatio])")

# Where the keyboard focus of an element's page is, called on the element:
# "" when the element holds it (the active element of its document, or of
# its shadow root, in a page that has the focus), else where it is.
HOLDS_FOCUS = """function () {
  if (!this.ownerDocument || !this.ownerDocument.hasFocus()) return "the page does not have the focus";
  const a = this.getRootNode().activeElement;
  if (a === this) return "";
  if (!a) return "no element has it";
  return "it is on " + a.tagName.toLowerCase() + (a.id ? "#" + a.id : "");
}"""

# Roles that are containers and say nothing by themselves: listed only
# with a name. InlineTextBox and LineBreak are pieces of text already in
# their StaticText; a ListMarker is a list's bullet or number, which says
# nothing the listitem does not (eight lines of "•" in a typical page's
# list of links: BenchmarkTree).
PLAIN = {"generic", "none", "presentation", "LabelText", "GenericContainer", "Section", "Div", "Pre", "LayoutTable",
         "LayoutTableRow", "LayoutTableCell", "Unknown", "IframePresentational", "Ignored"}
SKIP = {"InlineTextBox", "LineBreak", "ListMarker"}
ROLE_WORDS = {"RootWebArea": "document", "StaticText": "text", "LabelText": "label", "WebArea": "document",
              "DescriptionListTerm": "term", "DescriptionListDetail": "definition",
              "MenuListPopup": "listbox", "MenuListOption": "option"}
VALUE_ROLES = {"textbox", "searchbox", "combobox", "spinbutton", "slider", "progressbar", "meter", "TextField"}


class Page:
    """A page shown in a window: its target, its session, and where its
    viewport is on the screen."""

    def __init__(self, target, session, geometry, window):
        self.target, self.session = target, session
        _, sx, sy, ow, oh, iw, ih, zoom = geometry
        self.zoom = zoom if isinstance(zoom, (int, float)) and zoom > 0 else 1
        self.window = window  # Browser.getWindowForTarget's bounds
        self.title = ""
        # The viewport is at the window's bottom, inside equal borders on
        # its sides and bottom (none when maximized): what the window adds
        # across is two borders, down the tab strip, toolbar and a border.
        border = max(0, (ow - iw * self.zoom) / 2)
        self.origin = (sx + border, sy + oh - ih * self.zoom - border)
        self.viewport = (iw, ih)  # in CSS pixels

    def to_screen(self, quad):
        """A border quad of CSS pixels as (x, y, w, h) on the screen, cut to
        the viewport; None when none of it is in the viewport."""
        xs, ys = quad[0::2], quad[1::2]
        x0, y0 = max(min(xs), 0), max(min(ys), 0)
        x1, y1 = min(max(xs), self.viewport[0]), min(max(ys), self.viewport[1])
        if x1 <= x0 or y1 <= y0:
            return None
        ox, oy, z = self.origin[0], self.origin[1], self.zoom
        return (round(ox + x0 * z), round(oy + y0 * z), max(1, round((x1 - x0) * z)), max(1, round((y1 - y0) * z)))

    def viewport_box(self):
        return self.to_screen([0, 0, self.viewport[0], 0, self.viewport[0], self.viewport[1], 0, self.viewport[1]])


def geometry(value):
    """A page's evaluated GEOMETRY, checked; None when it is not one."""
    try:
        g = json.loads(value)
    except (TypeError, ValueError):
        return None
    if not (isinstance(g, list) and len(g) == 8 and isinstance(g[0], str)
            and all(isinstance(v, (int, float)) for v in g[1:])):
        return None
    return g


def visible_pages(browser):
    """The pages shown now (the front tab of each window that is not
    minimized), each attached in a session of its own."""
    targets = browser.call("Target.getTargets").get("targetInfos")
    pages = [t for t in targets or [] if isinstance(t, dict) and t.get("type") == "page"
             and isinstance(t.get("targetId"), str)][:MAX_PAGES]
    attached = browser.batch([("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True}) for t in pages])
    sessions = [(t, a.get("sessionId")) for t, a in zip(pages, attached)
                if isinstance(a, dict) and isinstance(a.get("sessionId"), str)]
    ids = [(t, s, browser.send("Runtime.evaluate", {"expression": GEOMETRY, "returnByValue": True}, s),
            browser.send("Browser.getWindowForTarget", {"targetId": t["targetId"]})) for t, s in sessions]
    got = browser.answers([i for _, _, e, w in ids for i in (e, w)])
    out = []
    for t, s, e, w in ids:
        ev, win = got.get(e), got.get(w)
        g = geometry((ev.get("result") or {}).get("value")) if isinstance(ev, dict) else None
        bounds = win.get("bounds") if isinstance(win, dict) else None
        if g and g[0] == "visible" and isinstance(bounds, dict) and bounds.get("windowState") != "minimized":
            p = Page(t["targetId"], s, g, bounds)
            p.title = t.get("title") if isinstance(t.get("title"), str) else ""
            out.append(p)
        else:
            browser.send("Target.detachFromTarget", {"sessionId": s})
    return out


def attach(browser, target_id):
    """The page of a target if it is shown now, attached."""
    for p in visible_pages(browser):
        if p.target == target_id:
            return p
    return None


def prop(node, name):
    props = node.get("properties")
    for p in props if isinstance(props, list) else ():
        if isinstance(p, dict) and p.get("name") == name and isinstance(p.get("value"), dict):
            return p["value"].get("value")
    return None


def value_of(field):
    v = field.get("value") if isinstance(field, dict) else None
    return v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None


def state_words(node):
    """The states a reader acts on, from a node's properties."""
    out = []
    if prop(node, "focused") is True:
        out.append("focused")
    checked = prop(node, "checked")
    if checked in ("true", "false", "mixed"):
        out.append({"true": "checked", "false": "unchecked", "mixed": "mixed"}[checked])
    pressed = prop(node, "pressed")
    if pressed in ("true", "mixed"):
        out.append("pressed")
    if prop(node, "selected") is True:
        out.append("selected")
    expanded = prop(node, "expanded")
    if expanded is not None:
        out.append("expanded" if expanded is True else "collapsed")
    if prop(node, "disabled") is True:
        out.append("disabled")
    if prop(node, "readonly") is True and value_of(node.get("role")) in VALUE_ROLES:
        out.append("readonly")
    if prop(node, "required") is True:
        out.append("required")
    if prop(node, "invalid") not in (None, "false"):
        out.append("invalid")
    if prop(node, "modal") is True:
        out.append("modal")
    return out


class WebNode:
    __slots__ = ("target", "backend", "role", "name", "states", "value", "children", "box")

    def __init__(self, target, backend, role, name, states, value):
        self.target, self.backend, self.role, self.name = target, backend, role, name
        self.states, self.value, self.children, self.box = states, value, [], None

    @property
    def key(self):
        return ("w", self.target, self.backend)


def read_tree(browser, page):
    """The page's tree, uninteresting containers folded away, each node's
    place on the screen (None: not in the viewport). Returns the root and
    how many nodes were left unread."""
    got = browser.call("Accessibility.getFullAXTree", {}, page.session, timeout=5.0).get("nodes")
    nodes = [n for n in got or [] if isinstance(n, dict) and isinstance(n.get("nodeId"), str)]
    unread = max(0, len(nodes) - MAX_NODES)
    by_id = {n["nodeId"]: n for n in nodes[:MAX_NODES]}
    roots = [n for n in by_id.values() if n.get("parentId") not in by_id]
    if not roots:
        return None, unread
    root = fold(by_id, roots[0], page.target)
    if root is None:
        return None, unread
    place(browser, page, root)
    return root, unread


def fold(by_id, node, target, depth=0):
    """The WebNode of an AX node, or of its children when it says nothing
    itself (its children move up, and a lone text child names its parent)."""
    if depth > 200:
        return None
    kids = []
    child_ids = node.get("childIds")
    for cid in child_ids if isinstance(child_ids, list) else ():
        child = by_id.get(cid) if isinstance(cid, str) else None
        if child is not None:
            got = fold(by_id, child, target, depth + 1)
            if isinstance(got, list):
                kids.extend(got)
            elif got is not None:
                kids.append(got)
    role = value_of(node.get("role"))
    role = role if isinstance(role, str) else "generic"
    name = value_of(node.get("name"))
    name = str(name) if name is not None else ""
    backend = node.get("backendDOMNodeId")
    if node.get("ignored") or role in SKIP or (role in PLAIN and not name) or not isinstance(backend, int):
        return kids if role not in SKIP else []
    role = ROLE_WORDS.get(role, role)
    value = value_of(node.get("value")) if role in VALUE_ROLES else None
    states = [s for s in state_words(node) if not (role == "document" and s == "focused")]
    me = WebNode(target, backend, role, name.strip(), states, value)
    # Text that only repeats its parent's name says nothing new.
    kids = [k for k in kids if not (k.role == "text" and not k.children and k.name == me.name)]
    if not me.name and len(kids) == 1 and kids[0].role == "text" and not kids[0].children:
        me.name, kids = kids[0].name, []
    me.children = kids
    return me


def walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def place(browser, page, root):
    """Each node's box on the screen, from one DOM snapshot of the page's
    layout (one call: asking each node's box model took a round trip per
    node, 400 of them for a page of text)."""
    root.box = page.viewport_box()
    snap = browser.call("DOMSnapshot.captureSnapshot", {"computedStyles": []}, page.session, timeout=5.0)
    docs = snap.get("documents")
    doc = docs[0] if isinstance(docs, list) and docs and isinstance(docs[0], dict) else {}
    backend = (doc.get("nodes") or {}).get("backendNodeId")
    layout = doc.get("layout") or {}
    index, bounds = layout.get("nodeIndex"), layout.get("bounds")
    if not all(isinstance(v, list) for v in (backend, index, bounds)):
        return
    sx, sy = doc.get("scrollOffsetX"), doc.get("scrollOffsetY")
    sx, sy = (sx if isinstance(sx, (int, float)) else 0), (sy if isinstance(sy, (int, float)) else 0)
    boxes = {}
    for i, b in zip(index, bounds):
        if isinstance(i, int) and 0 <= i < len(backend) and isinstance(b, list) and len(b) == 4 \
                and all(isinstance(v, (int, float)) for v in b):
            x, y, w, h = b[0] - sx, b[1] - sy, b[2], b[3]
            boxes[backend[i]] = [x, y, x + w, y, x + w, y + h, x, y + h]
    for n in walk(root):
        if n is not root and n.backend in boxes:
            n.box = page.to_screen(boxes[n.backend])


def locate(browser, target_id, backend):
    """An element's box on the screen now, or why it has none: a string
    ("gone", "hidden": the page is not shown, "offscreen")."""
    page = attach(browser, target_id)
    if page is None:
        return "hidden", None
    try:
        model = browser.call("DOM.getBoxModel", {"backendNodeId": backend}, page.session).get("model")
    except cdp.CommandError:
        return "gone", page
    quad = (model or {}).get("border")
    if not (isinstance(quad, list) and len(quad) == 8 and all(isinstance(v, (int, float)) for v in quad)):
        return "gone", page
    box = page.to_screen(quad)
    return (box if box else "offscreen"), page


def focus(browser, page, backend):
    """Gives an element the keyboard focus; None, or what went wrong, in
    words that follow the element's name.
    DOM.focus alone moves the page's focus, but keys still go to the view
    that had Chromium's (the toolbar, or none after a window came to the
    front): Page.bringToFront gives the page's view the focus first. Both
    take effect in their own time, and a page's script can move the focus
    on (a field that gives it to another, then takes it back): this
    returns once the element is its document's active element in a page
    that has the focus (HOLDS_FOCUS), at most FOCUS_WAIT seconds."""
    try:
        browser.call("Page.bringToFront", {}, page.session)
        browser.call("DOM.focus", {"backendNodeId": backend}, page.session)
        # The object goes with the session when the connection closes.
        node = browser.call("DOM.resolveNode", {"backendNodeId": backend}, page.session).get("object")
    except cdp.CommandError as e:
        return "cannot take the keyboard focus (%s): click it instead" % e
    return await_focus(browser, page, node.get("objectId") if isinstance(node, dict) else None)


def await_focus(browser, page, object_id):
    """Waits until the element of object_id holds the keyboard focus; None
    then, or that it did not within FOCUS_WAIT seconds, and where it is."""
    if not isinstance(object_id, str):
        return "cannot take the keyboard focus (it is not an element of the page): click it instead"
    deadline = time.monotonic() + FOCUS_WAIT
    while True:
        try:
            got = browser.call("Runtime.callFunctionOn", {"functionDeclaration": HOLDS_FOCUS, "objectId": object_id,
                                                          "returnByValue": True}, page.session).get("result")
        except cdp.CommandError as e:
            return "cannot take the keyboard focus (%s): click it instead" % e
        why = got.get("value") if isinstance(got, dict) else None
        if why == "":
            return None
        if time.monotonic() > deadline:
            why = why[:MAX_WHY] if isinstance(why, str) else "the page does not say where the focus is"
            return "did not take the keyboard focus within %g s (%s)" % (FOCUS_WAIT, why)
        time.sleep(0.01)


# What a keyboard's key says for the characters typed into a page that are
# keys of their own: (key, code, Windows key code, text it types).
NAMED_KEYS = {"\n": ("Enter", "Enter", 13, "\r"), "\t": ("Tab", "Tab", 9, None)}
# The characters a US keyboard types with Shift held, besides capitals.
SHIFTED = set('~!@#$%^&*()_+{}|:"<>?')
SHIFT = 8  # Input.dispatchKeyEvent's modifiers bit for Shift
SHIFT_KEY = {"key": "Shift", "code": "ShiftLeft", "windowsVirtualKeyCode": 16}
TYPE_BATCH = 256  # key events sent to the browser before their answers are awaited
# seconds a batch's answers may take: each key is answered once the page has
# handled it, and a page may do much with each
TYPE_BATCH_WAIT = 10.0


def key_events(ch):
    """The key events that type one character into a page's focused
    element (Input.dispatchKeyEvent), as a keyboard's keys would: a newline
    presses Enter, a tab Tab, any other character types itself; letters,
    digits and the space say their US key's code, and capitals and the
    US keyboard's shifted symbols come with Shift held, as the agent's
    keyboard types them (agent.py, _tap)."""
    named = NAMED_KEYS.get(ch)
    if named:
        key, code, vk, text = named
        down = {"type": "keyDown" if text else "rawKeyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk}
        if text:
            down["text"] = down["unmodifiedText"] = text
    else:
        down = {"type": "keyDown", "key": ch, "text": ch, "unmodifiedText": ch}
        if ch.isascii() and ch.isalpha():
            down["code"], down["windowsVirtualKeyCode"] = "Key" + ch.upper(), ord(ch.upper())
        elif ch.isascii() and ch.isdigit():
            down["code"], down["windowsVirtualKeyCode"] = "Digit" + ch, ord(ch)
        elif ch == " ":
            down["code"], down["windowsVirtualKeyCode"] = "Space", 32
    up = {k: v for k, v in down.items() if k not in ("text", "unmodifiedText")}
    up["type"] = "keyUp"
    if not ((ch.isascii() and ch.isupper()) or ch in SHIFTED):
        return [down, up]
    down["modifiers"] = up["modifiers"] = SHIFT
    return [dict(SHIFT_KEY, type="rawKeyDown", modifiers=SHIFT), down, up, dict(SHIFT_KEY, type="keyUp")]


def type_text(browser, page, text):
    """Types text into the page's focused element through the browser,
    key by key (key_events), in batches; None once every key was taken,
    else what stopped it and after how many characters."""
    events = [(n, e) for n, ch in enumerate(text) for e in key_events(ch)]
    for start in range(0, len(events), TYPE_BATCH):
        chunk = events[start:start + TYPE_BATCH]
        got = browser.batch([("Input.dispatchKeyEvent", e) for _, e in chunk], page.session, TYPE_BATCH_WAIT)
        for (n, _), g in zip(chunk, got):
            if g is None or isinstance(g, cdp.CommandError):
                why = "the browser did not answer in time" if g is None else "the browser refused a key (%s)" % g
                return "%s, after %d of %d characters" % (why, n, len(text))
    return None
