// The client against the real binary over stdio, without Docker: the
// protocol's rules that need no engine.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { RpcError, ConnectionClosedError, PROTOCOL_VERSION } from '../client/node.js';
import { spawnServe, tempDir, NO_DOCKER } from './helpers.js';

test('initialize names the server and says Docker is missing, and what to do', async () => {
  const { client, stop } = spawnServe({ DOCKER_HOST: NO_DOCKER });
  const init = await client.initialize({ name: 'ui-test', version: '1' });
  assert.equal(init.protocolVersion, PROTOCOL_VERSION);
  assert.equal(init.serverInfo.name, 'pilot-sandbox');
  assert.equal(init.docker.available, false);
  assert.equal(init.docker.endpoint, NO_DOCKER);
  assert.match(init.docker.error ?? '', /Docker is not running.*start Docker Desktop or dockerd/);
  const status = await client.dockerStatus();
  assert.equal(status.available, false);
  assert.equal(await stop(), 0);
});

test('errors carry code, kind and field', async () => {
  const { client, stop } = spawnServe({ DOCKER_HOST: NO_DOCKER });
  const project = tempDir('pilot-ui-project-');
  /** @type {[() => Promise<unknown>, number, string, string?][]} */
  const cases = [
    [() => client.start('relative/path'), -32602, 'invalid_params', 'projectPath'],
    [() => client.start(join(project, 'missing')), -32602, 'invalid_params', 'projectPath'],
    [() => client.exec(project, 'ls', { timeoutMs: 0 }), -32602, 'invalid_params', 'timeoutMs'],
    [() => client.screenshot(project, { quality: 50 }), -32602, 'invalid_params', 'quality'],
    [() => client.screenshot(project, { format: 'jpeg', quality: 101 }), -32602, 'invalid_params', 'quality'],
    [() => client.request('sandbox/start', { projectPath: project, extra: 1 }), -32602, 'invalid_params', 'extra'],
    [() => client.request('no/such/method'), -32601, 'method_not_found'],
    [() => client.start(project), -32001, 'docker_unavailable'],
    [() => client.callTool(project, 'sandbox_click', { x: 1, y: 1 }), -32005, 'tools_disabled'],
  ];
  for (const [call, code, kind, field] of cases) {
    await assert.rejects(call, (/** @type {any} */ err) => {
      assert.ok(err instanceof RpcError, String(err));
      assert.equal(err.code, code, err.message);
      assert.equal(err.kind, kind);
      assert.equal(err.field, field);
      return true;
    });
  }
  assert.equal(await stop(), 0);
});

test('the agent-tools switch keeps the rest of settings.json', async () => {
  const { client, stop } = spawnServe({ DOCKER_HOST: NO_DOCKER });
  const project = tempDir('pilot-ui-project-');
  mkdirSync(join(project, '.pilot'));
  const settings = join(project, '.pilot', 'settings.json');
  writeFileSync(settings, '{\n  "theme": "dark",\n  "nested": {"a": [1, 2]}\n}\n');
  assert.deepEqual(await client.getToolsEnabled(project), { enabled: false });
  assert.deepEqual(await client.listTools(project), { tools: [] });
  assert.deepEqual(await client.setToolsEnabled(project, true), { enabled: true });
  assert.deepEqual(await client.getToolsEnabled(project), { enabled: true });
  const written = JSON.parse(readFileSync(settings, 'utf8'));
  assert.deepEqual(written, { theme: 'dark', nested: { a: [1, 2] }, dockerToolsEnabled: true });
  assert.equal(await stop(), 0);
});

test('after shutdown only exit is accepted, and exit is 0', async () => {
  const { client, exited } = spawnServe({ DOCKER_HOST: NO_DOCKER });
  await client.shutdown();
  await assert.rejects(client.dockerStatus(), { name: 'RpcError', code: -32600, kind: 'invalid_request' });
  client.exit();
  assert.equal(await exited, 0);
});

test('exit without shutdown is 1, and pending calls reject as closed', async () => {
  const { client, exited } = spawnServe({ DOCKER_HOST: NO_DOCKER });
  await client.initialize();
  client.exit();
  assert.equal(await exited, 1);
  await assert.rejects(client.dockerStatus(), ConnectionClosedError);
});

test('at the end of input every request already read is answered', async () => {
  const { client, child, exited } = spawnServe({ DOCKER_HOST: NO_DOCKER });
  const project = tempDir('pilot-ui-project-');
  const calls = [client.dockerStatus(), client.getToolsEnabled(project), client.start(project).catch((e) => e.kind), client.list().catch((e) => e.kind)];
  child.stdin?.end();
  const results = await Promise.all(calls);
  assert.equal(results[0].available, false);
  assert.deepEqual(results[1], { enabled: false });
  assert.deepEqual(results.slice(2), ['docker_unavailable', 'docker_unavailable']);
  assert.equal(await exited, 0);
});

test('an aborted request rejects with the signal\'s reason', async () => {
  const { client, stop } = spawnServe({ DOCKER_HOST: NO_DOCKER });
  const aborted = AbortSignal.abort(new Error('gave up'));
  await assert.rejects(client.start(tempDir('pilot-ui-project-'), { signal: aborted }), /gave up/);
  assert.equal((await client.dockerStatus()).available, false, 'the connection goes on');
  assert.equal(await stop(), 0);
});
