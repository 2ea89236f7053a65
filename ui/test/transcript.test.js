// What the Tasks section says (panel/transcript.js), without a browser: a
// task's events as transcript entries, its status line, a file's part of
// the patch, the argv typed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { entryOf, statusText, durationText, patchOf, argvOf, argvText } from '../panel/transcript.js';

/** @typedef {import('../client/types.js').Task} Task */

test('events become readable entries, not JSON', () => {
  assert.deepEqual(entryOf({ type: 'text', timeMs: 1, text: 'I will fix it.' }), { kind: 'text', text: 'I will fix it.' });
  assert.deepEqual(entryOf({ type: 'text', timeMs: 1, text: 'hmm', reasoning: true }), { kind: 'reasoning', text: 'hmm' });
  assert.deepEqual(entryOf({ type: 'tool', timeMs: 1, name: 'Bash', input: { command: 'ls -la', description: 'list' } }), { kind: 'tool', title: 'Bash', text: 'ls -la' });
  assert.deepEqual(entryOf({ type: 'tool', timeMs: 1, name: 'Odd', input: { a: 1 } }), { kind: 'tool', title: 'Odd', text: '{"a":1}' });
  assert.deepEqual(entryOf({ type: 'toolResult', timeMs: 1, name: 'Bash', output: 'total 0', isError: false }), { kind: 'result', title: 'Bash', text: 'total 0' });
  assert.equal(entryOf({ type: 'toolResult', timeMs: 1, name: 'Bash', output: 'no', isError: true })?.kind, 'error');
  assert.deepEqual(entryOf({ type: 'line', timeMs: 1, stream: 'stdout', text: 'working' }), { kind: 'line', text: 'working' });
  assert.deepEqual(entryOf({ type: 'line', timeMs: 1, stream: 'stderr', text: 'oops', cut: 2000000 }), { kind: 'stderr', text: 'oops …(2000000 bytes, cut)' });
  assert.deepEqual(entryOf({ type: 'usage', timeMs: 1, inputTokens: 10, outputTokens: 5, costUsd: 0.01 }), { kind: 'note', text: 'Usage: 10 tokens in, 5 out, $0.0100' });
  assert.equal(entryOf({ type: 'started', timeMs: 0 }), null);
  assert.equal(entryOf({ type: 'finished', timeMs: 9 }), null);
  assert.equal(entryOf(/** @type {any} */ ({ type: 'newThing', timeMs: 1 }))?.kind, 'note');
  const long = entryOf({ type: 'toolResult', timeMs: 1, name: 'Read', output: 'x'.repeat(5000), isError: false });
  assert.ok((long?.text.length ?? 0) <= 2001, 'a long output is cut');
});

test('the status line: status, duration (ticking while it runs), exit code, cost', () => {
  /** @type {Task} */
  const task = { taskId: 't', projectPath: '/p', agent: 'command', argv: ['true'], timeout: '30m', container: 'c', base: 'b', status: 'running', startedAt: 1000, events: 1 };
  assert.equal(statusText(task, 3500), 'Running, 2.5 s');
  assert.equal(statusText(task, 1500), 'Running, 500 ms');
  const done = { ...task, status: /** @type {const} */ ('failed'), finishedAt: 2000, finished: { status: 'failed', exitCode: 2, durationMs: 1234, costUsd: 0.5, turns: 3 } };
  assert.equal(statusText(done, 99_999), 'Failed, 1.2 s · exit code 2 · 3 turns · $0.5000');
  assert.equal(statusText({ ...task, status: 'cancelled', finished: { status: 'cancelled', exitCode: -1, durationMs: 61_000 } }, 0), 'Cancelled, 1 min 01 s');
});

test('durations for people', () => {
  assert.equal(durationText(40), '40 ms');
  assert.equal(durationText(2400), '2.4 s');
  assert.equal(durationText(12_300), '12 s');
  assert.equal(durationText(185_000), '3 min 05 s');
  assert.equal(durationText(3_720_000), '1 h 02 min');
});

test("a file's part of the patch, and none for a file it does not have", () => {
  const patch = 'diff --git a/main.py b/main.py\nindex 1..2 100644\n--- a/main.py\n+++ b/main.py\n@@ -1 +1,2 @@\n print(1)\n+print(2)\n'
    + 'diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n';
  assert.equal(patchOf(patch, 'main.py'), patch.slice(0, patch.indexOf('diff --git a/new.txt')));
  assert.ok(patchOf(patch, 'new.txt').endsWith('+new\n'));
  assert.equal(patchOf(patch, 'main'), '');
  assert.equal(patchOf(patch, 'gone.txt'), '');
});

test('a command typed one argument a line, no shell', () => {
  assert.deepEqual(argvOf('sh\n-c\necho "a b"; ls\n\n'), ['sh', '-c', 'echo "a b"; ls']);
  assert.deepEqual(argvOf('  \n'), []);
});

test('a command shown on one line keeps its words apart', () => {
  assert.equal(argvText(['sh', '-c', 'echo "a b"', '']), 'sh -c "echo \\"a b\\"" ""');
  assert.equal(argvText(['ls', '-la']), 'ls -la');
});
