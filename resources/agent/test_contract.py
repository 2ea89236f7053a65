"""The protocol contract, from the agent's end.

testdata/contract.json holds the exchanges between the sidecar and the agent
(its "about" says how they are read); desktop/contract_test.go checks
the sidecar's end. Here the agent, run as the sidecar runs it under a fresh
Xvfb of the contract's display, must answer each recorded request with the
recorded response, members in "vary" checked by their rule.
"""

import base64
import json
import os
import unittest

import agent
from xserver import HERE, Agent, Xvfb, decode_png, need_xvfb

CONTRACT = os.path.join(HERE, "testdata", "contract.json")


def load():
    with open(CONTRACT, encoding="utf-8") as f:
        return json.load(f)


def canonical(value):
    """A JSON value as text that tells true from 1 and 1 from 1.0."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def same_pixels(got, recorded):
    return decode_png(got) == decode_png(base64.b64decode(recorded))


# How a member named in an exchange's "vary" is checked against the
# recorded one.
VARY = {
    "spares": lambda got, recorded: type(got) is int and got >= 0,
    # On the wire a frame before the line (agent.encode); in the file base64.
    "png": lambda got, recorded: isinstance(got, bytes) and same_pixels(got, recorded),
}


class ContractFileTest(unittest.TestCase):
    """What both ends rely on in the file itself; no X server needed."""

    def test_exchanges_are_one_agents_life(self):
        exchanges = load()["exchanges"]
        self.assertEqual(exchanges[0]["request"]["op"], "hello", "an agent's first request is hello")
        # The sidecar numbers its requests from 1, per agent.
        self.assertEqual([ex["request"]["id"] for ex in exchanges], list(range(1, len(exchanges) + 1)))
        self.assertEqual([ex["response"]["id"] for ex in exchanges], list(range(1, len(exchanges) + 1)))
        names = [ex["name"] for ex in exchanges]
        self.assertEqual(len(names), len(set(names)), "names are unique")
        for ex in exchanges:
            with self.subTest(ex["name"]):
                self.assertEqual(set(ex) - {"name", "request", "response", "vary"}, set())
                self.assertEqual(set(ex.get("vary", [])) - set(VARY), set(), "a vary member with no rule")

    def test_covers_every_operation(self):
        ops = {name[3:] for name in dir(agent.Desktop) if name.startswith("op_")}
        recorded = {ex["request"]["op"] for ex in load()["exchanges"]}
        self.assertEqual(ops - recorded, set(), "operations the contract does not show")


class ContractTest(unittest.TestCase):
    def test_the_agent_answers_as_recorded(self):
        need_xvfb(self)
        contract = load()
        xvfb = Xvfb(contract["display"]["width"], contract["display"]["height"])
        self.addCleanup(xvfb.close)
        a = Agent(xvfb)
        self.addCleanup(a.close)
        for ex in contract["exchanges"]:
            with self.subTest(ex["name"]):
                a.send_line(json.dumps(ex["request"]))
                self.check(a.read_answer(), ex["response"], ex.get("vary", []))

    def check(self, got, want, vary):
        self.assertEqual(sorted(got), sorted(want), "members")
        for name in want:
            if name in vary:
                self.assertTrue(VARY[name](got[name], want[name]), "%s: %.200r" % (name, got[name]))
            else:
                self.assertEqual(canonical(got[name]), canonical(want[name]), name)


if __name__ == "__main__":
    unittest.main()
