// What the panel says about the network (panel/asks.js), without a
// browser: a question's cause and facts, its time left, the queue, a log
// line, the preset.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { causeText, questionFacts, secondsLeft, enqueue, dequeue, logLine, presetText, clip } from '../panel/asks.js';

/** @typedef {import('../client/types.js').PermissionRequest} PermissionRequest */

/**
 * @param {Partial<PermissionRequest>} [fields]
 * @returns {PermissionRequest}
 */
function question(fields = {}) {
  return {
    id: 'q1', projectPath: '/p', kind: 'network', rule: 'example.org:443', summary: 'connect to example.org:443 (tcp)',
    detail: { host: 'example.org', port: 443, protocol: 'tcp' }, expiresAt: 60_000, ...fields,
  };
}

test('a cause says what led to the connection, each kind the protocol names', () => {
  assert.equal(causeText({ tool: 'sandbox_exec', requestId: '7' }), "the agent's tool call sandbox_exec (request 7)");
  assert.equal(causeText({ exec: 'curl https://example.org' }), 'the command `curl https://example.org`');
  assert.equal(causeText({ task: '20260101-000000-abcd' }), 'task 20260101-000000-abcd');
  assert.equal(causeText({ browser: 'https://example.org/page' }), "the browser's page https://example.org/page");
  assert.equal(causeText(undefined), '');
  assert.equal(causeText(/** @type {any} */ ('nonsense')), '');
});

test("a question's facts: destination, TLS name when it differs, process, cause", () => {
  const q = question({
    detail: { host: 'example.org', port: 443, protocol: 'tcp', sni: 'cdn.example.net', process: { pid: 12, command: 'curl https://example.org' } },
    cause: { exec: 'curl https://example.org' },
  });
  assert.deepEqual(questionFacts(q), [
    { label: 'Destination', value: 'example.org:443 (tcp)' },
    { label: 'TLS name', value: 'cdn.example.net' },
    { label: 'Process', value: 'curl https://example.org (pid 12)' },
    { label: 'Cause', value: 'the command `curl https://example.org`' },
  ]);
  assert.deepEqual(questionFacts(question()).at(-1), { label: 'Cause', value: 'not known' });
});

test('hostile text is cut, and stays text', () => {
  const host = `${'a'.repeat(1000)}<img src=x onerror=alert(1)>`;
  const [dest] = questionFacts(question({ detail: { host, port: 80, protocol: 'tcp' } }));
  assert.ok([...dest.value].length < 300, dest.value.length.toString());
  assert.equal(clip('ab😀cd', 4), 'ab😀…');
});

test('time left counts down to 0, never below', () => {
  assert.equal(secondsLeft(question({ expiresAt: 10_000 }), 0), 10);
  assert.equal(secondsLeft(question({ expiresAt: 10_000 }), 9_001), 1);
  assert.equal(secondsLeft(question({ expiresAt: 10_000 }), 20_000), 0);
});

test('the queue: oldest first, the project only, no id twice, one removed by id', () => {
  let queue = enqueue([], question({ id: 'a' }), '/p');
  queue = enqueue(queue, question({ id: 'b' }), '/p');
  queue = enqueue(queue, question({ id: 'a' }), '/p');
  queue = enqueue(queue, question({ id: 'c', projectPath: '/other' }), '/p');
  assert.deepEqual(queue.map((q) => q.id), ['a', 'b']);
  assert.deepEqual(dequeue(queue, 'a').map((q) => q.id), ['b']);
  assert.deepEqual(dequeue(queue, 'zzz').map((q) => q.id), ['a', 'b']);
});

test('a log line: destination, decision, who decided, bytes of an allowed one, cause', () => {
  const line = logLine({ time: 0, host: 'example.org', port: 443, protocol: 'tcp', decision: 'allow', by: 'user', rule: 'example.org:443', bytesIn: 2048, bytesOut: 10, cause: { task: 't1' } });
  assert.equal(line.destination, 'example.org:443');
  assert.equal(line.decision, 'allow');
  assert.equal(line.by, 'by you (example.org:443)');
  assert.equal(line.bytes, '10 B out, 2.0 KiB in');
  assert.equal(line.cause, 'task t1');
  const denied = logLine({ time: 0, host: '10.0.0.1', port: 25, protocol: 'udp', decision: 'deny', by: 'timeout', reason: 'no answer', bytesIn: 0, bytesOut: 0 });
  assert.equal(denied.destination, '10.0.0.1:25 udp');
  assert.equal(denied.by, 'no answer in time: no answer');
  assert.equal(denied.bytes, '');
});

test("the preset in words, and a sandbox without a network", () => {
  assert.equal(presetText({ preset: { name: 'dev', source: 'default', otherwise: 'ask' } }), 'Preset dev (the default): everything else asks you');
  assert.equal(presetText({ preset: { name: 'locked', source: 'config', otherwise: 'deny' } }), 'Preset locked (from your config.json): everything else is denied');
  assert.equal(presetText({ none: true }), 'No network');
  assert.equal(presetText(null), '');
});
