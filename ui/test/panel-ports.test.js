// The panel's Ports section as a person uses it, in a real browser on a
// real engine: forward a dev server of this computer into the sandbox,
// expose a server of the sandbox and open its preview from the link,
// remove both, and see a port the sandbox already uses refused.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { tempProject, skipWithoutDocker } from './helpers.js';
import { launchBrowser, newPage, skipWithoutBrowser } from './browser.js';
import { panelSetup } from './panel-helpers.js';

const skipBrowser = skipWithoutBrowser();
const skip = skipBrowser || (await skipWithoutDocker());
const browser = skipBrowser ? null : await launchBrowser();

/** @param {number} port */
const fetchInside = (port) => `python3 -c 'import urllib.request; print(urllib.request.urlopen("http://localhost:${port}/", timeout=10).read().decode(), end="")'`;

test("the panel's ports: forward a host port, expose a sandbox port and open its preview, remove both", { skip, timeout: 300_000 }, async () => {
  const dir = tempProject('pilot-ui-ports-');
  const project = dir.path;
  const { page, screenshot, assertNoErrors, logFile } = await newPage(/** @type {any} */ (browser), 'panel-ports');
  const { client, start, open } = await panelSetup(page, dir, logFile);
  // A dev server on this computer's loopback only.
  const server = createServer((_req, res) => res.end('hello from the host')).listen(0, '127.0.0.1');
  await once(server, 'listening');
  after(() => server.close());
  const hostPort = /** @type {import('node:net').AddressInfo} */ (server.address()).port;

  await start();
  await client.request('sandbox/exec', {
    projectPath: project, background: true,
    command: 'mkdir -p /tmp/site && echo "hello from the sandbox" >/tmp/site/index.html && : >/tmp/site/favicon.ico && cd /tmp/site && exec python3 -m http.server 8700 --bind 127.0.0.1',
  });
  const panel = await open();
  // The section opens beside the desktop, which keeps its size (it took
  // up to 45% of the height above the desktop before).
  const stage = page.locator('pilot-sandbox-panel .stage');
  const before = await stage.boundingBox();
  await page.getByText('Ports', { exact: true }).click();
  await panel.expectVisible(page.getByRole('button', { name: 'Forward', exact: true }));
  assert.deepEqual(await stage.boundingBox(), before, 'opening Ports moved or shrank the desktop');
  assert.equal(await page.locator('pilot-sandbox-panel aside.side details.ports').count(), 1);

  // Forward this computer's server into the sandbox.
  assert.notEqual((await client.exec(project, fetchInside(8600))).exitCode, 0, 'the sandbox reaches the host before the forward');
  await page.getByRole('spinbutton', { name: 'Port in the sandbox' }).fill('8600');
  await page.getByRole('spinbutton', { name: 'Port here' }).fill(String(hostPort));
  await page.getByRole('button', { name: 'Forward', exact: true }).click();
  await panel.expectVisible(page.getByText(`localhost:8600 in the sandbox → 127.0.0.1:${hostPort} here`));
  assert.equal((await client.exec(project, fetchInside(8600))).stdout, 'hello from the host');
  await panel.expectVisible(page.getByText('8600 forwarded from this computer'));

  // What listens in the sandbox, exposed from its row; the link opens it.
  // The sandbox's own listeners are not offered: the desktop's VNC and
  // noVNC, the egress proxy's (each listens in this sandbox now).
  const expose8700 = page.getByRole('button', { name: 'Expose port 8700' });
  await panel.expectVisible(expose8700);
  const listening = /** @type {string} */ (await page.locator('pilot-sandbox-panel .listening').textContent());
  for (const port of [5900, 6080, 15001, 15053, 15080]) {
    assert.doesNotMatch(listening, new RegExp(`\\b${port}\\b`), `internal port ${port} offered: ${listening}`);
  }
  const inside = await client.exec(project, 'cat /proc/net/tcp /proc/net/tcp6');
  for (const hex of ['170C', '17C0', '3A99', '3ACD', '3AE8']) assert.match(inside.stdout, new RegExp(`:${hex} `), `nothing listens on 0x${hex} in the sandbox: the check above proves nothing`);
  await expose8700.click({ timeout: 30_000 });
  const link = page.getByRole('link', { name: 'Open preview of port 8700' }).first();
  await panel.expectVisible(link);
  assert.match(/** @type {string} */ (await link.getAttribute('href')), /^http:\/\/127\.0\.0\.1:\d+\/$/);
  // Nor is the exposure's own relay, listening as the desktop's user on
  // a port of its choosing: the list read after the exposure (its row has
  // the link) holds the two ports and nothing else.
  await panel.expectVisible(page.locator('pilot-sandbox-panel .listening').getByRole('link', { name: 'Open preview of port 8700' }));
  const rows = await page.locator('pilot-sandbox-panel .listening li').allTextContents();
  assert.deepEqual(rows.map((r) => r.split(' ')[0]).sort(), ['8600', '8700'], `listening: ${rows.join(' | ')}`);
  // (VNC is 0x170C, noVNC 0x17C0, the forward's 8600 0x2198.)
  const relays = await client.exec(project, "awk '$4 == \"0A\" && $8 == 1001 && $2 !~ /:(170C|17C0|2198)$/' /proc/net/tcp /proc/net/tcp6");
  assert.notEqual(relays.stdout.trim(), '', 'the desktop user listens on nothing but VNC, noVNC and the forward: the check above proves nothing');
  await screenshot('1-forwarded-and-exposed');
  const [preview] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
  await preview.waitForLoadState();
  assert.match(/** @type {string} */ (await preview.textContent('body')), /hello from the sandbox/);
  await preview.close();

  // A port something in the sandbox listens on is refused, and says why.
  await page.getByRole('spinbutton', { name: 'Port in the sandbox' }).fill('8700');
  await page.getByRole('button', { name: 'Forward', exact: true }).click();
  const refused = page.getByText('python3 already listens on port 8700 in the sandbox');
  await panel.expectVisible(refused);
  // It stays while the list is read again (after each change, on Refresh,
  // every few seconds): a read that worked wiped it out at once before.
  // The page notes each redrawing of the list and any emptying of the
  // message; Refresh, then wait for a redrawing.
  await page.evaluate(() => {
    const root = /** @type {ShadowRoot} */ (document.querySelector('pilot-sandbox-panel')?.shadowRoot);
    const w = /** @type {any} */ (window);
    w.portsRedrawn = 0;
    w.portsErrorCleared = false;
    new MutationObserver(() => { w.portsRedrawn++; }).observe(/** @type {Node} */ (root.querySelector('.listening')), { childList: true });
    new MutationObserver(() => { if (!root.querySelector('.ports-error')?.textContent) w.portsErrorCleared = true; })
      .observe(/** @type {Node} */ (root.querySelector('.ports-error')), { childList: true, characterData: true, subtree: true });
  });
  await page.getByRole('button', { name: 'Refresh', exact: true }).click();
  await page.waitForFunction(() => /** @type {any} */ (window).portsRedrawn > 0);
  assert.equal(await page.evaluate(() => /** @type {any} */ (window).portsErrorCleared), false, 'the refusal was wiped out by the next read of the list');
  assert.ok(await refused.isVisible());
  await screenshot('2-refused');

  // Remove both.
  await page.getByRole('button', { name: 'Stop exposing port 8700' }).click();
  await page.getByRole('button', { name: 'Stop forwarding port 8600' }).click();
  await panel.expectVisible(page.getByText('No host port is forwarded.'));
  await panel.expectVisible(page.getByText('No sandbox port is exposed.'));
  await screenshot('3-removed');
  assert.notEqual((await client.exec(project, fetchInside(8600))).exitCode, 0, 'the forward still answers after its removal');
  const list = await client.listPorts(project);
  assert.deepEqual([list.forwarded, list.exposed], [[], []]);
  assertNoErrors();
});

test('the Ports lists show what the sidecar knows at once while what listens is read', { skip, timeout: 300_000 }, async () => {
  const dir = tempProject('pilot-ui-ports-known-');
  const project = dir.path;
  const { page, screenshot, assertNoErrors, logFile } = await newPage(/** @type {any} */ (browser), 'panel-ports-known');
  const { client, start, open } = await panelSetup(page, dir, logFile);
  await start();
  await client.forwardPort(project, 8601, 1);
  await client.request('sandbox/exec', { projectPath: project, background: true, command: 'exec python3 -m http.server 8701 --bind 127.0.0.1' });

  // The sidecar's answers to full reads of the list (an exec in the
  // sandbox, seconds under load) are held back until released.
  /** @type {Set<number>} */
  const fullReads = new Set();
  /** @type {(() => void)[]} */
  const held = [];
  let holding = true;
  /** @type {() => void} */
  let heldOne = () => {};
  const answered = new Promise((resolve) => { heldOne = () => resolve(undefined); });
  await page.routeWebSocket(/\/rpc\?/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((m) => {
      const msg = JSON.parse(String(m));
      if (msg.method === 'sandbox/ports/list' && !msg.params?.skipListening) fullReads.add(msg.id);
      server.send(m);
    });
    server.onMessage((m) => {
      const msg = JSON.parse(String(m));
      if (holding && fullReads.has(msg.id)) {
        held.push(() => ws.send(m));
        heldOne();
      }
      else ws.send(m);
    });
  });
  const panel = await open();
  await page.getByText('Ports', { exact: true }).click();
  await panel.expectVisible(page.getByText('localhost:8601 in the sandbox → 127.0.0.1:1 here'));
  await panel.expectVisible(page.getByText('Reading what listens in the sandbox…'));
  // The full read was answered, and held back: what shows came without it.
  await answered;
  assert.ok(await page.getByText('Reading what listens in the sandbox…').isVisible());
  await screenshot('1-known-at-once');

  holding = false;
  for (const release of held.splice(0)) release();
  await panel.expectVisible(page.getByRole('button', { name: 'Expose port 8701' }));
  assert.equal(await page.getByText('Reading what listens in the sandbox…').count(), 0);
  await screenshot('2-listening-read');
  assertNoErrors();
});
