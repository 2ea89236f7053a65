// The sandbox panel without Docker, in a real browser: it says what is
// wrong and what to install or start, and notices when Docker is back or
// goes away, without a reload.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectWebSocket } from '../client/websocket.js';
import { startUI, tempDir, skipWithoutDocker, NO_DOCKER } from './helpers.js';
import { launchBrowser, newPage, skipWithoutBrowser } from './browser.js';
import { openPanel } from './panel-helpers.js';
import { dockerProxy } from './docker-proxy.js';

const skipBrowser = skipWithoutBrowser();
const browser = skipBrowser ? null : await launchBrowser();

test('with no Docker engine, the panel says what to install or start; without its server, that it is not connected', { skip: skipBrowser, timeout: 120_000 }, async () => {
  const { page, screenshot, assertNoErrors, logFile } = await newPage(/** @type {any} */ (browser), 'panel-no-docker');
  const project = tempDir('pilot-ui-nodocker-');
  const { address, rpcUrl, child } = await startUI(project, { DOCKER_HOST: NO_DOCKER }, logFile);
  const client = await connectWebSocket(rpcUrl);
  const { error } = await client.dockerStatus();
  client.close();
  assert.ok(error, 'docker/status gives no error without Docker');

  const panel = await openPanel(page, address);
  await panel.expectBadge('No Docker');
  await panel.expectVisible(page.getByRole('heading', { name: 'Docker is not available' }));
  await panel.expectVisible(page.getByText(/** @type {string} */ (error), { exact: true }));
  await panel.expectVisible(page.getByText('Install Docker Desktop (macOS, Windows) or Docker Engine (Linux), or start it'));
  await panel.expectVisible(page.getByRole('button', { name: 'Check again' }));
  assert.equal(await page.getByRole('button', { name: 'Start', exact: true }).getAttribute('aria-disabled'), 'true');
  await screenshot('docker-missing');
  await page.emulateMedia({ colorScheme: 'dark' });
  await screenshot('docker-missing-dark');
  await page.emulateMedia({ colorScheme: 'light' });

  // The server goes away: the panel says it is not connected any more.
  child.kill('SIGTERM');
  await panel.expectBadge('Disconnected');
  await panel.expectVisible(page.getByRole('heading', { name: 'Not connected to pilot-sandbox' }));
  assert.equal(await page.getByRole('switch', { name: 'Agent tools' }).getAttribute('aria-disabled'), 'true');
  await screenshot('server-gone');
  assertNoErrors();
});

test('the panel notices Docker coming back and going away, without a reload', { skip: skipBrowser || (await skipWithoutDocker()), timeout: 180_000 }, async () => {
  const { page, screenshot, assertNoErrors, logFile } = await newPage(/** @type {any} */ (browser), 'panel-docker-outage');
  const proxy = dockerProxy(); // down at first
  const project = tempDir('pilot-ui-outage-');
  const { address } = await startUI(project, { DOCKER_HOST: proxy.dockerHost }, logFile);
  const panel = await openPanel(page, address);
  await panel.expectBadge('No Docker');

  // Docker starts: the panel asks again by itself (every 5 s).
  await proxy.restore();
  await panel.expectBadge('Stopped', 30_000);
  await panel.expectVisible(page.getByRole('button', { name: 'Start Sandbox' }));

  // Docker goes away: the next action finds out, and says so. (By
  // keyboard: the focus moves on to what the new state offers.)
  await proxy.cut();
  await page.getByRole('button', { name: 'Start Sandbox' }).focus();
  await page.keyboard.press('Enter');
  await panel.expectBadge('No Docker', 30_000);
  await panel.expectVisible(page.getByRole('heading', { name: 'Docker is not available' }));
  await panel.expectFocused(page.getByRole('button', { name: 'Check again' }));
  await screenshot('docker-gone');

  // And back again, by the button.
  await proxy.restore();
  await page.keyboard.press('Enter');
  await panel.expectBadge('Stopped', 30_000);
  await panel.expectFocused(page.getByRole('button', { name: 'Start Sandbox' }));
  assertNoErrors();
});
