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

test('files in and out of a sandbox, running and stopped', { skip, timeout: 300_000 }, async () => {
  const { client, stop } = spawnServe();
  const project = tempDir('pilot-ui-project-');
  const check = await resultChecker(await client.discover());
  /** @type {import('../client/types.js').SandboxProgress[]} */
  const progress = [];
  client.onProgress((p) => { if (p.projectPath === project && p.stage === 'copy') progress.push(p); });
  const fs = await import('node:fs');
  const path = await import('node:path');
  // The desktop image: files are the same in every image.
  fs.mkdirSync(path.join(project, '.pilot'));
  fs.writeFileSync(path.join(project, '.pilot', 'settings.json'), '{"sandbox": {"image": "desktop"}}');
  try {
    await client.start(project);
    check('sandbox/files/write', await client.writeFile(project, 'notes/a.txt', 'héllo', { createParents: true }));
    const bytes = new Uint8Array([0, 1, 2, 255]);
    assert.deepEqual(await client.writeFile(project, '/home/sandbox/notes/b.bin', bytes, { mode: 0o600 }), { path: '/home/sandbox/notes/b.bin', size: 4 });
    const piece = await client.readFile(project, 'notes/a.txt', { offset: 1, length: 2 });
    check('sandbox/files/read', piece);
    assert.deepEqual(piece, { data: Buffer.from('é').toString('base64'), size: 6, eof: false });
    const listed = await client.listFiles(project, 'notes');
    check('sandbox/files/list', listed);
    assert.deepEqual(listed.entries.map((e) => [e.name, e.type, e.size, e.mode]).sort(), [['a.txt', 'file', 6, 0o644], ['b.bin', 'file', 4, 0o600]]);
    check('sandbox/files/stat', await client.statFile(project, 'notes'));
    check('sandbox/files/stat', await client.statFile(project, 'nothing'));
    check('sandbox/files/mkdir', await client.mkdir(project, 'made/deep'));
    await assert.rejects(client.readFile(project, 'nothing'), { name: 'RpcError', kind: 'not_found', code: -32010 });
    await assert.rejects(client.readFile(project, 'notes'), { name: 'RpcError', kind: 'invalid_params', field: 'path' });

    const out = tempDir('pilot-ui-files-');
    const copied = await client.download(project, 'notes', path.join(out, 'notes'));
    check('sandbox/files/download', copied);
    assert.deepEqual(copied, { files: 2, bytes: 10 });
    assert.equal(fs.readFileSync(path.join(out, 'notes', 'a.txt'), 'utf8'), 'héllo');
    assert.equal(fs.statSync(path.join(out, 'notes', 'b.bin')).mode & 0o777, 0o600);
    await assert.rejects(client.download(project, 'notes/a.txt', path.join(out, 'notes', 'a.txt')), { kind: 'invalid_params', field: 'hostPath' });
    assert.ok(progress.length > 0 && progress.every((p) => { check('sandbox/progress', p); return true; }));

    await client.stop(project);
    check('sandbox/files/upload', await client.upload(project, path.join(out, 'notes'), 'copy'));
    assert.equal(Buffer.from((await client.readFile(project, 'copy/b.bin')).data, 'base64').toString('hex'), '000102ff');
    await assert.rejects(client.removeFile(project, 'copy', { recursive: true }), { kind: 'not_running' });
    await client.start(project);
    check('sandbox/files/remove', await client.removeFile(project, 'copy', { recursive: true }));
    assert.equal(await client.statFile(project, 'copy'), null);
  } finally {
    await client.remove(project).catch(() => {});
    assert.equal(await stop(), 0);
  }
});
