"""Tests of the desktop agent that need no X server: how it answers request
lines, its pure helpers, and its keyboard bookkeeping against a fake Xlib.
They run on any machine with libX11 (loaded, not connected to); the tests
under a real X server are in test_agent_x.py.

    cd resources/agent && python3 -m unittest -v
"""

import io
import json
import unittest
import zlib
from unittest import mock

import agent
from xserver import char_of_keysym, decode_png, pixel


class FakeDesktop:
    """A desktop whose operations answer from a script, for the dispatch."""

    def __init__(self):
        self.calls = []

    def op_ok(self, r):
        self.calls.append(r)
        return {"done": r.get("n")}

    def op_refuse(self, r):
        raise agent.Fail("cannot do that")

    def op_crash(self, r):
        raise ValueError("boom")

    def op_shot(self, r):
        return {"width": 2, "png": b"\x89PNG\n=3\n\x00"}

    def op_missing(self, r):
        return {"x": r["x"]}


class HandleTest(unittest.TestCase):
    def test_answers(self):
        cases = [
            ("an operation's answer carries the id", '{"id": 7, "op": "ok", "n": 3}', {"id": 7, "done": 3}),
            ("any JSON id comes back as it was", '{"id": "a", "op": "ok"}', {"id": "a", "done": None}),
            ("no id answers with a null one", '{"op": "ok", "n": 1}', {"id": None, "done": 1}),
            ("blank space around the line is ignored", '  {"id": 1, "op": "ok"}\r\n', {"id": 1, "done": None}),
            ("a refusal is the error", '{"id": 2, "op": "refuse"}', {"id": 2, "error": "cannot do that"}),
            ("a crash names its exception", '{"id": 3, "op": "crash"}', {"id": 3, "error": "ValueError: boom"}),
            ("a missing field names it", '{"id": 4, "op": "missing"}', {"id": 4, "error": "KeyError: 'x'"}),
            ("an unknown operation", '{"id": 5, "op": "warp"}', {"id": 5, "error": "unknown operation 'warp'"}),
            ("no operation", '{"id": 6}', {"id": 6, "error": "unknown operation None"}),
            ("an operation that is no string", '{"id": 6, "op": ["ok"]}',
             {"id": 6, "error": "unknown operation ['ok']"}),
            ("only op_ methods are operations", '{"id": 8, "op": "calls"}',
             {"id": 8, "error": "unknown operation 'calls'"}),
            ("a line that is no JSON", 'click 1 2',
             {"id": None, "error": "JSONDecodeError: Expecting value: line 1 column 1 (char 0)"}),
            ("a JSON array", '[1, 2]', {"id": None, "error": "a request must be a JSON object, not list"}),
            ("a JSON string", '"hello"', {"id": None, "error": "a request must be a JSON object, not str"}),
            ("JSON null", 'null', {"id": None, "error": "a request must be a JSON object, not NoneType"}),
        ]
        for name, line, want in cases:
            with self.subTest(name):
                self.assertEqual(agent.handle(FakeDesktop(), line), want)

    def test_blank_lines_get_no_answer(self):
        for line in ["", "\n", "   \t\r\n"]:
            self.assertIsNone(agent.handle(FakeDesktop(), line))

    def test_a_failed_request_does_nothing(self):
        d = FakeDesktop()
        for line in ['{"id": 1, "op": "warp"}', "[]", "{", '{"id": 2}']:
            agent.handle(d, line)
        self.assertEqual(d.calls, [])


class FlushCounter(io.BytesIO):
    def __init__(self):
        super().__init__()
        self.flushes = []

    def flush(self):
        self.flushes.append(self.getvalue())


class ServeTest(unittest.TestCase):
    def test_answers_each_request_on_its_own_line_at_once(self):
        inp = io.StringIO('{"id": 1, "op": "ok", "n": "é"}\n\n{"id": 2, "op": "warp"}\n[]\n{"id": 3, "op": "ok"}\n')
        out = FlushCounter()
        agent.serve(FakeDesktop(), inp, out)
        lines = out.getvalue().decode("ascii").split("\n")
        self.assertEqual(lines[-1], "", "the output ends with a newline")
        self.assertEqual([json.loads(line) for line in lines[:-1]], [
            {"id": 1, "done": "é"},
            {"id": 2, "error": "unknown operation 'warp'"},
            {"id": None, "error": "a request must be a JSON object, not list"},
            {"id": 3, "done": None},
        ])
        # Compact, ASCII-only JSON: one line per answer, whatever it holds.
        self.assertEqual(lines[0], '{"done":"\\u00e9","id":1}')
        # Each answer is flushed as soon as it is written: the sidecar waits
        # for it with the pipe open.
        self.assertEqual(out.flushes, [("\n".join(lines[:i]) + "\n").encode() for i in range(1, 5)])

    def test_a_png_comes_as_a_frame_before_its_line(self):
        inp = io.StringIO('{"id": 1, "op": "shot"}\n{"id": 2, "op": "ok"}\n')
        out = FlushCounter()
        agent.serve(FakeDesktop(), inp, out)
        # Its bytes as they are (newlines and "=" in them too), then the
        # answer's line without them: what desktop/lines.go reads.
        self.assertEqual(out.getvalue(), b'=9\n\x89PNG\n=3\n\x00{"width":2,"id":1}\n{"done":null,"id":2}\n')


class PureTest(unittest.TestCase):
    def test_keysym_of_char(self):
        cases = [("a", 0x61), ("~", 0x7E), (" ", 0x20), ("\n", 0xFF0D), ("\t", 0xFF09), ("é", 0xE9),
                 ("\u00a0", 0xA0), ("ÿ", 0xFF), ("Ā", 0x1000100), ("中", 0x1004E2D), ("😀", 0x101F600),
                 ("\u007f", 0x100007F)]
        for ch, want in cases:
            with self.subTest(ch=ch):
                self.assertEqual(agent.keysym_of_char(ch), want)

    def test_runs(self):
        cases = [([], []), ([5], [[5, 5]]), ([5, 6, 7], [[5, 7]]), ([5, 7, 8, 10], [[5, 5], [7, 8], [10, 10]])]
        for keycodes, want in cases:
            with self.subTest(keycodes=keycodes):
                self.assertEqual(agent.runs(keycodes), want)

    def test_decode_text(self):
        cases = [(b"", ""), (b"plain", "plain"), ("héllo 中文".encode(), "héllo 中文"),
                 (b"caf\xe9", "café"), (b"\xff\xfe", "ÿþ")]
        for data, want in cases:
            with self.subTest(data=data):
                self.assertEqual(agent.decode_text(data), want)

    def test_adler32_combine(self):
        for a, b in [(b"", b""), (b"abc", b""), (b"", b"xyz"), (b"pilot" * 999, bytes(range(256)) * 300),
                     (b"\xff" * 70000, b"\xfe" * 65521)]:
            with self.subTest(a=len(a), b=len(b)):
                self.assertEqual(agent.adler32_combine(zlib.adler32(a), zlib.adler32(b), len(b)), zlib.adler32(a + b))

    def test_band_deflater_compresses_only_the_bands_that_changed(self):
        w, h = 7, agent.BAND_ROWS * 2 + 5  # three bands, the last one short
        for pad in (0, 4):  # rows as long as the pixels, and rows padded past them
            with self.subTest(pad=pad):
                stride = w * 4 + pad
                raw = bytearray(b"".join(bytes((i * 31 + y) % 256 for i in range(stride)) for y in range(h)))
                bands = agent.BandDeflater()
                first = bands.png(bytes(raw), w, h, stride)
                self.assertEqual(decode_png(first), decode_png(agent.png_rgb(bytes(raw), w, h, stride)))
                before = [b[1] for b in bands.bands]
                raw[(agent.BAND_ROWS + 3) * stride + 8] ^= 0xFF  # pixel 2 of a row of the middle band
                second = bands.png(bytes(raw), w, h, stride)
                self.assertEqual(decode_png(second), decode_png(agent.png_rgb(bytes(raw), w, h, stride)))
                self.assertNotEqual(decode_png(second), decode_png(first))
                after = [b[1] for b in bands.bands]
                self.assertIs(after[0], before[0])
                self.assertIsNot(after[1], before[1])
                self.assertIs(after[2], before[2])

    def test_png_rgb(self):
        # Two pixels a row, BGRX: red, green / blue, white.
        bgrx = [b"\x00\x00\xff\x00", b"\x00\xff\x00\x00", b"\xff\x00\x00\x00", b"\xff\xff\xff\x00"]
        want = [[(255, 0, 0), (0, 255, 0)], [(0, 0, 255), (255, 255, 255)]]
        for pad in (0, 8):  # rows as long as the pixels, and rows padded past them
            with self.subTest(pad=pad):
                raw = bgrx[0] + bgrx[1] + b"\x99" * pad + bgrx[2] + bgrx[3] + b"\x99" * pad
                w, h, rows = decode_png(agent.png_rgb(raw, 2, 2, 8 + pad))
                self.assertEqual((w, h), (2, 2))
                self.assertEqual([[pixel(rows, x, y) for x in range(2)] for y in range(2)], want)


class Shell(agent.Desktop):
    """A Desktop with no display: its keyboard bookkeeping set by hand.
    Anything that would reach X goes to the fakes the test installs."""

    def __init__(self, keys=None, spares=(), per=2):
        self.d = None
        self.per = per
        self.keys = dict(keys or {})
        self.spares = list(spares)
        self.rows = {kc: (0,) * per for kc in spares}
        self.sym_spare = {}
        self.spare_used = {kc: float(i - len(spares)) for i, kc in enumerate(spares)}
        self.shift = 50
        self.width, self.height = 100, 100


class FakeX:
    """What a client of the X server would see: the keyboard map as changed,
    key presses looked up in it when they happen, on a clock that moves only
    when the agent sleeps."""

    def __init__(self, keys, per=2):
        self.now = 1000.0
        self.map = {kc: (sym,) * per for sym, (kc, _) in keys.items()}
        self.changes = []  # (first keycode, count)
        self.sleeps = []
        self.typed = []  # (keycode, the keysym it had when pressed)
        self.last_press = {}
        self.rebound_too_soon = []

    # x11
    def XChangeKeyboardMapping(self, d, first, per, syms, count):
        syms = list(syms)
        self.changes.append((first, count))
        for i in range(count):
            kc = first + i
            if self.now - self.last_press.get(kc, -1e9) < agent.REBIND_AFTER:
                self.rebound_too_soon.append(kc)
            self.map[kc] = tuple(syms[i * per:(i + 1) * per])

    def XSync(self, d, discard):
        return 0

    # xtst
    def XTestFakeKeyEvent(self, d, kc, press, delay):
        if press:
            self.typed.append((kc, self.map[kc][0]))
            self.last_press[kc] = self.now

    # time
    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(round(seconds, 6))
        self.now += seconds

    def install(self, test):
        for name in ("x11", "xtst", "time"):
            patcher = mock.patch.object(agent, name, self)
            patcher.start()
            test.addCleanup(patcher.stop)


A, B, C, D, E = 0x1000391, 0x1000392, 0x1000393, 0x1000394, 0x1000395  # Greek capitals


class BindTest(unittest.TestCase):
    def setUp(self):
        self.desk = Shell(keys={0x61: (38, False)}, spares=[10, 11, 12])
        self.x = FakeX(self.desk.keys)
        self.x.install(self)

    def test_binds_missing_keysyms_to_the_least_recently_used_spares(self):
        self.desk._bind([A, B])
        self.assertEqual(self.desk.sym_spare, {A: 10, B: 11})
        self.assertEqual(self.x.changes, [(10, 2)], "one request for a run of keycodes")
        self.assertEqual((self.x.map[10], self.x.map[11]), ((A, A), (B, B)), "every level holds the keysym")
        self.assertEqual(self.x.sleeps, [])

    def test_keeps_what_is_bound_and_waits_before_rebinding_a_recent_spare(self):
        self.desk._bind([A, B, C])
        self.desk.spare_used.update({10: 1000.0, 11: 1000.2, 12: 1000.1})
        self.x.now = 1000.3
        self.desk._bind([B, D])  # B stays on 11; D takes 10, used longest ago
        self.assertEqual(self.desk.sym_spare, {B: 11, C: 12, D: 10})
        self.assertEqual(self.x.sleeps, [0.2], "10 was used 0.3 s ago: wait out REBIND_AFTER")
        self.assertEqual(self.x.changes[-1], (10, 1))

    def test_binding_nothing_new_changes_nothing(self):
        self.desk._bind([A])
        self.desk._bind([A])
        self.desk._bind([])
        self.assertEqual(self.x.changes, [(10, 1)])

    def test_more_keysyms_than_spares_fails(self):
        with self.assertRaisesRegex(agent.Fail, "too few spare keycodes"):
            self.desk._bind([A, B, C, D])
        self.assertEqual(self.x.changes, [])


class TypeTest(unittest.TestCase):
    def type(self, text, spares):
        desk = Shell(keys={0x61: (38, False), 0x62: (56, False), 0xFF0D: (36, False)}, spares=spares)
        x = FakeX(desk.keys)
        x.install(self)
        return desk.op_type({"text": text}), x

    def test_types_every_character_in_order_with_few_spares(self):
        text = "a" + "ΑΒΓΔΕ" * 3 + "b\r\nΕΔa\rΑ"
        resp, x = self.type(text, spares=[10, 11])
        want = text.replace("\r\n", "\n").replace("\r", "\n")
        self.assertEqual(resp, {"typed": len(want)})
        self.assertEqual("".join(char_of_keysym(sym) for _, sym in x.typed), want)
        self.assertEqual(x.rebound_too_soon, [], "a spare was rebound under a character still being read")

    def test_binds_a_stretch_at_once(self):
        _, x = self.type("ΑΒΓΑΒΓ", spares=[10, 11, 12, 13])
        self.assertEqual(x.changes, [(10, 3)])

    def test_no_spares_types_what_the_map_has_and_refuses_the_rest(self):
        resp, x = self.type("ab\n", spares=[])
        self.assertEqual(resp, {"typed": 3})
        with self.assertRaisesRegex(agent.Fail, "no spare keycode"):
            self.type("aΑ", spares=[])


class GlidingShell(Shell):
    """A Shell whose pointer moves are recorded with the fake clock's time."""

    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        self.moves = []

    def move(self, x, y):
        self.moves.append((x, y, self.clock.now))


class GlideTest(unittest.TestCase):
    def glide(self, points, duration):
        x = FakeX({})
        x.install(self)
        desk = GlidingShell(x)
        desk._glide(points, duration)
        return desk.moves, x

    def test_goes_through_every_point_in_order(self):
        points = [(0, 0), (100, 0), (100, 50), (0, 50)]
        for duration in (0, 1.5):
            with self.subTest(duration=duration):
                moves, _ = self.glide(points, duration)
                at = [(mx, my) for mx, my, _ in moves]
                where = [at.index(p) for p in points[1:]]
                self.assertEqual(where, sorted(where))
                self.assertEqual(at[-1], points[-1])

    def test_spreads_the_steps_over_the_duration_by_length(self):
        # 100 px then 50 px in 1.5 s: the corner is reached at 1 s.
        moves, x = self.glide([(0, 0), (100, 0), (100, 50)], 1.5)
        corner = next(t for mx, my, t in moves if (mx, my) == (100, 0))
        self.assertAlmostEqual(corner - 1000.0, 1.0, places=6)
        self.assertAlmostEqual(x.now - 1000.0, 1.5, places=6)
        self.assertEqual([t for _, _, t in moves], sorted(t for _, _, t in moves))
        self.assertGreater(len(moves), 100, "steps of about 10 ms")

    def test_without_a_duration_it_does_not_wait(self):
        moves, x = self.glide([(0, 0), (300, 0)], 0)
        self.assertEqual((x.sleeps, len(moves)), ([], 20), "at most 20 quick steps a segment")

    def test_a_duration_in_place_is_waited_out(self):
        moves, x = self.glide([(7, 8), (7, 8)], 0.4)
        self.assertEqual(x.sleeps, [0.4])
        self.assertEqual({(mx, my) for mx, my, _ in moves}, {(7, 8)})


class KeylessShell(Shell):
    def _key_for(self, sym):
        raise AssertionError("a key was pressed")

    def move(self, x, y):
        raise AssertionError("the pointer moved")


class ResolveTest(unittest.TestCase):
    def test_key_names(self):
        # XStringToKeysym needs no display.
        cases = [("a", 0x61), ("A", 0x41), ("Return", 0xFF0D), ("enter", 0xFF0D), ("ESC", 0xFF1B),
                 ("pgdn", 0xFF56), ("Page_Up", 0xFF55), ("F5", 0xFFC2), ("super", 0xFFEB), ("ctrl", 0xFFE3),
                 ("Shift", 0xFFE1), ("alt", 0xFFE9), ("udiaeresis", 0xFC), ("€", 0x10020AC), ("+", 0x2B)]
        for name, want in cases:
            with self.subTest(name=name):
                self.assertEqual(KeylessShell()._resolve(name), want)


class RefusalTest(unittest.TestCase):
    """Requests refused before anything happens on the display."""

    def test_refusals(self):
        cases = [
            ("an unknown key name", "key", {"keys": "a bogus"}, "unknown key name 'bogus'"),
            ("an unknown modifier", "key", {"keys": "hyper+a"}, "unknown key name 'hyper'"),
            ("a trailing +", "key", {"keys": "ctrl+"}, "malformed key combination 'ctrl+'"),
            ("a leading +", "key", {"keys": "+a"}, "malformed key combination '+a'"),
            ("a doubled +", "key", {"keys": "ctrl++a"}, "malformed key combination 'ctrl++a'"),
            ("an unknown scroll direction", "scroll", {"x": 1, "y": 1, "direction": "sideways"},
             "unknown scroll direction 'sideways'"),
            ("an unknown modifier on a click", "click", {"x": 1, "y": 1, "modifiers": ["hyper"]},
             "unknown modifier 'hyper': use ctrl, shift, alt or super"),
            ("an unknown modifier on a scroll", "scroll", {"x": 1, "y": 1, "direction": "up", "modifiers": ["Ctrl_L"]},
             "unknown modifier 'Ctrl_L': use ctrl, shift, alt or super"),
            ("an unknown modifier on a drag", "drag", {"x": 1, "y": 1, "toX": 2, "toY": 2, "modifiers": [""]},
             "unknown modifier '': use ctrl, shift, alt or super"),
            ("a hold of two combinations", "key", {"keys": "a ctrl+b", "holdMs": 100},
             "holdMs holds one key combination, not 2"),
            ("a region past the screen", "screenshot", {"x": 95, "y": 0, "width": 10, "height": 10},
             "the region 10x10 at 95, 0 is not on the 100x100 screen"),
            ("an empty region", "screenshot", {"x": 5, "y": 5, "width": 0, "height": -1},
             "the region 0x-1 at 5, 5 is not on the 100x100 screen"),
            ("a corner without a size", "screenshot", {"x": 5, "y": 5}, "a screenshot from 5, 5 needs a width and a height"),
        ]
        for name, op, req, want in cases:
            with self.subTest(name):
                with self.assertRaises(agent.Fail) as caught:
                    getattr(KeylessShell(), "op_" + op)(req)
                self.assertEqual(str(caught.exception), want)


if __name__ == "__main__":
    unittest.main()
