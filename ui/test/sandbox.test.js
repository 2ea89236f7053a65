// The client driving a real sandbox on a real Docker engine through the
// real binary: events, progress, exec, screenshot, cancellation.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnServe, tempDir, resultChecker, skipWithoutDocker } from './helpers.js';

const skip = await skipWithoutDocker();

test('a sandbox from start to remove', { skip, timeout: 300_000 }, async () => {
  const { client, stop } = spawnServe();
  const project = tempDir('pilot-ui-project-');
  const check = await resultChecker(await client.discover());
  /** @type {import('../client/types.js').SandboxProgress[]} */
  const progress = [];
  /** @type {import('../client/types.js').SandboxEvent[]} */
  const events = [];
  client.onProgress((p) => { if (p.projectPath === project) progress.push(p); });
  client.onEvent((e) => { if (e.projectPath === project) events.push(e); });
  try {
    check('initialize', await client.initialize({ name: 'ui-test', version: '1' }));
    assert.equal(await client.status(project), null);

    const state = await client.start(project);
    check('sandbox/start', state);
    assert.equal(state.status, 'running');
    assert.match(state.viewerUrl, /^http:\/\/127\.0\.0\.1:\d+\/pilot\/viewer\.html#password=\w+$/);
    assert.match(state.watchUrl, /^http:\/\/127\.0\.0\.1:\d+\/pilot\/viewer\.html#view_only=true&password=\w+$/);
    // The notifications a call causes arrive before its answer.
    assert.deepEqual([...new Set(progress.map((p) => p.stage))].filter((s) => s !== 'image'), ['create', 'start', 'ready']);
    assert.equal(events.at(-1)?.state?.status, 'running');
    for (const e of events) check('sandbox/event', e);
    for (const p of progress) check('sandbox/progress', p);

    const out = await client.exec(project, 'echo "$(id -un) on $DISPLAY in $HOME"; exit 3', { timeoutMs: 30_000 });
    check('sandbox/exec', out);
    assert.deepEqual(out, { exitCode: 3, stdout: 'sandbox on :99 in /home/sandbox\n', stderr: '', timedOut: false, truncated: false });

    const shot = await client.screenshot(project);
    check('sandbox/screenshot', shot);
    const png = Buffer.from(shot.data, 'base64');
    assert.equal(png.subarray(1, 4).toString(), 'PNG');
    assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [shot.width, shot.height]);

    // An aborted call rejects at once; the server is told and goes on.
    const controller = new AbortController();
    const slow = client.exec(project, 'sleep 30', { signal: controller.signal });
    controller.abort(new Error('the user gave up'));
    await assert.rejects(slow, /the user gave up/);
    assert.equal((await client.exec(project, 'echo still here')).stdout, 'still here\n');

    check('sandbox/list', await client.list());
    const stopped = await client.stop(project);
    check('sandbox/stop', stopped);
    assert.equal(stopped.status, 'stopped');
    await assert.rejects(client.exec(project, 'true'), { name: 'RpcError', kind: 'not_running' });
    assert.deepEqual(await client.remove(project), { removed: true });
    assert.equal(events.at(-1)?.state, null);
  } finally {
    await client.remove(project).catch(() => {});
    assert.equal(await stop(), 0);
  }
});
