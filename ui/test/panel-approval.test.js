// The panel when a project's own files ask for what only the user may
// allow (here limits above the caps), on a real engine in a real browser:
// the request shows with its summary and Approve / Cancel; Cancel records
// nothing, Approve records it in the user's state and starts the sandbox.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir, tempProject, skipWithoutDocker } from './helpers.js';
import { launchBrowser, newPage, skipWithoutBrowser } from './browser.js';
import { panelSetup } from './panel-helpers.js';

const skipBrowser = skipWithoutBrowser();
const skip = skipBrowser || (await skipWithoutDocker());
const browser = skipBrowser ? null : await launchBrowser();

/**
 * Every approval file under the state directory, read.
 *
 * @param {string} state
 * @returns {string[]}
 */
function approvalFiles(state) {
  /** @type {string[]} */
  const found = [];
  const walk = (/** @type {string} */ dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (dir.endsWith('approvals') && e.name.endsWith('.json')) found.push(readFileSync(path, 'utf8'));
    }
  };
  walk(state);
  return found;
}

test('the panel asks for approval of what the project asks, with Approve and Cancel', { skip, timeout: 300_000 }, async () => {
  const dir = tempProject('pilot-ui-approval-');
  const project = dir.path;
  mkdirSync(join(project, '.pilot'));
  writeFileSync(join(project, '.pilot', 'settings.json'), '{"sandbox": {"memory": "5g", "processes": 5000}}\n');
  const state = tempDir('pilot-ui-approval-state-');
  const { page, screenshot, assertNoErrors, logFile } = await newPage(/** @type {any} */ (browser), 'panel-approval');
  const { client, open } = await panelSetup(page, dir, logFile, { XDG_STATE_HOME: state });
  const panel = await open('Stopped');

  // Start: the request shows, in plain words, with its two answers.
  await page.getByRole('button', { name: 'Start Sandbox' }).click();
  await panel.expectBadge('Needs approval');
  await panel.expectVisible(page.getByRole('heading', { name: 'This project asks for your approval' }));
  await panel.expectVisible(page.getByText('run its sandbox with memory 5g (your cap 4GiB), processes 5000 (your cap 4096)', { exact: true }));
  await panel.expectVisible(page.getByText(/memory +5g +your cap: 4GiB\s+processes +5000 +your cap: 4096/));
  await screenshot('1-asks');
  await page.emulateMedia({ colorScheme: 'dark' });
  await screenshot('1-asks-dark');
  await page.emulateMedia({ colorScheme: 'light' });

  // Cancel: back to stopped, nothing recorded, nothing started.
  await page.getByRole('button', { name: 'Cancel' }).click();
  await panel.expectBadge('Stopped');
  assert.deepEqual(approvalFiles(state), [], 'Cancel recorded an approval');
  assert.equal(await client.status(project), null, 'a sandbox was made without approval');

  // Approve: recorded in the user's state, and the sandbox starts.
  await page.getByRole('button', { name: 'Start Sandbox' }).click();
  await panel.expectBadge('Needs approval');
  await page.getByRole('button', { name: 'Approve' }).click();
  await panel.expectBadge('Running', 120_000);
  await screenshot('2-running');
  const files = approvalFiles(state);
  assert.equal(files.length, 1, 'one approval file');
  assert.match(files[0], /"kind": "limits"/);
  assert.ok(files[0].includes(project), 'the approval names the project');
  for (const name of readdirSync(join(project, '.pilot'))) {
    assert.ok(!readFileSync(join(project, '.pilot', name), 'utf8').includes('approvedAt'), `${name} in the project holds an approval`);
  }
  const st = await client.status(project);
  assert.equal(st?.status, 'running');
  assertNoErrors();
});

// What is approved shows before the question, all of it (docs/protocol.md,
// "Approvals show what they approve"): a Dockerfile's text, the files it
// takes, what in it reaches beyond the project; as text, whatever the
// repository put in it. Cancel: nothing built, nothing recorded.
test('the panel shows the Dockerfile it asks to approve, its files and warnings', { skip, timeout: 120_000 }, async () => {
  const dir = tempProject('pilot-ui-approval-df-');
  const project = dir.path;
  mkdirSync(join(project, '.pilot'));
  writeFileSync(join(project, '.pilot', 'settings.json'), '{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}}}\n');
  writeFileSync(join(project, '.pilot', 'Dockerfile'), 'ARG PILOT_BASE\nFROM ${PILOT_BASE}\nCOPY tool.sh /usr/local/bin/\nARG API=http://localhost:3000\n');
  writeFileSync(join(project, '.pilot', 'tool.sh'), 'echo "<b>not bold</b>"\n');
  const state = tempDir('pilot-ui-approval-df-state-');
  const { page, screenshot, assertNoErrors, logFile } = await newPage(/** @type {any} */ (browser), 'panel-approval-dockerfile');
  const { open } = await panelSetup(page, dir, logFile, { XDG_STATE_HOME: state });
  const panel = await open('Stopped');
  await page.getByRole('button', { name: 'Start Sandbox' }).click();
  await panel.expectBadge('Needs approval');
  await panel.expectVisible(page.getByText('What it asks'));
  assert.equal(await page.locator('.approval-content pre').textContent(),
    'ARG PILOT_BASE\nFROM ${PILOT_BASE}\nCOPY tool.sh /usr/local/bin/\nARG API=http://localhost:3000\n');
  await panel.expectVisible(page.getByText('File .pilot/tool.sh (23 bytes)'));
  await panel.expectVisible(page.getByText('echo "<b>not bold</b>"'));
  await panel.expectVisible(page.getByText('What reaches beyond the project'));
  await panel.expectVisible(page.getByText('line 4: ARG names localhost, an address of this machine or its network'));
  await screenshot('dockerfile-asks');
  await page.getByRole('button', { name: 'Cancel' }).click();
  await panel.expectBadge('Stopped');
  assert.deepEqual(approvalFiles(state), [], 'Cancel recorded an approval');
  assertNoErrors();
});
