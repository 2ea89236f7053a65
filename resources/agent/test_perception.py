"""Tests of the agent's perception modules that need no X server, no bus
and no browser: the D-Bus wire format and its bounds, the page's tree as
read from the DevTools Protocol, refs, and what counts as a change of the
screen. The engine tests (tools/perception_test.go) run them for real.

    cd resources/agent && python3 -m unittest -v test_perception
"""

import struct
import unittest
from unittest import mock

import atspi
import cdp
import dbuswire
import perception
import web
import xscreen


class DBusWireTest(unittest.TestCase):
    def roundtrip(self, signature, args):
        fields = {dbuswire.F_PATH: ("o", "/a/b"), dbuswire.F_MEMBER: ("s", "Get")}
        msg = dbuswire.unmarshal(dbuswire.marshal(dbuswire.METHOD_CALL, 7, fields, signature, args))
        self.assertEqual(msg.serial, 7)
        self.assertEqual(msg.fields[dbuswire.F_MEMBER], "Get")
        return msg.body

    def test_values_come_back(self):
        body = self.roundtrip("ysa(so)a{sv}(iiii)", [
            3, "é name", [("a", dbuswire.ObjectPath("/x")), ("b", dbuswire.ObjectPath("/y"))],
            {"k": dbuswire.Variant("u", 5)}, (1, -2, 3, 4)])
        self.assertEqual(body, (3, "é name", [("a", "/x"), ("b", "/y")], {"k": 5}, (1, -2, 3, 4)))

    def test_signatures_split_into_complete_types(self):
        self.assertEqual(dbuswire.split_types("a(so)ia{sv}v"), ["a(so)", "i", "a{sv}", "v"])
        for bad in ("a", "(ii", "z"):
            with self.assertRaises(dbuswire.Error):
                dbuswire.split_types(bad)

    def test_hostile_messages_are_refused(self):
        good = dbuswire.marshal(dbuswire.METHOD_RETURN, 1, {dbuswire.F_REPLY_SERIAL: ("u", 1)}, "as", [["a", "b"]])
        with self.assertRaises(dbuswire.Error):  # cut short
            dbuswire.unmarshal(good[:-3])
        huge = bytearray(good)
        struct.pack_into("<I", huge, 4, dbuswire.MAX_MESSAGE)  # a body length past the bound
        with self.assertRaises(dbuswire.Error):
            dbuswire.parse_header(bytes(huge[:16]))
        with self.assertRaises(dbuswire.Error):
            dbuswire.split_types("a" * (dbuswire.MAX_DEPTH + 2) + "i")
        with self.assertRaises(dbuswire.Error):  # not a D-Bus message at all
            dbuswire.parse_header(b"GET / HTTP/1.1\r\n")


class AtspiTest(unittest.TestCase):
    def test_state_words(self):
        bits = 1 << atspi.S_FOCUSED | 1 << atspi.S_ENABLED | 1 << atspi.S_CHECKABLE | 1 << atspi.S_CHECKED
        self.assertEqual(atspi.state_words(bits, 7), ["focused", "checked"])
        self.assertEqual(atspi.state_words(0, 43), ["disabled"])  # a button neither enabled nor sensitive
        self.assertEqual(atspi.state_words(0, 29), [])  # a label is never "disabled"

    def test_states_of_two_words(self):
        self.assertEqual(atspi.states_of([1 << 12, 1 << (atspi.S_CHECKABLE - 32)]),
                         1 << 12 | 1 << atspi.S_CHECKABLE)


def ax(node_id, role, name="", children=(), backend=None, **props):
    """An Accessibility.getFullAXTree node."""
    n = {"nodeId": node_id, "role": {"value": role}, "name": {"value": name}, "childIds": list(children),
         "properties": [{"name": k, "value": {"value": v}} for k, v in props.items()]}
    if backend is not None:
        n["backendDOMNodeId"] = backend
    return n


class WebTreeTest(unittest.TestCase):
    def fold(self, nodes):
        by_id = {n["nodeId"]: n for n in nodes}
        return web.fold(by_id, nodes[0], "T1")

    def test_containers_fold_away_and_text_names_its_parent(self):
        root = self.fold([
            ax("1", "RootWebArea", "Orders", ["2"], 1, focused=True),
            ax("2", "generic", "", ["3", "5", "7"], 2),
            ax("3", "button", "", ["4"], 3),
            ax("4", "StaticText", "Save", [], 4),
            ax("5", "listitem", "", ["6", "8"], 5),
            ax("6", "ListMarker", "•", [], 6),
            ax("8", "link", "Home", ["9"], 8),
            ax("9", "StaticText", "Home", [], 9),
            ax("7", "textbox", "Name", [], 7, focused=True),
        ])
        self.assertEqual((root.role, root.name, root.states), ("document", "Orders", []))
        got = [(k.role, k.name, k.states) for k in root.children]
        self.assertEqual(got, [("button", "Save", []), ("listitem", "", []), ("textbox", "Name", ["focused"])])
        self.assertEqual([(k.role, k.name, k.children) for k in root.children[1].children], [("link", "Home", [])])
        self.assertEqual(root.children[0].key, ("w", "T1", 3))

    def test_hostile_nodes_are_skipped(self):
        root = self.fold([
            ax("1", "RootWebArea", "x", ["2", "3", 5, "missing"], 1),
            ax("2", "button", "no backend id", []),
            {"nodeId": "3", "role": "not a dict", "childIds": "nor a list"},
        ])
        self.assertEqual(root.children, [])

    def test_to_screen_cuts_to_the_viewport(self):
        # A maximized 1280x780 window whose 1280x693 viewport starts 87
        # pixels down, at zoom 1.
        page = web.Page("T1", "S1", ["visible", 0, 0, 1280, 780, 1280, 693, 1], {})
        self.assertEqual(page.to_screen([10, 10, 50, 10, 50, 30, 10, 30]), (10, 97, 40, 20))
        self.assertEqual(page.to_screen([10, 680, 50, 680, 50, 720, 10, 720]), (10, 767, 40, 13))
        self.assertIsNone(page.to_screen([10, 900, 50, 900, 50, 920, 10, 920]))

    def test_geometry_is_checked(self):
        self.assertIsNone(web.geometry('["visible", 1, 2]'))
        self.assertIsNone(web.geometry("not json"))
        self.assertEqual(web.geometry('["visible",0,0,1280,780,1280,693,1]')[3], 1280)


class RefsTest(unittest.TestCase):
    def test_an_element_keeps_its_ref_and_unseen_ones_are_forgotten(self):
        refs = perception.Refs()
        a = refs.ref(("w", "T", 1), {"role": "button", "name": "A", "win": 5})
        b = refs.ref(("w", "T", 2), {"role": "button", "name": "B", "win": 5})
        refs.keep({a, b})
        self.assertEqual(refs.ref(("w", "T", 1), {"role": "button", "name": "A", "win": 5}), a)
        refs.keep({a})
        with self.assertRaisesRegex(perception.Gone, "%s is not a ref of the latest tree" % b):
            refs.lookup(b)
        # A new element gets a new ref, never an old one's.
        self.assertNotIn(refs.ref(("w", "T", 2), {"role": "button", "name": "B", "win": 5}), (a, b))


class ChangeTest(unittest.TestCase):
    W, H = 40, 30

    def frame(self, paint=()):
        px = bytearray(self.W * self.H * 4)
        for x, y, w, h in paint:
            for yy in range(y, y + h):
                for xx in range(x, x + w):
                    px[(yy * self.W + xx) * 4:(yy * self.W + xx) * 4 + 3] = b"\xff\xff\xff"
        return bytes(px), self.W * 4

    def test_the_box_of_what_changed(self):
        got = xscreen.changed_box(self.frame(), self.frame([(5, 6, 10, 4), (20, 20, 4, 5)]), self.W, self.H)
        self.assertEqual(got, (5, 6, 19, 19))

    def test_a_caret_is_no_change(self):
        self.assertIsNone(xscreen.changed_box(self.frame(), self.frame([(12, 3, 1, 15)]), self.W, self.H))
        self.assertIsNone(xscreen.changed_box(self.frame(), self.frame(), self.W, self.H))

    def test_union(self):
        self.assertEqual(xscreen.union(None, (1, 2, 3, 4)), (1, 2, 3, 4))
        self.assertEqual(xscreen.union((0, 0, 2, 2), (5, 5, 1, 1)), (0, 0, 6, 6))


class PlaceTest(unittest.TestCase):
    def test_clip_and_covered(self):
        self.assertEqual(perception.clip((-10, 5, 30, 10), 100, 50), (0, 5, 20, 10))
        self.assertIsNone(perception.clip((100, 0, 5, 5), 100, 50))

        class Screen:
            width, height = 100, 50

        b = perception.Builder(Screen(), perception.Refs())
        self.assertEqual(b.placed((10, 10, 10, 10), [(0, 0, 50, 50)]), (None, "covered"))
        self.assertEqual(b.placed((60, 10, 10, 10), [(0, 0, 50, 50)]), ((60, 10, 10, 10), None))
        self.assertEqual(b.placed((200, 10, 10, 10), []), (None, "offscreen"))

    def test_long_names_and_values_are_cut(self):
        class Screen:
            width, height = 100, 50

        b = perception.Builder(Screen(), perception.Refs())
        b.add(("w", "T", 1), 0, "paragraph", "x" * 100000, value="y" * 100000)
        self.assertEqual((len(b.nodes[0]["name"]), len(b.nodes[0]["value"])), (perception.MAX_TEXT, perception.MAX_TEXT))


class FakeBrowser:
    """Answers DevTools commands as scripted: where a page's focus is, one
    answer of HOLDS_FOCUS per poll (the last one repeated)."""

    def __init__(self, where, refuse=None):
        self.where, self.refuse, self.calls = list(where), refuse, []

    def call(self, method, params=None, session=None, timeout=None):
        self.calls.append((method, params))
        if method == self.refuse:
            raise cdp.CommandError("Element is not focusable")
        if method == "DOM.resolveNode":
            return {"object": {"objectId": "o1"}}
        if method == "Runtime.callFunctionOn":
            return {"result": {"value": self.where.pop(0) if len(self.where) > 1 else self.where[0]}}
        return {}


class FocusTest(unittest.TestCase):
    page = web.Page("T1", "S1", ["visible", 0, 0, 1280, 780, 1280, 693, 1], {})

    def test_a_page_element_is_waited_for_until_it_holds_the_focus(self):
        b = FakeBrowser(["the page does not have the focus", "it is on input#search", ""])
        self.assertIsNone(web.focus(b, self.page, 7))
        self.assertEqual([m for m, _ in b.calls], ["Page.bringToFront", "DOM.focus", "DOM.resolveNode"]
                         + ["Runtime.callFunctionOn"] * 3)
        self.assertEqual(b.calls[1][1], {"backendNodeId": 7})
        self.assertEqual(b.calls[-1][1]["objectId"], "o1")
        self.assertEqual(b.calls[-1][1]["functionDeclaration"], web.HOLDS_FOCUS)

    def test_a_page_element_that_never_holds_the_focus_is_an_error_saying_where_it_is(self):
        with mock.patch.object(web, "FOCUS_WAIT", 0.05):
            got = web.focus(FakeBrowser(["it is on input#search"]), self.page, 7)
        self.assertEqual(got, "did not take the keyboard focus within 0.05 s (it is on input#search)")
        with mock.patch.object(web, "FOCUS_WAIT", 0.05):
            got = web.focus(FakeBrowser([None]), self.page, 7)
        self.assertEqual(got, "did not take the keyboard focus within 0.05 s (the page does not say where the focus is)")

    def test_an_element_that_cannot_take_the_focus_is_an_error(self):
        got = web.focus(FakeBrowser([""], refuse="DOM.focus"), self.page, 7)
        self.assertEqual(got, "cannot take the keyboard focus (Element is not focusable): click it instead")

    def test_an_atspi_object_is_waited_for_until_it_says_it_is_focused(self):
        def node(bits):
            n = atspi.Node(":1.5", "/o/1")
            n.bits = bits
            return n

        focused = node(1 << atspi.S_FOCUSED | 1 << atspi.S_SHOWING)
        with mock.patch.object(atspi, "refresh", side_effect=[node(0), node(0), focused]) as refresh:
            self.assertTrue(atspi.await_focus(None, ":1.5", "/o/1", 1.0))
        self.assertEqual(refresh.call_count, 3)
        with mock.patch.object(atspi, "refresh", return_value=node(0)):
            self.assertFalse(atspi.await_focus(None, ":1.5", "/o/1", 0.05))
        with mock.patch.object(atspi, "refresh", return_value=None):  # gone
            self.assertFalse(atspi.await_focus(None, ":1.5", "/o/1", 1.0))


class KeyBatches:
    """Answers batches of DevTools commands, keeping them: refusing the
    refuse-th command (from 1), or leaving it and those after unanswered."""

    def __init__(self, refuse=0, silent=0):
        self.refuse, self.silent, self.sent, self.batches = refuse, silent, [], 0

    def batch(self, commands, session=None, timeout=None):
        self.batches += 1
        self.timeout = timeout
        out = []
        for method, params in commands:
            self.sent.append((method, params, session))
            n = len(self.sent)
            out.append(None if self.silent and n >= self.silent else
                       cdp.CommandError("Invalid parameters") if n == self.refuse else {})
        return out


class TypeIntoPageTest(unittest.TestCase):
    page = web.Page("T1", "S1", ["visible", 0, 0, 1280, 780, 1280, 693, 1], {})

    def keys(self, b):
        return [(p["type"], p["key"], p.get("text"), p.get("modifiers", 0)) for _, p, _ in b.sent]

    def test_each_character_is_a_key_of_the_page(self):
        b = KeyBatches()
        self.assertIsNone(web.type_text(b, self.page, "aB\n\t!é"))
        self.assertEqual(self.keys(b), [
            ("keyDown", "a", "a", 0), ("keyUp", "a", None, 0),
            ("rawKeyDown", "Shift", None, 8), ("keyDown", "B", "B", 8), ("keyUp", "B", None, 8), ("keyUp", "Shift", None, 0),
            ("keyDown", "Enter", "\r", 0), ("keyUp", "Enter", None, 0),
            ("rawKeyDown", "Tab", None, 0), ("keyUp", "Tab", None, 0),
            ("rawKeyDown", "Shift", None, 8), ("keyDown", "!", "!", 8), ("keyUp", "!", None, 8), ("keyUp", "Shift", None, 0),
            ("keyDown", "é", "é", 0), ("keyUp", "é", None, 0)])
        self.assertEqual({(m, s) for m, _, s in b.sent}, {("Input.dispatchKeyEvent", "S1")})
        self.assertEqual(b.sent[0][1]["code"], "KeyA")

    def test_long_text_goes_in_batches(self):
        b = KeyBatches()
        self.assertIsNone(web.type_text(b, self.page, "x" * 1000))
        self.assertEqual(len(b.sent), 2000)
        self.assertEqual(b.batches, -(-2000 // web.TYPE_BATCH))
        self.assertEqual(b.timeout, web.TYPE_BATCH_WAIT)

    def test_a_refused_or_unanswered_key_says_how_far_it_got(self):
        self.assertEqual(web.type_text(KeyBatches(refuse=5), self.page, "abcd"),
                         "the browser refused a key (Invalid parameters), after 2 of 4 characters")
        self.assertEqual(web.type_text(KeyBatches(silent=3), self.page, "abcd"),
                         "the browser did not answer in time, after 1 of 4 characters")

    def test_an_element_not_on_a_page_is_left_to_the_keyboard(self):
        refs = perception.Refs()
        ref = refs.ref(("a", ":1.5", "/o/1"), {"role": "textbox", "name": "Name", "win": None})
        with mock.patch.object(perception, "open_browser") as opened:
            self.assertFalse(perception.type_into(refs, ref, "Bob"))
        opened.assert_not_called()
        with self.assertRaises(perception.Gone):
            perception.type_into(refs, "e99", "Bob")


if __name__ == "__main__":
    unittest.main()
