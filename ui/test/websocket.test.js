// The client's WebSocket transport against `pilot-sandbox ui`'s WebSocket
// endpoint on the real manager, with the WebSocket implementation browsers
// have (Node's global WebSocket).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectWebSocket } from '../client/websocket.js';
import { startUI, tempDir, skipWithoutDocker } from './helpers.js';

assert.ok(globalThis.WebSocket, 'run with node --experimental-websocket (Node 20) for a global WebSocket');

const { rpcUrl: url } = await startUI(tempDir('pilot-ui-ws-home-'));
const skipDocker = await skipWithoutDocker();

test('requests, errors and discovery over WebSocket', async () => {
  const client = await connectWebSocket(url);
  const init = await client.initialize({ name: 'ws-test', version: '1' });
  assert.equal(init.protocolVersion, 1);
  assert.equal(typeof (await client.dockerStatus()).available, 'boolean');
  await assert.rejects(client.start('relative'), { name: 'RpcError', code: -32602, kind: 'invalid_params', field: 'projectPath' });
  assert.equal((await client.discover()).openrpc, '1.3.2');
  client.close();
});

test('a wrong token is refused', async () => {
  const wrong = url.replace(/token=[^&]+/, 'token=wrong');
  await assert.rejects(connectWebSocket(wrong), (/** @type {Error} */ err) => {
    assert.match(err.message, /cannot connect to .*token=…/);
    assert.ok(!err.message.includes(new URL(url).searchParams.get('token') ?? '?'), 'the token is not in the message');
    return true;
  });
});

test('exit closes only its own connection', async () => {
  const a = await connectWebSocket(url);
  const b = await connectWebSocket(url);
  const closed = new Promise((resolve) => a.onClose(resolve));
  await a.shutdown();
  a.exit();
  await closed;
  await assert.rejects(a.dockerStatus(), { name: 'ConnectionClosedError' });
  assert.equal(typeof (await b.dockerStatus()).available, 'boolean');
  b.close();
});

test('events and progress over WebSocket', { skip: skipDocker, timeout: 300_000 }, async () => {
  const client = await connectWebSocket(url);
  const project = tempDir('pilot-ui-ws-project-');
  /** @type {string[]} */
  const seen = [];
  client.onProgress((p) => { if (p.projectPath === project) seen.push(`progress ${p.stage}`); });
  client.onEvent((e) => { if (e.projectPath === project) seen.push(`event ${e.state?.status ?? 'removed'}`); });
  try {
    assert.equal((await client.start(project)).status, 'running');
    assert.equal((await client.remove(project)).removed, true);
    assert.equal(seen[0], 'event starting');
    assert.deepEqual(seen.filter((s) => s.startsWith('progress') && s !== 'progress image'), ['progress create', 'progress start', 'progress ready']);
    assert.ok(seen.indexOf('event running') < seen.indexOf('progress ready'), seen.join(', '));
    assert.equal(seen.at(-1), 'event removed');
  } finally {
    await client.remove(project).catch(() => {});
    client.close();
  }
});
