// The sandbox panel as a person uses it: `pilot-sandbox ui` on a real
// engine, in a real browser (Chromium through playwright-core). Elements
// are found by role and visible text; any page or console error fails the
// test; screenshots of every state go to ui/test-output/panel*/.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempProject, skipWithoutDocker } from './helpers.js';
import { launchBrowser, newPage, skipWithoutBrowser, desktopChanges } from './browser.js';
import { panelSetup, pointer, moveOnDesktop, recordPanel, paintedViewer } from './panel-helpers.js';

const skipBrowser = skipWithoutBrowser();
const skip = skipBrowser || (await skipWithoutDocker());
const browser = skipBrowser ? null : await launchBrowser();

/**
 * A sandbox image tag of this test's own, so that the first start builds
 * it (from the layers the shared image left in Docker's cache) and the
 * panel shows the build's progress. Removed before and after.
 */
function testImage() {
  const tag = `${process.env.PILOT_IMAGE || 'pilot-sandbox:latest'}-panel-test`;
  const remove = () => { try { execFileSync('docker', ['image', 'rm', '--force', tag], { stdio: 'ignore' }); } catch { /* not there */ } };
  remove();
  after(remove);
  return tag;
}

test('the panel runs a sandbox: start, watch, take control, agent tools, stop, and a stop from outside', { skip, timeout: 600_000 }, async (t) => {
  const dir = tempProject('pilot-ui-panel-');
  const project = dir.path;
  const { page, screenshot, assertNoErrors, logFile, networkChanged } = await newPage(/** @type {any} */ (browser), 'panel');
  try {
    const { client, open } = await panelSetup(page, dir, logFile, { PILOT_IMAGE: testImage() });

    // Stopped, in light and dark.
    const panel = await open('Stopped');
    await panel.expectVisible(page.getByRole('heading', { name: 'No sandbox running' }));
    await panel.expectVisible(page.getByText('Docker required. The sandbox is a virtual desktop'));
    await screenshot('1-stopped');
    await page.emulateMedia({ colorScheme: 'dark' });
    await screenshot('1-stopped-dark');
    await page.emulateMedia({ colorScheme: 'light' });

    // The agent-tools switch writes the project's settings.
    const tools = page.getByRole('switch', { name: 'Agent tools' });
    await panel.expectChecked(tools, false);
    await tools.click();
    await panel.expectChecked(tools, true);
    const settings = JSON.parse(readFileSync(join(project, '.pilot', 'settings.json'), 'utf8'));
    assert.equal(settings.dockerToolsEnabled, true);

    // Start: the image is built first, with its progress on show.
    const seen = await recordPanel(page);
    const clicked = Date.now();
    await page.getByRole('button', { name: 'Start Sandbox', exact: true }).click();
    await panel.expectVisible(page.getByRole('heading', { name: 'Starting the sandbox…' }));
    await screenshot('2-starting');
    await panel.expectBadge('Running', 300_000);
    const { frame, size } = await paintedViewer(page, /watching/);
    assert.deepEqual(size, { width: 1280, height: 800 });
    t.diagnostic(`first start, image build included: ${Date.now() - clicked} ms from the click to a drawn desktop`);
    const { badges, progress } = await seen();
    assert.deepEqual(badges, ['Stopped', 'Starting…', 'Running'], `the badge showed ${badges.join(' → ')}`);
    assert.ok(progress.some((p) => /^Building the sandbox image/.test(p)), `progress: ${progress.join(' | ')}`);
    assert.ok(progress.some((p) => /^The desktop is ready/.test(p)) || progress.some((p) => /desktop/i.test(p)), `progress: ${progress.join(' | ')}`);
    // What happens on the desktop shows: a terminal opens where the
    // background (#2e3440) was.
    await client.exec(project, "nohup xterm -geometry 60x12+200+150 -e 'echo Hello from the sandbox; exec sleep 3600' >/dev/null 2>&1 &");
    await desktopChanges(frame, { x: 400, y: 250 }, [0x2e, 0x34, 0x40]);
    await screenshot('3-running-watching');
    await page.emulateMedia({ colorScheme: 'dark' });
    await screenshot('3-running-watching-dark');
    await page.emulateMedia({ colorScheme: 'light' });

    // Watching: the mouse over the desktop does not move its pointer.
    const before = await pointer(client, project);
    const target = { x: before.x > 200 ? 100 : 400, y: before.y > 200 ? 100 : 400 };
    await moveOnDesktop(page, frame, target);
    assert.deepEqual(await pointer(client, project), before, 'the pointer moved while watching');

    // Taking control: it does.
    await page.getByRole('radio', { name: 'Take control' }).check();
    const { frame: control } = await paintedViewer(page, /in control/);
    await moveOnDesktop(page, control, target);
    await panel.poll(async () => pointer(client, project), (p) => Math.abs(p.x - target.x) <= 2 && Math.abs(p.y - target.y) <= 2, 'the pointer follows the mouse in control');
    await screenshot('4-running-control');

    // The desktop takes every key once focused; Ctrl+Alt+Shift+Escape gives the keyboard back.
    await page.getByTitle(/^Sandbox desktop/).click();
    await page.keyboard.press('Control+Alt+Shift+Escape');
    await panel.expectFocused(page.getByRole('radio', { name: 'Take control' }));

    // The header by keyboard: Tab reaches every control, Space flips the switch.
    const order = await panel.tabOrder(6);
    for (const name of ['Start', 'Stop', 'Agent tools', 'Take control']) {
      assert.ok(order.includes(name), `Tab order ${order.join(', ')} lacks ${name}`);
    }
    await tools.focus();
    await page.keyboard.press('Space');
    await panel.expectChecked(tools, false);
    await page.keyboard.press('Space');
    await panel.expectChecked(tools, true);

    // Stop from the header.
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await panel.expectBadge('Stopped', 60_000);
    await screenshot('5-stopped-again');

    // Start from the header; then a stop from outside (docker stop) shows.
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await panel.expectBadge('Running', 120_000);
    await paintedViewer(page, /watching/);
    const state = await client.status(project);
    const stopping = Date.now();
    execFileSync('docker', ['stop', /** @type {any} */ (state).containerName], { stdio: 'ignore' });
    const stopped = Date.now();
    t.diagnostic(`docker stop took ${stopped - stopping} ms`);
    await panel.expectBadge('Stopped', 15_000);
    t.diagnostic(`the badge showed Stopped ${Date.now() - stopped} ms after docker stop returned`);
    await panel.expectVisible(page.getByRole('heading', { name: 'No sandbox running' }));
    await screenshot('6-stopped-outside');

    // Killed from outside: an error, with its message; Start tries again.
    await page.getByRole('button', { name: 'Start Sandbox', exact: true }).click();
    await panel.expectBadge('Running', 120_000);
    await paintedViewer(page, /watching/); // not while the viewer loads
    execFileSync('docker', ['kill', /** @type {any} */ (state).containerName], { stdio: 'ignore' });
    await panel.expectBadge('Error', 15_000);
    await panel.expectVisible(page.getByRole('alert').filter({ hasText: 'killed from outside' }));
    await screenshot('7-error');
    await page.getByRole('button', { name: 'Start Sandbox', exact: true }).click();
    await panel.expectBadge('Running', 120_000);
    await paintedViewer(page, /watching/);
    if (networkChanged.length) t.diagnostic(`requests Chromium cancelled for a network change: ${networkChanged.length}`);
    assertNoErrors();
  } catch (err) {
    // What the page showed when it failed, for the person reading the failure.
    await screenshot('failure').catch(() => {});
    throw err;
  }
});
