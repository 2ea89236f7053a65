// rpc.discover against the OpenRPC specification's own meta-schema, the
// client's typed methods against the document, and real answers against
// the document's schemas.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { Client } from '../client/node.js';
import { spawnServe, tempDir, resultChecker, NO_DOCKER } from './helpers.js';

const require = createRequire(import.meta.url);

/** Every protocol method, and the Client method that calls it. */
const wrappers = {
  initialize: 'initialize',
  shutdown: 'shutdown',
  exit: 'exit',
  'docker/status': 'dockerStatus',
  'sandbox/start': 'start',
  'sandbox/approve': 'approve',
  'sandbox/stop': 'stop',
  'sandbox/pause': 'pause',
  'sandbox/close': 'closeSandbox',
  'sandbox/remove': 'remove',
  'sandbox/status': 'status',
  'sandbox/list': 'list',
  'sandbox/exec': 'exec',
  'sandbox/screenshot': 'screenshot',
  'sandbox/browser': 'browser',
  'sandbox/processes': 'processes',
  'sandbox/kill': 'kill',
  'sandbox/ports/expose': 'exposePort',
  'sandbox/ports/forward': 'forwardPort',
  'sandbox/ports/list': 'listPorts',
  'sandbox/ports/close': 'closePort',
  'sandbox/files/write': 'writeFile',
  'sandbox/files/read': 'readFile',
  'sandbox/files/list': 'listFiles',
  'sandbox/files/stat': 'statFile',
  'sandbox/files/mkdir': 'mkdir',
  'sandbox/files/remove': 'removeFile',
  'sandbox/files/upload': 'upload',
  'sandbox/files/download': 'download',
  'sandbox/permission/answer': 'answerPermission',
  'sandbox/permission/list': 'listPermissions',
  'sandbox/permission/forget': 'forgetPermission',
  'sandbox/network/policy': 'networkPolicy',
  'sandbox/network/log': 'networkLog',
  'sandbox/workspace/sync': 'syncWorkspace',
  'sandbox/tasks/start': 'startTask',
  'sandbox/tasks/list': 'listTasks',
  'sandbox/tasks/get': 'getTask',
  'sandbox/tasks/cancel': 'cancelTask',
  'sandbox/tasks/diff': 'diffTask',
  'sandbox/tasks/apply': 'applyTask',
  'sandbox/tasks/discard': 'discardTask',
  'sandbox/recording/start': 'startRecording',
  'sandbox/recording/stop': 'stopRecording',
  'sandbox/recording/list': 'listRecordings',
  'sandbox/setToolsEnabled': 'setToolsEnabled',
  'sandbox/getToolsEnabled': 'getToolsEnabled',
  'project/close': 'closeProject',
  'tools/list': 'listTools',
  'tools/call': 'callTool',
  'sandbox/activity': 'activity',
  'sandbox/activity/export': 'exportActivity',
  'sandbox/control/get': 'controlState',
  'sandbox/control/take': 'takeControl',
  'sandbox/control/release': 'releaseControl',
  'rpc.discover': 'discover',
  '$/cancelRequest': 'request', // sent by request() when its signal aborts
};

test('rpc.discover is a valid OpenRPC document', async () => {
  const { client, stop } = spawnServe({ DOCKER_HOST: NO_DOCKER });
  const doc = await client.discover();
  const { default: Ajv } = await import('ajv');
  // The OpenRPC meta-schema refers to the JSON Schema meta-schema of
  // json-schema.tools for every schema in the document; both declare
  // themselves by $id, and Ajv is given both (the JSON Schema one under the
  // two spellings of its address the references use).
  const { $schema, ...metaSchema } = require('@open-rpc/meta-schema').default;
  const { $schema: _, ...jsonSchemaMeta } = require('@json-schema-tools/meta-schema').default;
  const ajv = new Ajv.default({ strict: false, allErrors: true });
  ajv.addSchema(jsonSchemaMeta);
  ajv.addSchema({ ...jsonSchemaMeta, $id: 'https://meta.json-schema.tools' });
  const validate = ajv.compile(metaSchema);
  assert.ok(validate(doc), ajv.errorsText(validate.errors));
  assert.ok(!validate({ ...doc, methods: [{ params: [] }] }), 'the meta-schema refuses a method without a name');
  assert.equal(doc.openrpc, '1.3.2');
  assert.deepEqual(
    Object.keys(doc.components.errors).map((k) => doc.components.errors[k].code).sort(),
    [-32800, -32700, -32603, -32602, -32601, -32600, -32016, -32015, -32013, -32012, -32011, -32010, -32009, -32008, -32007, -32006, -32005, -32004, -32003, -32002, -32001].sort(),
  );
  assert.deepEqual(doc['x-notifications'].map((/** @type {any} */ n) => n.name), ['sandbox/event', 'sandbox/progress', 'sandbox/output', 'sandbox/permission', 'sandbox/permission/resolved', 'sandbox/network', 'sandbox/activity', 'sandbox/control', 'sandbox/task', 'sandbox/warning']);
  assert.equal(await stop(), 0);
});

test('the client has a typed method for every method of the protocol', async () => {
  const { client, stop } = spawnServe({ DOCKER_HOST: NO_DOCKER });
  const doc = await client.discover();
  assert.deepEqual(doc.methods.map((/** @type {any} */ m) => m.name).sort(), Object.keys(wrappers).sort());
  for (const name of Object.values(wrappers)) {
    assert.equal(typeof (/** @type {any} */ (Client.prototype))[name], 'function', name);
  }
  assert.equal(await stop(), 0);
});

test('answers match the schemas rpc.discover gives for them', async () => {
  const { client, stop } = spawnServe({ DOCKER_HOST: NO_DOCKER });
  const check = await resultChecker(await client.discover());
  const project = tempDir('pilot-ui-project-');
  check('initialize', await client.initialize({ name: 'ui-test', version: '1' }));
  check('docker/status', await client.dockerStatus());
  check('sandbox/setToolsEnabled', await client.setToolsEnabled(project, true));
  check('sandbox/getToolsEnabled', await client.getToolsEnabled(project));
  check('tools/list', await client.listTools(project));
  check('sandbox/permission/list', await client.listPermissions(project));
  check('sandbox/network/policy', await client.networkPolicy(project));
  check('sandbox/network/log', await client.networkLog(project, { limit: 5 }));
  check('sandbox/tasks/list', await client.listTasks(project));
  check('sandbox/recording/list', await client.listRecordings(project));
  check('sandbox/activity', await client.activity(project, { limit: 5 }));
  check('sandbox/activity/export', await client.exportActivity(project));
  check('sandbox/control/get', await client.controlState(project));
  check('sandbox/control/take', await client.takeControl(project));
  check('sandbox/control/release', await client.releaseControl(project));
  assert.throws(() => check('docker/status', { available: 'yes' }), /does not match/);
  check('shutdown', await client.request('shutdown'));
  client.exit();
  await stop();
});
