// The panel's Tasks section as a person uses it, in a real browser on a
// real engine: start a command task on a git project, read its transcript
// (its lines, not JSON), its status and duration, its change file by file
// and a file's patch; Apply refused over a host edit (the file named,
// nothing written), then written; a long task cancelled; a change
// discarded.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempProject, skipWithoutDocker } from './helpers.js';
import { launchBrowser, newPage, skipWithoutBrowser } from './browser.js';
import { panelSetup } from './panel-helpers.js';

const skipBrowser = skipWithoutBrowser();
const skip = skipBrowser || (await skipWithoutDocker());
const browser = skipBrowser ? null : await launchBrowser();

/**
 * Types a command task into the form (one argument a line) and starts it.
 *
 * @param {import('playwright-core').Page} page
 * @param {string[]} argv
 */
async function startCommand(page, argv) {
  await page.getByRole('combobox', { name: 'Agent' }).selectOption('command');
  await page.getByRole('textbox', { name: 'Command, one argument a line' }).fill(argv.join('\n'));
  await page.getByRole('button', { name: 'Start task' }).click();
}

test("the panel's tasks: start a command, its transcript, diff, apply over a conflict, cancel, discard", { skip, timeout: 300_000 }, async () => {
  const dir = tempProject('pilot-ui-tasks-');
  const project = dir.path;
  writeFileSync(join(project, 'main.py'), "print('hi')\n");
  for (const args of [['init', '-q'], ['add', '-A'], ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', '1']]) {
    execFileSync('git', args, { cwd: project });
  }
  const { page, screenshot, assertNoErrors, logFile } = await newPage(/** @type {any} */ (browser), 'panel-tasks');
  const { client, start, open } = await panelSetup(page, dir, logFile);
  await start();
  const panel = await open();
  await page.getByText('Tasks', { exact: true }).click();

  // A command that prints, edits a file and adds one; its output is text
  // (markup in it stays text).
  await startCommand(page, ['sh', '-c', `echo working; echo '<b>not bold</b>'; echo "print('bye')" >> main.py; echo new > added.txt`]);
  const transcript = page.getByRole('list', { name: 'Transcript' });
  await panel.expectVisible(transcript.getByText('working', { exact: true }));
  await panel.expectVisible(transcript.getByText('<b>not bold</b>', { exact: true }));
  assert.equal(await transcript.locator('b').count(), 0, 'output became markup');
  const status = page.getByRole('status', { name: 'Task status' });
  await status.filter({ hasText: /^Succeeded, [\d.]+ m?s · exit code 0$/ }).waitFor({ timeout: 60_000 });

  // Its change, file by file; a file's patch on click.
  await panel.expectVisible(page.getByRole('button', { name: 'Show the change of main.py' }));
  await panel.expectVisible(page.getByText('modified, +1 −0'));
  await panel.expectVisible(page.getByText('added, +1 −0'));
  await page.getByRole('button', { name: 'Show the change of main.py' }).click();
  const patch = page.getByLabel('The change of main.py', { exact: true });
  await panel.expectVisible(patch);
  assert.match(/** @type {string} */ (await patch.textContent()), /^diff --git a\/main\.py b\/main\.py\n[\s\S]*\+print\('bye'\)\n$/);
  assert.doesNotMatch(/** @type {string} */ (await patch.textContent()), /added\.txt/);
  await screenshot('1-finished-with-diff');

  // Apply over a host edit: refused, naming the file, nothing written.
  writeFileSync(join(project, 'main.py'), "print('the user')\n");
  await page.getByRole('button', { name: 'Apply' }).click();
  await panel.expectVisible(page.getByText('Not applied: these files changed in the project since the task started: main.py. Nothing was written.'));
  assert.equal(existsSync(join(project, 'added.txt')), false, 'a refused apply wrote added.txt');
  await screenshot('2-conflict');

  // Undone on the host: Apply writes the change.
  writeFileSync(join(project, 'main.py'), "print('hi')\n");
  await page.getByRole('button', { name: 'Apply' }).click();
  await panel.expectVisible(page.getByText(/^Applied to the project: /));
  assert.equal(readFileSync(join(project, 'main.py'), 'utf8'), "print('hi')\nprint('bye')\n");
  assert.equal(readFileSync(join(project, 'added.txt'), 'utf8'), 'new\n');

  // A long task: running with a ticking duration, then cancelled.
  await startCommand(page, ['sh', '-c', 'echo started; echo more >> main.py; exec sleep 300']);
  await panel.expectVisible(transcript.getByText('started', { exact: true }));
  await status.filter({ hasText: /^Running, / }).waitFor();
  const first = await status.textContent();
  await status.filter({ hasNotText: /** @type {string} */ (first) }).waitFor({ timeout: 5_000 });
  await screenshot('3-running');
  await page.getByRole('button', { name: 'Cancel' }).click();
  await status.filter({ hasText: /^Cancelled, / }).waitFor({ timeout: 30_000 });
  const { tasks } = await client.listTasks(project);
  assert.equal(tasks[0].status, 'cancelled');

  // Its change (main.py again) discarded: the sandbox's copy is back.
  await panel.expectVisible(page.getByRole('button', { name: 'Show the change of main.py' }));
  await page.getByRole('button', { name: 'Discard' }).click();
  await panel.expectVisible(page.getByText(/^Discarded: /));
  const { stdout } = await client.exec(project, 'cd /workspace && git status --porcelain');
  assert.equal(stdout, '', 'the workspace still holds the discarded change');
  assert.equal(readFileSync(join(project, 'main.py'), 'utf8'), "print('hi')\nprint('bye')\n", 'discard touched the project');
  await screenshot('4-discarded');
  assertNoErrors();
});
