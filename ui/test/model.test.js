// The panel's decisions (panel/model.js), without a browser: which phase it
// shows, what the badge says, which controls work, what the frame loads.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initialModel, phase, badge, controls, progressOf, viewerSource, messageOf } from '../panel/model.js';

/** @typedef {import('../panel/model.js').Model} Model */
/** @typedef {import('../client/types.js').SandboxState} SandboxState */

const docker = { available: true, endpoint: 'unix:///var/run/docker.sock' };

/**
 * @param {Partial<SandboxState>} [fields]
 * @returns {SandboxState}
 */
function sandbox(fields = {}) {
  return {
    projectPath: '/p', containerId: 'c', containerName: 'n', image: 'i', status: 'running',
    wsPort: 6080, vncPort: 5900, display: { width: 1280, height: 800 }, createdAt: 1,
    viewerUrl: 'http://127.0.0.1:6080/pilot/viewer.html#password=CTRL',
    watchUrl: 'http://127.0.0.1:6080/pilot/viewer.html#view_only=true&password=VIEW',
    ...fields,
  };
}

/**
 * A connected, loaded model with changes.
 *
 * @param {Partial<Model>} patch
 * @returns {Model}
 */
const model = (patch) => ({ ...initialModel(), connection: 'connected', docker, loaded: true, toolsEnabled: false, ...patch });

/** @type {import('../client/types.js').Approval} */
const ask = { kind: 'limits', summary: 'run its sandbox with memory 8g (your cap 4GiB)', digest: 'sha256:0' };

test('phases and badges', () => {
  for (const [name, m, wantPhase, wantLabel] of /** @type {[string, Model, string, string][]} */ ([
    ['before the connection', initialModel(), 'connecting', 'Connecting…'],
    ['connected, Docker not known yet', { ...initialModel(), connection: 'connected' }, 'connecting', 'Connecting…'],
    ['the connection lost', model({ connection: 'lost' }), 'lost', 'Disconnected'],
    ['no Docker', model({ docker: { ...docker, available: false } }), 'docker', 'No Docker'],
    ['no sandbox yet', model({ sandbox: null }), 'stopped', 'Stopped'],
    ['stopped', model({ sandbox: sandbox({ status: 'stopped' }) }), 'stopped', 'Stopped'],
    ['a start of the panel, before any event', model({ action: 'start' }), 'starting', 'Starting…'],
    ['starting, by an event', model({ sandbox: sandbox({ status: 'starting' }) }), 'starting', 'Starting…'],
    ['running', model({ sandbox: sandbox() }), 'running', 'Running'],
    ['running while the start call is answered', model({ action: 'start', sandbox: sandbox() }), 'running', 'Running'],
    ['a stop of the panel', model({ action: 'stop', sandbox: sandbox() }), 'stopping', 'Stopping…'],
    ['the sandbox in error', model({ sandbox: sandbox({ status: 'error', error: 'it broke' }) }), 'error', 'Error'],
    ['a failed start', model({ sandbox: sandbox({ status: 'stopped' }), failure: { message: 'no' } }), 'error', 'Error'],
    ['a start that needs approval', model({ approval: ask }), 'approval', 'Needs approval'],
    ['the approved start', model({ approval: null, action: 'start' }), 'starting', 'Starting…'],
    ['paused', model({ sandbox: sandbox({ status: 'paused' }) }), 'paused', 'Paused'],
    ['a resume of the panel', model({ action: 'start', sandbox: sandbox({ status: 'paused' }) }), 'starting', 'Starting…'],
    ['a stop of a paused sandbox', model({ action: 'stop', sandbox: sandbox({ status: 'paused' }) }), 'stopping', 'Stopping…'],
    ['an approval left while it runs', model({ approval: ask, sandbox: sandbox() }), 'running', 'Running'],
  ])) {
    assert.equal(phase(m), wantPhase, name);
    assert.equal(badge(m).label, wantLabel, name);
  }
});

test('the error badge carries its message', () => {
  assert.equal(badge(model({ sandbox: sandbox({ status: 'error', error: 'the sandbox ran out of memory' }) })).detail, 'the sandbox ran out of memory');
  assert.equal(badge(model({ failure: { message: 'image build failed' }, sandbox: sandbox({ status: 'error', error: 'x' }) })).detail, 'image build failed');
  assert.equal(badge(model({ sandbox: sandbox() })).detail, '');
});

test('a sandbox the policy stopped says why', () => {
  const why = 'stopped after 30m without activity';
  assert.equal(badge(model({ sandbox: sandbox({ status: 'stopped', stopReason: why }) })).detail, why);
  assert.equal(badge(model({ sandbox: sandbox({ status: 'stopped' }) })).detail, '');
});

test('a paused sandbox says what it keeps and holds', () => {
  assert.equal(badge(model({ sandbox: sandbox({ status: 'paused', memoryBytes: 100 << 20 }) })).detail,
    'Every window is kept: Start resumes it as it was; it holds 100 MiB of memory');
  assert.deepEqual(controls(model({ sandbox: sandbox({ status: 'paused' }) })), { start: true, stop: true, tools: true, mode: false });
});

test('controls work only when they can', () => {
  assert.deepEqual(controls(model({ sandbox: null })), { start: true, stop: false, tools: true, mode: false });
  assert.deepEqual(controls(model({ sandbox: sandbox() })), { start: false, stop: true, tools: true, mode: true });
  assert.deepEqual(controls(model({ action: 'start' })), { start: false, stop: false, tools: true, mode: false });
  assert.deepEqual(controls(model({ sandbox: sandbox(), toolsPending: true })).tools, false);
  assert.deepEqual(controls(model({ toolsEnabled: null })).tools, false);
  assert.deepEqual(controls(model({ connection: 'lost', sandbox: sandbox() })), { start: false, stop: false, tools: false, mode: false });
  assert.deepEqual(controls(model({ docker: { ...docker, available: false } })).start, false);
});

test('progress of a start', () => {
  assert.deepEqual(progressOf(model({})), { text: 'Starting the sandbox…', value: null, building: false });
  const building = progressOf(model({ progress: { projectPath: '/p', stage: 'image', message: 'Step 3/12', current: 3, total: 12 } }));
  assert.deepEqual(building, { text: 'Step 3/12', value: 0.25, building: true });
  assert.equal(progressOf(model({ progress: { projectPath: '/p', stage: 'start', message: 'Starting the desktop' } })).value, null);
  assert.equal(progressOf(model({ progress: { projectPath: '/p', stage: 'image', message: 'x', current: 5, total: 0 } })).value, null);
});

test('the frame loads the watch address, or the control one, without reconnecting by itself', () => {
  assert.equal(viewerSource(model({ sandbox: sandbox() })), 'http://127.0.0.1:6080/pilot/viewer.html#view_only=true&password=VIEW&reconnect=false');
  assert.equal(viewerSource(model({ sandbox: sandbox(), mode: 'control' })), 'http://127.0.0.1:6080/pilot/viewer.html#password=CTRL&reconnect=false');
  assert.equal(viewerSource(model({ sandbox: sandbox({ status: 'stopped' }) })), '');
  assert.equal(viewerSource(model({ sandbox: sandbox(), action: 'stop' })), '', 'a stop takes the frame away at once');
  assert.equal(viewerSource(model({ sandbox: sandbox({ watchUrl: '' }) })), '');
});

test('sidecar messages without the method name', () => {
  assert.equal(messageOf(new Error('sandbox/start: the image build failed')), 'the image build failed');
  assert.equal(messageOf(new Error('plain words: with a colon')), 'plain words: with a colon');
  assert.equal(messageOf('text'), 'text');
});
