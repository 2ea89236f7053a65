// The panel's Open menu as a person uses it, in a real browser on a real
// engine (the browser image): Open → Terminal puts an xterm on the
// sandbox's desktop, Open → Browser a Chromium window (the desktop's own
// menu runs nothing since the desktop runs as its own user).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempProject, skipWithoutDocker } from './helpers.js';
import { launchBrowser, newPage, skipWithoutBrowser } from './browser.js';
import { panelSetup } from './panel-helpers.js';

const skipBrowser = skipWithoutBrowser();
const skip = skipBrowser || (await skipWithoutDocker());
const browser = skipBrowser ? null : await launchBrowser();

/**
 * Waits (up to 30 s) until a visible window of class shows on the
 * sandbox's desktop.
 *
 * @param {import('../client/pilot-sandbox.js').Client} client
 * @param {string} project
 * @param {string} windowClass
 */
async function expectWindow(client, project, windowClass) {
  const search = `for i in $(seq 60); do xdotool search --onlyvisible --class ${windowClass} && exit 0; sleep 0.5; done; exit 1`;
  const { exitCode, stdout } = await client.exec(project, search, { timeoutMs: 60_000 });
  assert.equal(exitCode, 0, `no ${windowClass} window on the desktop after 30 s`);
  return stdout.trim();
}

test('the panel opens a terminal and the browser on the sandbox desktop', { skip, timeout: 300_000 }, async () => {
  const dir = tempProject('pilot-ui-open-');
  const project = dir.path;
  mkdirSync(join(project, '.pilot'));
  writeFileSync(join(project, '.pilot', 'settings.json'), JSON.stringify({ sandbox: { image: 'browser' } }));
  const { page, screenshot, assertNoErrors, logFile } = await newPage(/** @type {any} */ (browser), 'panel-open');
  const { client, start, open } = await panelSetup(page, dir, logFile);
  await start();
  const panel = await open();
  for (const windowClass of ['xterm', 'chromium']) {
    const none = await client.exec(project, `xdotool search --onlyvisible --class ${windowClass}`);
    assert.notEqual(none.exitCode, 0, `a ${windowClass} window before the menu: ${none.stdout}`);
  }

  await page.getByText('Open', { exact: true }).click();
  await screenshot('1-menu');
  await page.getByRole('button', { name: 'Terminal', exact: true }).click();
  await expectWindow(client, project, 'xterm');
  // The menu closed as it opened the terminal.
  assert.equal(await page.getByRole('button', { name: 'Terminal', exact: true }).isVisible(), false);

  // Escape closes the menu without opening anything.
  await page.getByText('Open', { exact: true }).click();
  await panel.expectVisible(page.getByRole('button', { name: 'Browser', exact: true }));
  await page.keyboard.press('Escape');
  assert.equal(await page.getByRole('button', { name: 'Browser', exact: true }).isVisible(), false);

  await page.getByText('Open', { exact: true }).click();
  await page.getByRole('button', { name: 'Browser', exact: true }).click();
  await expectWindow(client, project, 'chromium');
  await screenshot('2-opened');
  assertNoErrors();
});
