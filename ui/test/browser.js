// A real browser for the panel's tests: Debian's Chromium driven by
// playwright-core (Playwright's own browser download does not work
// everywhere; scripts/test.sh installs chromium with apt-get). Every page
// records its errors, and every test saves screenshots under
// ui/test-output/.

import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';
import { chromium } from 'playwright-core';

/** Where screenshots go: ui/test-output/<name>/. */
export const outputRoot = join(dirname(fileURLToPath(import.meta.url)), '..', 'test-output');

/**
 * The Chromium to drive: $PILOT_CHROMIUM, else chromium on the PATH.
 *
 * @returns {string | null}
 */
export function chromiumPath() {
  const candidates = [process.env.PILOT_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  for (const c of candidates) if (c && existsSync(c)) return c;
  try {
    return execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

/**
 * Why browser tests cannot run here (a reason to skip them), or false.
 * With PILOT_REQUIRE_DOCKER=1 (CI) a missing browser is a failure.
 *
 * @returns {string | false}
 */
export function skipWithoutBrowser() {
  if (chromiumPath()) return false;
  const reason = 'no Chromium: install it (apt-get install chromium) or set PILOT_CHROMIUM';
  if (process.env.PILOT_REQUIRE_DOCKER === '1') throw new Error(reason);
  return reason;
}

// Flags for a closed network: without the background-networking ones,
// Chromium keeps trying to reach Google's services.
const chromiumArgs = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/**
 * Launches Chromium (headless, a fresh profile) and closes it when the
 * current test file ends.
 *
 * @returns {Promise<import('playwright-core').Browser>}
 */
export async function launchBrowser() {
  const browser = await chromium.launch({ executablePath: /** @type {string} */ (chromiumPath()), headless: true, args: chromiumArgs });
  after(() => browser.close());
  return browser;
}

/**
 * A page that records page errors and console errors (of every page of its
 * context), with a method that fails the test if any were seen, and one
 * that saves screenshots.
 *
 * @param {import('playwright-core').Browser} browser
 * @param {string} name the test's output directory under ui/test-output
 * @param {import('playwright-core').BrowserContextOptions} [options]
 */
export async function newPage(browser, name, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 }, ...options });
  const page = await context.newPage();
  /** @type {string[]} */
  const errors = [];
  /** @type {string[]} */
  const networkChanged = [];
  // On the context: every page the test opens in it counts.
  context.on('weberror', (err) => errors.push(`page error in ${err.page()?.url()}: ${err.error().message}`));
  context.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const text = `console error at ${msg.location().url}: ${msg.text()}`;
    // Chromium on Linux cancels the requests in flight when a network
    // interface comes or goes, which Docker does whenever any container
    // on the machine starts or stops. Not an error of the page: the panel
    // loads a viewer whose scripts were cancelled again, and the test sees
    // that it does. These are counted, not failed.
    if (/net::ERR_NETWORK_CHANGED/.test(text)) networkChanged.push(text);
    else errors.push(text);
  });
  const dir = join(outputRoot, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return {
    page,
    context,
    errors,
    /** Requests Chromium cancelled for a network change (see above). */
    networkChanged,
    /** The file for the server's log, next to the screenshots. */
    logFile: join(dir, 'pilot-sandbox-ui.log'),
    /**
     * Saves a screenshot of the page (or of another page of the context).
     *
     * @param {string | import('playwright-core').Page} pageOrFile
     * @param {string} [file]
     */
    async screenshot(pageOrFile, file) {
      const [target, name] = typeof pageOrFile === 'string' ? [page, pageOrFile] : [pageOrFile, file];
      const path = join(dir, `${name}.png`);
      await target.screenshot({ path });
      return path;
    },
    /** Throws if the page logged an error or threw. */
    assertNoErrors() {
      if (errors.length) throw new Error(`the page reported errors:\n${errors.join('\n')}`);
    },
  };
}

/**
 * Waits until the noVNC canvas inside frame is as large as the desktop and
 * painted (noVNC's canvas is transparent until the first update arrives),
 * and returns its size.
 *
 * @param {import('playwright-core').Frame} frame
 * @param {number} [timeout]
 * @returns {Promise<{width: number, height: number, drawnAt: number}>} drawnAt: the frame's clock (Date.now) when it was first seen painted
 */
export async function desktopPainted(frame, timeout = 30_000) {
  const handle = await frame.waitForFunction(() => {
    const canvas = document.querySelector('canvas');
    if (!canvas || canvas.width === 0) return null;
    const ctx = canvas.getContext('2d');
    if (!ctx) return null;
    // Sample a grid: any opaque pixel means the desktop has been drawn.
    for (let y = 0.1; y < 1; y += 0.2) {
      for (let x = 0.1; x < 1; x += 0.2) {
        const [, , , alpha] = ctx.getImageData(Math.floor(canvas.width * x), Math.floor(canvas.height * y), 1, 1).data;
        if (alpha > 0) return { width: canvas.width, height: canvas.height, drawnAt: Date.now() };
      }
    }
    return null;
  }, undefined, { timeout, polling: 'raf' });
  return /** @type {{width: number, height: number, drawnAt: number}} */ (await handle.jsonValue());
}

/**
 * Waits until the desktop, as drawn in frame's canvas, shows something
 * other than colour at a point (in desktop pixels): the viewer follows
 * what happens on the desktop, not just its first picture.
 *
 * @param {import('playwright-core').Frame} frame
 * @param {{x: number, y: number}} at
 * @param {[number, number, number]} colour the background, as RGB
 */
export async function desktopChanges(frame, at, colour) {
  await frame.waitForFunction(({ at, colour }) => {
    const ctx = document.querySelector('canvas')?.getContext('2d');
    if (!ctx) return false;
    const [r, g, b] = ctx.getImageData(at.x, at.y, 1, 1).data;
    return Math.abs(r - colour[0]) + Math.abs(g - colour[1]) + Math.abs(b - colour[2]) > 30;
  }, { at, colour }, { timeout: 30_000, polling: 'raf' });
}
