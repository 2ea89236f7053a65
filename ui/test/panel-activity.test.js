// The panel's control of the desktop and its timeline as a person uses
// them, in a real browser on a real engine: an agent's click shows on the
// timeline with its thumbnails (one opened large), "Take over" makes the
// agent's click an error result, "Give back" ends it, and an agent's
// handOver shows its reason as a card whose "Take over" and then "Give
// back" end the agent's wait.

import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { tempProject, skipWithoutDocker } from './helpers.js';
import { launchBrowser, newPage, skipWithoutBrowser } from './browser.js';
import { openPanel, panelSetup } from './panel-helpers.js';

const skipBrowser = skipWithoutBrowser();
const skip = skipBrowser || (await skipWithoutDocker());
const browser = skipBrowser ? null : await launchBrowser();

/** @param {{content: {type: string, text?: string}[]}} res */
const textOf = (res) => res.content.map((c) => c.text ?? '').join(' ');

test("the panel's timeline and control: thumbnails, Take over, Give back, a handOver's card", { skip, timeout: 300_000 }, async () => {
  const dir = tempProject('pilot-ui-activity-');
  const project = dir.path;
  const { page, assertNoErrors, logFile } = await newPage(/** @type {any} */ (browser), 'panel-activity');
  const { address, client, start, open } = await panelSetup(page, dir, logFile);
  await client.setToolsEnabled(project, true);
  await start();
  const panel = await open();

  // An agent's click, live on the timeline, its thumbnails opened large.
  await page.getByText('Activity', { exact: true }).click();
  const clicked = await client.callTool(project, 'sandbox_click', { x: 20, y: 20 });
  assert.equal(clicked.isError, false, textOf(clicked));
  const before = page.getByRole('img', { name: 'The screen before sandbox_click' });
  await panel.expectVisible(before);
  await before.click();
  await panel.expectVisible(page.getByRole('dialog').getByRole('img', { name: 'The screen before sandbox_click' }));
  await page.getByRole('button', { name: 'Close', exact: true }).click();

  // Export: the session as a new folder, its click with both pictures.
  await page.getByRole('button', { name: 'Export session' }).click();
  const exported = page.getByRole('status').filter({ hasText: / actions and \d+ recordings in / });
  await panel.expectVisible(exported);
  const dirOf = /** @type {string} */ ((await exported.textContent())?.split(' recordings in ')[1]);
  const actions = readFileSync(join(dirOf, 'actions.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const click = actions.find((a) => a.name === 'sandbox_click');
  assert.ok(click?.beforeFile && click?.afterFile, `the click in the export: ${JSON.stringify(click)}`);
  assert.deepEqual([...readFileSync(join(dirOf, click.afterFile)).subarray(0, 2)], [0xff, 0xd8], 'a JPEG');

  // Take over: the agent's click is refused as a result; Give back ends it.
  await page.getByRole('button', { name: 'Take over', exact: true }).click();
  await panel.expectVisible(page.getByText('You have control: the agent waits.'));
  const refused = await client.callTool(project, 'sandbox_click', { x: 20, y: 20 });
  assert.equal(refused.isError, true);
  assert.match(textOf(refused), /The user has control/);
  await page.getByRole('button', { name: 'Give back', exact: true }).click();
  await panel.expectVisible(page.getByText('The agent has control.'));
  assert.equal((await client.callTool(project, 'sandbox_click', { x: 20, y: 20 })).isError, false);

  // The agent asks for a human: the card shows why; taking over from it
  // and giving back ends the agent's wait.
  const waiting = client.callTool(project, 'sandbox_wait', { handOver: 'Log in to the test site', timeoutMs: 30000 });
  await panel.expectVisible(page.getByText('Log in to the test site'));
  await page.getByRole('alert').getByRole('button', { name: 'Take over' }).click();
  await panel.expectVisible(page.getByRole('button', { name: 'Give back', exact: true }));
  await page.getByRole('button', { name: 'Give back', exact: true }).click();
  const answered = await waiting;
  assert.match(textOf(answered), /gave control back/);
  await panel.expectVisible(page.getByText('The agent has control.'));

  // A panel opened after the agent asked still shows the ask
  // (sandbox/control/get), and giving back ends that wait too.
  const asked = client.callTool(project, 'sandbox_wait', { handOver: 'Solve the captcha', timeoutMs: 30000 });
  await panel.expectVisible(page.getByText('Solve the captcha'));
  const reopened = await openPanel(page, address);
  await reopened.expectBadge('Running', 60_000);
  await reopened.expectVisible(page.getByText('Solve the captcha'));
  await page.getByRole('alert').getByRole('button', { name: 'Take over' }).click();
  await page.getByRole('button', { name: 'Give back', exact: true }).click();
  assert.match(textOf(await asked), /gave control back/);
  assertNoErrors();
});
