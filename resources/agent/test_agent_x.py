"""Tests of the desktop agent under a real X server: each test starts a
private Xvfb, runs the agent in it as the sidecar does (python3 -I -u -c),
and proves every request by its effect, seen by another X client: where the
pointer is, which button and key events arrived, what the keyboard map says,
what the screen and the clipboard hold.

Xvfb, xclip and libXtst are in the sandbox image, where
`go test ./resources -run TestAgentPython` runs these; elsewhere they skip.
"""

import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

import agent

from xserver import (BUTTON1_MASK, BUTTON_PRESS, BUTTON_RELEASE, CONTROL_MASK, KEY_PRESS, KEY_RELEASE, MOD1_MASK,
                     MOTION_NOTIFY, SHIFT_MASK, X, Agent, Observer, Xvfb, decode_png, key_names, need_xvfb, pixel, poll,
                     typed_text)

XF86_FIRST, XF86_LAST = 0x1008FF00, 0x1008FFFF


class XTestCase(unittest.TestCase):
    def setUp(self):
        need_xvfb(self)
        self.xvfb = Xvfb(320, 200)
        self.addCleanup(self.xvfb.close)
        self.obs = Observer(self.xvfb)
        self.addCleanup(self.obs.close)
        self.agent = None

    def start_agent(self):
        a = Agent(self.xvfb)
        self.addCleanup(a.close)
        hello = a.request({"op": "hello"})
        self.assertEqual((hello["width"], hello["height"]), (320, 200), hello)
        self.agent = a
        self.obs.take()
        return hello

    def call(self, req):
        """The agent's answer to req, with the observer reading its events
        all along."""
        if self.agent is None:
            self.start_agent()
        return self.agent.request(req, self.obs)

    def ok(self, req):
        resp = self.call(req)
        self.assertNotIn("error", resp)
        return resp

    def buttons(self):
        return [(e.kind, e.detail, e.x, e.y) for e in self.obs.take() if e.kind in (BUTTON_PRESS, BUTTON_RELEASE)]


def spare_keycodes(obs):
    """The keycodes the agent may bind: empty ones but the lowest, and those
    holding only XF86 media keys."""
    lo, hi = obs.keycodes()
    out = []
    for kc in range(lo + 1, hi + 1):
        row = obs.row(kc)
        if all(s == 0 or XF86_FIRST <= s <= XF86_LAST for s in row):
            out.append(kc)
    return out


class HelloTest(XTestCase):
    def test_reports_the_display_and_its_spare_keycodes(self):
        spares = spare_keycodes(self.obs)
        self.assertGreater(len(spares), 10)
        hello = self.start_agent()
        self.assertEqual(hello, {"id": 1, "width": 320, "height": 200, "spares": len(spares)})


class PointerTest(XTestCase):
    def test_move(self):
        cases = [((10, 20), (10, 20)), ((0, 0), (0, 0)), ((319, 199), (319, 199)),
                 ((5000, -3), (319, 0))]  # off the screen: its edge
        for (x, y), want in cases:
            with self.subTest(x=x, y=y):
                self.assertEqual(self.ok({"op": "move", "x": x, "y": y}), {"id": self.agent.next_id})
                self.assertEqual(self.obs.pointer(), want)
                self.assertEqual(self.buttons(), [])

    def test_click(self):
        cases = [
            ("right double click", {"x": 30, "y": 40, "button": 3, "count": 2}, 3, 2),
            ("defaults: one left click", {"x": 7, "y": 8}, 1, 1),
            ("middle", {"x": 300, "y": 190, "button": 2, "count": 1}, 2, 1),
        ]
        for name, req, button, count in cases:
            with self.subTest(name):
                self.ok(dict(req, op="click"))
                at = (req["x"], req["y"])
                self.assertEqual(self.buttons(), [(BUTTON_PRESS, button) + at, (BUTTON_RELEASE, button) + at] * count)
                self.assertEqual(self.obs.pointer(), at)

    def test_click_with_a_button_the_server_refuses_is_an_error_and_the_agent_goes_on(self):
        resp = self.call({"op": "click", "x": 3, "y": 4, "button": 0})
        self.assertRegex(resp.get("error", ""), r"^X error \d+ \(request \d+\.\d+\)")
        self.assertEqual(self.buttons(), [])
        self.ok({"op": "click", "x": 5, "y": 6})
        self.assertEqual(self.buttons(), [(BUTTON_PRESS, 1, 5, 6), (BUTTON_RELEASE, 1, 5, 6)])

    def test_drag_holds_the_left_button_along_the_way(self):
        self.ok({"op": "drag", "x": 10, "y": 20, "toX": 200, "toY": 120})
        events = self.obs.take()
        kinds = [e.kind for e in events if e.kind != MOTION_NOTIFY]
        self.assertEqual(kinds, [BUTTON_PRESS, BUTTON_RELEASE])
        press = next(e for e in events if e.kind == BUTTON_PRESS)
        release = next(e for e in events if e.kind == BUTTON_RELEASE)
        self.assertEqual((press.detail, press.x, press.y), (1, 10, 20))
        self.assertEqual((release.detail, release.x, release.y), (1, 200, 120))
        held = [(e.x, e.y) for e in events[events.index(press):events.index(release)]
                if e.kind == MOTION_NOTIFY and e.state & BUTTON1_MASK]
        # Toolkits start a drag once the pointer moves past a threshold with
        # the button down: it must move in steps, not jump.
        self.assertGreaterEqual(len(held), 10)
        self.assertEqual(held[-1], (200, 120))
        self.assertEqual(held, sorted(held), "the pointer goes one way")
        self.assertEqual(self.obs.pointer(), (200, 120))

    def test_scroll_turns_the_wheel_at_the_point(self):
        cases = [("up", 4, 2), ("down", 5, 1), ("left", 6, 3), ("right", 7, 5), ("down", 5, None)]
        for direction, button, amount in cases:
            with self.subTest(direction=direction, amount=amount):
                req = {"op": "scroll", "x": 50, "y": 60, "direction": direction}
                if amount is not None:
                    req["amount"] = amount
                self.ok(req)
                presses = [(BUTTON_PRESS, button, 50, 60), (BUTTON_RELEASE, button, 50, 60)]
                self.assertEqual(self.buttons(), presses * (amount or 3))

    def test_scroll_in_an_unknown_direction_does_nothing(self):
        self.ok({"op": "move", "x": 1, "y": 2})
        self.obs.take()
        resp = self.call({"op": "scroll", "x": 50, "y": 60, "direction": "sideways"})
        self.assertEqual(resp["error"], "unknown scroll direction 'sideways'")
        self.assertEqual(self.obs.take(), [])
        self.assertEqual(self.obs.pointer(), (1, 2))


class PointerReportTest(XTestCase):
    def test_says_where_the_pointer_is(self):
        for x, y in [(10, 20), (0, 0), (319, 199)]:
            with self.subTest(x=x, y=y):
                self.ok({"op": "move", "x": x, "y": y})
                self.assertEqual(self.ok({"op": "pointer"}), {"id": self.agent.next_id, "x": x, "y": y})
                self.assertEqual(self.obs.pointer(), (x, y))
        self.ok({"op": "drag", "x": 5, "y": 6, "toX": 70, "toY": 80})
        got = self.ok({"op": "pointer"})
        self.assertEqual((got["x"], got["y"]), (70, 80))


class ModifierTest(XTestCase):
    """Modifiers held down during a mouse action: pressed before its first
    button event, which carries them in its state, released after its
    last."""

    def held_around(self, events, keys, mask):
        names = key_names(events)
        self.assertEqual(names[:len(keys)], [("press", k) for k in keys], names)
        self.assertEqual(names[len(keys):], [("release", k) for k in reversed(keys)], names)
        buttons = [e for e in events if e.kind in (BUTTON_PRESS, BUTTON_RELEASE)]
        first_release = next(i for i, e in enumerate(events) if e.kind == KEY_RELEASE)
        self.assertTrue(buttons)
        for e in buttons:
            self.assertEqual(e.state & (SHIFT_MASK | CONTROL_MASK | MOD1_MASK), mask, e)
            self.assertLess(events.index(e), first_release, "a button event after a modifier's release")
        return buttons

    def test_click(self):
        self.ok({"op": "click", "x": 30, "y": 40, "button": 1, "count": 3, "modifiers": ["ctrl", "shift", "ctrl"]})
        buttons = self.held_around(self.obs.take(), ["Control_L", "Shift_L"], CONTROL_MASK | SHIFT_MASK)
        self.assertEqual([(e.kind, e.detail, e.x, e.y) for e in buttons],
                         [(BUTTON_PRESS, 1, 30, 40), (BUTTON_RELEASE, 1, 30, 40)] * 3)

    def test_scroll(self):
        self.ok({"op": "scroll", "x": 50, "y": 60, "direction": "up", "amount": 2, "modifiers": ["ctrl"]})
        buttons = self.held_around(self.obs.take(), ["Control_L"], CONTROL_MASK)
        self.assertEqual([(e.kind, e.detail) for e in buttons], [(BUTTON_PRESS, 4), (BUTTON_RELEASE, 4)] * 2)

    def test_drag(self):
        self.ok({"op": "drag", "x": 10, "y": 20, "toX": 200, "toY": 120, "modifiers": ["alt"]})
        events = self.obs.take()
        self.held_around(events, ["Alt_L"], MOD1_MASK)
        held = [e for e in events if e.kind == MOTION_NOTIFY and e.state & BUTTON1_MASK]
        self.assertTrue(held and all(e.state & MOD1_MASK for e in held))

    def test_an_unknown_modifier_does_nothing(self):
        self.ok({"op": "move", "x": 1, "y": 2})
        self.obs.take()
        for op in ("click", "scroll", "drag"):
            with self.subTest(op):
                req = {"op": op, "x": 50, "y": 60, "toX": 5, "toY": 6, "direction": "up", "modifiers": ["ctrl", "hyper"]}
                self.assertEqual(self.call(req)["error"], "unknown modifier 'hyper': use ctrl, shift, alt or super")
                self.assertEqual(self.obs.take(), [])
                self.assertEqual(self.obs.pointer(), (1, 2))


class DragPathTest(XTestCase):
    def held_motions(self, events):
        press = next(i for i, e in enumerate(events) if e.kind == BUTTON_PRESS)
        release = next(i for i, e in enumerate(events) if e.kind == BUTTON_RELEASE)
        return events[press], events[release], [e for e in events[press:release] if e.kind == MOTION_NOTIFY]

    def test_passes_through_its_points_in_order(self):
        path = [[100, 20], [100, 150], [30, 150]]
        self.ok({"op": "drag", "x": 10, "y": 20, "toX": 30, "toY": 60, "path": path})
        press, release, moves = self.held_motions(self.obs.take())
        self.assertEqual((press.x, press.y, release.x, release.y), (10, 20, 30, 60))
        at = [(e.x, e.y) for e in moves]
        self.assertEqual(at[-1], (30, 60))
        where = [at.index(tuple(p)) for p in path]  # each point is reached ...
        self.assertEqual(where, sorted(where), "... in order")
        self.assertTrue(all(e.state & BUTTON1_MASK for e in moves))

    def test_takes_its_duration(self):
        self.ok({"op": "drag", "x": 10, "y": 20, "toX": 210, "toY": 20, "durationMs": 600})
        press, release, moves = self.held_motions(self.obs.take())
        # X server times, in milliseconds: the press and release are at
        # least the duration apart, and the pointer is still on the first
        # half of the way a third of the way in: the motion is spread over
        # the duration, not done at once and then waited out.
        self.assertGreaterEqual(release.time - press.time, 600)
        halfway = [e for e in moves if e.x <= 110]
        self.assertGreaterEqual(halfway[-1].time - press.time, 200)
        self.assertGreaterEqual(len(moves), 20)

    def test_held_in_place_is_a_long_press(self):
        self.ok({"op": "drag", "x": 40, "y": 50, "toX": 40, "toY": 50, "durationMs": 400})
        press, release, _ = self.held_motions(self.obs.take())
        self.assertEqual((press.x, press.y, release.x, release.y), (40, 50, 40, 50))
        self.assertGreaterEqual(release.time - press.time, 400)


class TypeTest(XTestCase):
    def test_types_text_exactly(self):
        cases = [
            ("ASCII with shift", "Hello, World! ~_{}|:\"<>?", None),
            ("tab and newlines", "a\tb\nc\r\nd\re", "a\tb\nc\nd\ne"),
            ("accents, CJK, emoji", "héllo wörld ✓ 中文字 😀 Ωµ€", None),
        ]
        for name, text, want in cases:
            with self.subTest(name):
                want = want or text
                self.assertEqual(self.ok({"op": "type", "text": text}), {"id": self.agent.next_id, "typed": len(want)})
                self.assertEqual(typed_text(self.obs.take()), want)

    def test_types_a_long_text_in_order(self):
        text = "".join(chr(0x21 + (i * 7) % 94) + ("\n" if i % 80 == 79 else "") for i in range(5000))
        self.assertEqual(self.ok({"op": "type", "text": text})["typed"], len(text))
        self.assertEqual(typed_text(self.obs.take()), text)

    def test_rebinds_few_spares_without_losing_a_character(self):
        # Leave the agent three spare keycodes: the rest get a key of their own.
        f20 = X.XStringToKeysym(b"F20")
        for kc in spare_keycodes(self.obs)[3:]:
            self.obs.set_row(kc, (f20, f20))
        self.assertEqual(self.start_agent()["spares"], 3)
        text = "αβγδεζ ηαθβ ζεδγβα."
        self.assertEqual(self.ok({"op": "type", "text": text})["typed"], len(text))
        events = self.obs.take()
        self.assertEqual(typed_text(events), text)
        chars_of = {}
        for e in events:
            if e.kind == KEY_PRESS:
                chars_of.setdefault(e.detail, set()).add(typed_text([e]))
        self.assertGreater(max(len(c) for c in chars_of.values()), 1, "no keycode typed two characters")

    def test_a_new_agent_uses_the_spares_its_predecessor_bound(self):
        first = Agent(self.xvfb)
        spares = first.request({"op": "hello"})["spares"]
        first.request({"op": "type", "text": "üß€"}, self.obs)
        bound = [e.detail for e in self.obs.take() if e.kind == KEY_PRESS]
        first.close()
        keymap = self.obs.keymap()
        # The sidecar restarted: the keycodes bound to ü, ß and € are still
        # spares, not keys of the map.
        self.assertEqual(self.start_agent()["spares"], spares)
        self.ok({"op": "type", "text": "€üß"})
        events = self.obs.take()
        self.assertEqual(typed_text(events), "€üß")
        self.assertEqual(sorted(e.detail for e in events if e.kind == KEY_PRESS), sorted(bound))
        self.assertEqual(self.obs.keymap(), keymap, "the keyboard map changed again")


class KeyTest(XTestCase):
    def test_presses_key_combinations(self):
        cases = [
            ("modifiers around the key", "ctrl+shift+a",
             [("press", "Control_L"), ("press", "Shift_L"), ("press", "a"),
              ("release", "a"), ("release", "Shift_L"), ("release", "Control_L")]),
            ("a capital letter adds shift", "A",
             [("press", "Shift_L"), ("press", "a"), ("release", "a"), ("release", "Shift_L")]),
            ("aliases, in order", "enter Esc pgdn BackSpace",
             [("press", "Return"), ("release", "Return"), ("press", "Escape"), ("release", "Escape"),
              ("press", "Next"), ("release", "Next"), ("press", "BackSpace"), ("release", "BackSpace")]),
            ("alt and super", "alt+F4 super",
             [("press", "Alt_L"), ("press", "F4"), ("release", "F4"), ("release", "Alt_L"),
              ("press", "Super_L"), ("release", "Super_L")]),
            ("keys the map lacks", "udiaeresis €",
             [("press", "udiaeresis"), ("release", "udiaeresis"), ("press", "U20AC"), ("release", "U20AC")]),
        ]
        for name, keys, want in cases:
            with self.subTest(name):
                self.ok({"op": "key", "keys": keys})
                self.assertEqual(key_names(self.obs.take()), want)

    def test_the_key_sees_its_modifiers(self):
        self.ok({"op": "key", "keys": "ctrl+shift+a"})
        a = [e for e in self.obs.take() if e.kind == KEY_PRESS and e.row[0] == ord("a")]
        self.assertEqual(len(a), 1)
        self.assertEqual(a[0].state & (CONTROL_MASK | SHIFT_MASK), CONTROL_MASK | SHIFT_MASK)

    def test_a_bad_combination_presses_nothing(self):
        cases = [("a bogus", "unknown key name 'bogus'"), ("a ctrl+", "malformed key combination 'ctrl+'")]
        for keys, want in cases:
            with self.subTest(keys=keys):
                self.assertEqual(self.call({"op": "key", "keys": keys})["error"], want)
                self.assertEqual(self.obs.take(), [])


class KeyHoldTest(XTestCase):
    def test_a_held_key_repeats(self):
        self.ok({"op": "key", "keys": "a", "holdMs": 1500})
        events = [e for e in self.obs.take() if e.kind in (KEY_PRESS, KEY_RELEASE)]
        presses = [e for e in events if e.kind == KEY_PRESS]
        # The server repeats a key held past its autorepeat delay (660 ms,
        # then 25 a second): a key pressed once and let go shows one press.
        self.assertGreater(len(presses), 5, key_names(events))
        self.assertEqual({n for _, n in key_names(events)}, {"a"})
        self.assertEqual(events[-1].kind, KEY_RELEASE)
        self.assertGreaterEqual(events[-1].time - events[0].time, 1500)

    def test_modifiers_stay_down_while_the_key_is_held(self):
        self.ok({"op": "key", "keys": "ctrl+b", "holdMs": 200})
        events = self.obs.take()
        names = key_names(events)
        self.assertEqual(names[0], ("press", "Control_L"))
        self.assertEqual(names[-2:], [("release", "b"), ("release", "Control_L")])
        self.assertTrue(all(e.state & CONTROL_MASK for e in events if e.kind == KEY_PRESS and e.row[0] == ord("b")))

    def test_holds_one_combination_only(self):
        self.assertEqual(self.call({"op": "key", "keys": "a b", "holdMs": 100})["error"],
                         "holdMs holds one key combination, not 2")
        self.assertEqual(self.obs.take(), [])


class ScreenshotTest(XTestCase):
    def test_shows_the_screen(self):
        self.obs.fill(10, 20, 30, 40, 0x123456)
        self.obs.fill(300, 180, 20, 20, 0xFF8000)
        resp = self.ok({"op": "screenshot"})
        w, h, rows = decode_png(resp["png"])
        self.assertEqual((resp["width"], resp["height"], w, h), (320, 200, 320, 200))
        cases = [((10, 20), (0x12, 0x34, 0x56)), ((39, 59), (0x12, 0x34, 0x56)), ((40, 59), (0, 0, 0)),
                 ((39, 60), (0, 0, 0)), ((0, 0), (0, 0, 0)), ((300, 180), (0xFF, 0x80, 0)),
                 ((319, 199), (0xFF, 0x80, 0)), ((299, 199), (0, 0, 0))]
        for (x, y), want in cases:
            with self.subTest(x=x, y=y):
                self.assertEqual(pixel(rows, x, y), want)


class SharedMemoryScreenshotTest(XTestCase):
    def test_shared_memory_gives_what_xgetimage_gives(self):
        self.obs.fill(10, 20, 30, 40, 0x123456)
        self.obs.fill(300, 180, 20, 20, 0xFF8000)
        with mock.patch.dict(os.environ, {"DISPLAY": self.xvfb.display}):
            d = agent.Desktop()  # in this process, to look inside
        agent.x11.XCloseDisplay.argtypes = [agent.Display]
        self.addCleanup(agent.x11.XCloseDisplay, d.d)
        shared = d.op_screenshot({})
        self.assertIsInstance(d._shm, agent.ShmScreen)  # the screenshot went through MIT-SHM
        d._shm = False
        plain = d.op_screenshot({})
        self.assertEqual(decode_png(shared["png"]), decode_png(plain["png"]))
        self.assertEqual(pixel(decode_png(shared["png"])[2], 10, 20), (0x12, 0x34, 0x56))
        # The next shot keeps the bands that did not change, and shows the
        # one that did.
        self.obs.fill(150, 100, 5, 5, 0x00FF00)
        d._shm = None
        again = d.op_screenshot({})
        self.assertIsInstance(d._shm, agent.ShmScreen)
        d._shm = False
        self.assertEqual(decode_png(again["png"]), decode_png(d.op_screenshot({})["png"]))
        self.assertEqual(pixel(decode_png(again["png"])[2], 152, 102), (0, 0xFF, 0))


class ScreenshotRegionTest(XTestCase):
    def test_shows_the_region_at_full_resolution(self):
        self.obs.fill(100, 50, 1, 1, 0xFF0000)  # one pixel, and its neighbours black
        self.obs.fill(119, 69, 1, 1, 0x00FF00)
        resp = self.ok({"op": "screenshot", "x": 100, "y": 50, "width": 20, "height": 20})
        w, h, rows = decode_png(resp["png"])
        self.assertEqual((resp["width"], resp["height"], w, h), (20, 20, 20, 20))
        cases = [((0, 0), (0xFF, 0, 0)), ((1, 0), (0, 0, 0)), ((0, 1), (0, 0, 0)), ((19, 19), (0, 0xFF, 0)),
                 ((18, 19), (0, 0, 0))]
        for (x, y), want in cases:
            with self.subTest(x=x, y=y):
                self.assertEqual(pixel(rows, x, y), want)

    def test_a_region_off_the_screen_is_refused(self):
        cases = [({"x": 310, "y": 190, "width": 20, "height": 20}, "the region 20x20 at 310, 190 is not on the 320x200 screen"),
                 ({"x": -1, "y": 0, "width": 5, "height": 5}, "the region 5x5 at -1, 0 is not on the 320x200 screen"),
                 ({"x": 5, "y": 5}, "a screenshot from 5, 5 needs a width and a height")]
        for req, want in cases:
            with self.subTest(req=req):
                self.assertEqual(self.call(dict(req, op="screenshot"))["error"], want)


# An xclip that answers like the real one, slower: its -in returns at once and
# the clipboard is taken 0.3 s later.
SLOW_XCLIP = """#!/bin/sh
case " $* " in
*" -in "*)
  data=$(cat; echo x)
  (sleep 0.3; printf %%s "${data%%x}" | %s "$@") >/dev/null 2>&1 &
  exit 0 ;;
esac
exec %s "$@"
"""


class ClipboardTest(XTestCase):
    def xclip_out(self):
        p = subprocess.run(["xclip", "-selection", "clipboard", "-out", "-target", "UTF8_STRING"],
                           env=self.xvfb.env(), capture_output=True, timeout=10)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.decode()

    def test_empty(self):
        self.assertEqual(self.ok({"op": "clipboard_get"}), {"id": 2, "text": "", "empty": True})

    def test_set_is_what_another_client_pastes_at_once(self):
        # Every time: xclip's parent exits before its child owns the
        # selection, and a paste right after must not get the old text.
        for i in range(30):
            text = "héllo 中文 %d\nsecond line" % i
            self.ok({"op": "clipboard_set", "text": text})
            self.assertEqual(self.xclip_out(), text)
            self.assertEqual(self.ok({"op": "clipboard_get"})["text"], text)

    def test_set_waits_until_xclip_holds_the_clipboard(self):
        # The race above, made certain: an xclip whose parent exits 0.3 s
        # before its child takes the clipboard.
        bin_dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, bin_dir)
        slow = os.path.join(bin_dir, "xclip")
        with open(slow, "w") as f:
            f.write(SLOW_XCLIP % (shutil.which("xclip"), shutil.which("xclip")))
        os.chmod(slow, 0o755)
        self.xvfb.path = bin_dir + os.pathsep + os.environ.get("PATH", "")
        for text in ["first", "second"]:
            self.ok({"op": "clipboard_set", "text": text})
            self.assertEqual(self.xclip_out(), text)

    def test_get_reads_what_another_client_set(self):
        p = subprocess.run(["xclip", "-selection", "clipboard", "-in"], input="from xclip ✓".encode(),
                           env=self.xvfb.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
        self.assertEqual(p.returncode, 0)
        # xclip's parent exits before its child owns the clipboard.
        poll("xclip owns the clipboard", self.obs.clipboard_owner)
        got = self.ok({"op": "clipboard_get"})
        self.assertEqual((got["text"], got["empty"]), ("from xclip ✓", False))

    def test_large_text_both_ways(self):
        text = "".join(chr(0x4E00 + i % 2000) if i % 3 else "x" for i in range(400000))  # about 1 MB of UTF-8
        self.ok({"op": "clipboard_set", "text": text})
        self.assertEqual(self.xclip_out(), text)
        self.assertEqual(self.ok({"op": "clipboard_get"})["text"], text)

    def test_falls_back_to_the_cut_buffer_a_viewer_pasted_into(self):
        cases = [(b"from a viewer", "from a viewer"), ("héllo".encode(), "héllo"), (b"caf\xe9", "café")]
        for data, want in cases:
            with self.subTest(data=data):
                self.obs.store_cut_buffer(data)
                got = self.ok({"op": "clipboard_get"})
                self.assertEqual((got["text"], got["empty"]), (want, False))


if __name__ == "__main__":
    unittest.main()


class WindowsTest(XTestCase):
    def test_a_window_gone_while_asked_about_is_no_error(self):
        # Chromium's popups come and go between the window list and the
        # questions about each window: their BadWindow errors must not fail
        # the request that asked (a click by ref did, under load).
        with mock.patch.dict(os.environ, {"DISPLAY": self.xvfb.display}):
            d = agent.Desktop()  # in this process, to look inside
        agent.x11.XCloseDisplay.argtypes = [agent.Display]
        self.addCleanup(agent.x11.XCloseDisplay, d.d)
        d.screen._clients = lambda: [0x3FFFFF]  # no such window
        self.assertEqual(d.screen.windows(), [])
        d.sync()  # raises the X errors collected since the last request
        self.assertEqual(agent._x_errors, [])
