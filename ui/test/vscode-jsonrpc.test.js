// vscode-jsonrpc, the JSON-RPC library of VS Code and of the LSP clients in
// Electron apps, talking to the real `pilot-sandbox serve` over stdio.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import rpc from 'vscode-jsonrpc/node.js';
import { FrameDecoder } from '../client/framing.js';
import { serveBinary, serverEnv, tempDir, NO_DOCKER, skipWithoutDocker } from './helpers.js';

const skipDocker = await skipWithoutDocker();

/**
 * Spawns serve and connects vscode-jsonrpc to it. A frame vscode-jsonrpc
 * cannot read (anything on stdout that is not a frame) fails the test.
 *
 * @param {Record<string, string>} [env]
 */
function connect(env) {
  const child = spawn(serveBinary(), ['serve'], { env: serverEnv(env), stdio: ['pipe', 'pipe', 'ignore'] });
  /** @type {Promise<number | null>} */
  const exited = new Promise((resolve) => child.once('exit', resolve));
  // vscode-jsonrpc writes through a pass-through that counts its frames, so
  // that a test can end stdin once everything it sent is written.
  const input = new PassThrough();
  input.pipe(/** @type {import('node:stream').Writable} */ (child.stdin));
  let framesWritten = 0;
  const frames = new FrameDecoder();
  /** @type {(() => void)[]} */
  const waiting = [];
  input.on('data', (/** @type {Buffer} */ chunk) => {
    framesWritten += frames.push(chunk).length;
    waiting.splice(0).forEach((wake) => wake());
  });
  /** @param {number} n */
  const written = async (n) => { while (framesWritten < n) await new Promise((wake) => waiting.push(() => wake(undefined))); };
  const conn = rpc.createMessageConnection(
    new rpc.StreamMessageReader(/** @type {import('node:stream').Readable} */ (child.stdout)),
    new rpc.StreamMessageWriter(input),
  );
  /** @type {unknown[]} */
  const errors = [];
  conn.onError(([error]) => { errors.push(error); });
  conn.listen();
  return { child, conn, exited, errors, input, written };
}

test('answers, errors, ignored notifications, shutdown and exit', async () => {
  const { conn, exited, errors } = connect({ DOCKER_HOST: NO_DOCKER });
  /** @type {any} */
  const init = await conn.sendRequest('initialize', { clientInfo: { name: 'vscode-jsonrpc', version: '8' } });
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.docker.available, false);
  await assert.rejects(conn.sendRequest('sandbox/start', { projectPath: 'relative' }), (/** @type {any} */ err) => {
    assert.ok(err instanceof rpc.ResponseError);
    assert.equal(err.code, -32602);
    assert.deepEqual(err.data, { kind: 'invalid_params', field: 'projectPath' });
    return true;
  });
  await assert.rejects(conn.sendRequest('no/such/method', {}), { code: rpc.ErrorCodes.MethodNotFound });
  await assert.rejects(conn.sendRequest('sandbox/start', { projectPath: tempDir('pilot-vsc-') }), { code: -32001 });
  await conn.sendNotification('no/such/notification', {});
  assert.deepEqual(await conn.sendRequest('sandbox/getToolsEnabled', { projectPath: tempDir('pilot-vsc-') }), { enabled: false });
  assert.equal(await conn.sendRequest('shutdown'), null);
  await assert.rejects(conn.sendRequest('docker/status', {}), { code: rpc.ErrorCodes.InvalidRequest });
  await conn.sendNotification('exit');
  assert.equal(await exited, 0);
  assert.deepEqual(errors, []);
  conn.dispose();
});

test('at the end of stdin every request already sent is answered', async () => {
  const { conn, exited, errors, input, written } = connect({ DOCKER_HOST: NO_DOCKER });
  const calls = [];
  for (let i = 0; i < 20; i++) calls.push(conn.sendRequest('docker/status', {}));
  calls.push(conn.sendRequest('sandbox/list', {}).catch((/** @type {any} */ e) => e.code));
  await written(21);
  input.end();
  const answers = await Promise.all(calls);
  assert.equal(answers.length, 21);
  assert.ok(answers.slice(0, 20).every((/** @type {any} */ a) => a.available === false));
  assert.equal(answers[20], -32001);
  assert.equal(await exited, 0);
  assert.deepEqual(errors, []);
  conn.dispose();
});

test('a sandbox, its notifications, and cancellation', { skip: skipDocker, timeout: 300_000 }, async () => {
  const { conn, exited, errors } = connect();
  const project = tempDir('pilot-vsc-project-');
  /** @type {string[]} */
  const stages = [];
  conn.onNotification('sandbox/progress', (/** @type {any} */ p) => { if (p.projectPath === project) stages.push(p.stage); });
  /** @type {any[]} */
  const states = [];
  conn.onNotification('sandbox/event', (/** @type {any} */ e) => { if (e.projectPath === project) states.push(e.state); });
  try {
    await conn.sendRequest('initialize', {});
    /** @type {any} */
    const state = await conn.sendRequest('sandbox/start', { projectPath: project });
    assert.equal(state.status, 'running');
    assert.ok(stages.includes('ready') && states.at(-1).status === 'running', `${stages} ${states.map((s) => s.status)}`);

    // vscode-jsonrpc sends $/cancelRequest; the server stops the call and
    // answers it with LSP's RequestCancelled.
    const source = new rpc.CancellationTokenSource();
    const started = Date.now();
    const slow = conn.sendRequest('sandbox/exec', { projectPath: project, command: 'sleep 60' }, source.token);
    setTimeout(() => source.cancel(), 200);
    await assert.rejects(slow, (/** @type {any} */ err) => {
      assert.equal(err.code, -32800);
      assert.equal(err.data?.kind, 'request_cancelled');
      return true;
    });
    assert.ok(Date.now() - started < 30_000, 'the cancelled call did not run its 60 s');
    /** @type {any} */
    const out = await conn.sendRequest('sandbox/exec', { projectPath: project, command: 'echo after' });
    assert.equal(out.stdout, 'after\n');
  } finally {
    await conn.sendRequest('sandbox/remove', { projectPath: project }).catch(() => {});
    await conn.sendRequest('shutdown');
    await conn.sendNotification('exit');
  }
  assert.equal(await exited, 0);
  assert.deepEqual(errors, []);
  conn.dispose();
});
