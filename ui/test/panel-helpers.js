// What the panel's browser tests do again and again: set up the panel of
// a project with a sidecar behind it, wait for what a person would see (by
// role and visible text, with Playwright's auto-waiting), find the
// viewer's frame, and read the desktop's pointer.

import { connectWebSocket } from '../client/websocket.js';
import { startUI } from './helpers.js';
import { desktopPainted } from './browser.js';

/** @typedef {import('playwright-core').Page} Page */
/** @typedef {import('playwright-core').Frame} Frame */
/** @typedef {import('playwright-core').Locator} Locator */
/** @typedef {import('../client/pilot-sandbox.js').Client} Client */

/**
 * The setup every panel test of a sandbox shares: `pilot-sandbox ui` for
 * the project (env added to the tests' environment), a client on its
 * WebSocket, and the sandbox removed and the client closed when the test
 * ends (before the project's directory: tempProject). What a test does
 * before the panel opens (settings, a start through the client, routes)
 * goes between this and open.
 *
 * @param {Page} page
 * @param {{path: string, removeSandbox: () => Promise<void>}} dir from tempProject
 * @param {string} logFile the sidecar's log (newPage's)
 * @param {Record<string, string>} [env]
 */
export async function panelSetup(page, dir, logFile, env = {}) {
  const { address, rpcUrl } = await startUI(dir.path, env, logFile);
  const client = await connectWebSocket(rpcUrl);
  dir.removeSandbox = async () => {
    await client.remove(dir.path);
    client.close();
  };
  return {
    address,
    client,
    /** Starts the project's sandbox through the client. */
    start: () => client.start(dir.path),
    /**
     * Opens the panel and waits until its badge reads badge.
     *
     * @param {string} [badge] Running by default: the sandbox was started
     * @param {number} [timeout]
     */
    async open(badge = 'Running', timeout = 60_000) {
      const panel = await openPanel(page, address);
      await panel.expectBadge(badge, timeout);
      return panel;
    },
  };
}

/** @param {string} s */
const exactly = (s) => new RegExp(`^${s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);

/**
 * Opens the panel at address and returns waits on what it shows.
 *
 * @param {Page} page
 * @param {string} address
 */
export async function openPanel(page, address) {
  await page.goto(address);
  return {
    /**
     * Waits until the status badge reads label.
     *
     * @param {string} label
     * @param {number} [timeout]
     */
    async expectBadge(label, timeout = 30_000) {
      const badge = page.getByRole('status', { name: 'Sandbox status' });
      try {
        await badge.filter({ hasText: exactly(label) }).waitFor({ timeout });
      } catch (err) {
        const shown = await badge.textContent().catch(() => '?');
        const detail = await page.getByRole('status', { name: 'Sandbox status' }).locator('xpath=..').textContent().catch(() => '');
        throw new Error(`the badge shows "${shown}" (${detail?.trim()}) after ${timeout} ms, not "${label}"`, { cause: err });
      }
    },
    /**
     * @param {Locator} locator
     * @param {number} [timeout]
     */
    async expectVisible(locator, timeout = 30_000) {
      await locator.waitFor({ state: 'visible', timeout });
    },
    /**
     * Waits until the switch is on or off.
     *
     * @param {Locator} _switch the switch (for the reader; found again by name)
     * @param {boolean} checked
     */
    async expectChecked(_switch, checked) {
      await page.getByRole('switch', { name: 'Agent tools', checked }).waitFor({ timeout: 10_000 });
    },
    /**
     * Waits until locator has the keyboard focus (through shadow roots).
     *
     * @param {Locator} locator
     */
    async expectFocused(locator) {
      const element = await locator.elementHandle();
      await page.waitForFunction((target) => {
        // The focused element, through shadow roots.
        let el = document.activeElement;
        while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement;
        return el === target;
      }, element, { timeout: 10_000 });
    },
    /**
     * Clicks the status badge (which takes no focus, but is where the next
     * Tab starts from, as for a person who clicked there), presses Tab
     * count times, and names what gets the focus each time.
     *
     * @param {number} count
     * @returns {Promise<string[]>}
     */
    async tabOrder(count) {
      await page.getByRole('status', { name: 'Sandbox status' }).click();
      /** @type {string[]} */
      const names = [];
      for (let i = 0; i < count; i++) {
        await page.keyboard.press('Tab');
        names.push(await page.evaluate(() => {
          let el = /** @type {HTMLElement | null} */ (document.activeElement);
          while (el?.shadowRoot?.activeElement) el = /** @type {HTMLElement} */ (el.shadowRoot.activeElement);
          if (!el) return '';
          if (el.tagName === 'INPUT') return el.closest('label')?.textContent?.trim() ?? '';
          return el.tagName === 'IFRAME' ? 'iframe' : el.textContent?.trim() ?? '';
        }));
      }
      return names;
    },
    /**
     * Calls read until ok says its value is right, for at most 15 s.
     *
     * @template T
     * @param {() => Promise<T>} read
     * @param {(value: T) => boolean} ok
     * @param {string} what
     * @returns {Promise<T>}
     */
    async poll(read, ok, what) {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const value = await read();
        if (ok(value)) return value;
        if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after 15 s`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
  };
}

/**
 * The viewer's frame, once the iframe titled like title is there.
 *
 * @param {Page} page
 * @param {RegExp} title
 * @returns {Promise<Frame>}
 */
export async function viewerFrame(page, title) {
  const iframe = page.getByTitle(title);
  await iframe.waitFor({ timeout: 30_000 });
  const frame = await (await iframe.elementHandle())?.contentFrame();
  if (!frame) throw new Error('the viewer iframe has no frame');
  return frame;
}

/**
 * Waits for a drawn desktop in the panel's viewer frame, following the panel
 * when it loads the viewer again (as it does when Chromium cancelled its
 * scripts for a network change).
 *
 * @param {Page} page
 * @param {RegExp} title
 * @param {number} [timeout]
 * @returns {Promise<{frame: Frame, size: {width: number, height: number}, drawnAt: number}>} drawnAt: the frame's clock (Date.now) when it was first seen drawn
 */
export async function paintedViewer(page, title, timeout = 60_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const frame = await viewerFrame(page, title);
    try {
      const { drawnAt, ...size } = await desktopPainted(frame, Math.max(1000, deadline - Date.now()));
      return { frame, size, drawnAt };
    } catch (err) {
      if (!/detached/i.test(String(err)) || Date.now() > deadline) throw err;
    }
  }
}

/**
 * Moves the browser's mouse to a point of the desktop, in desktop pixels,
 * through the scaled canvas in the viewer's frame.
 *
 * @param {Page} page
 * @param {Frame} frame
 * @param {{x: number, y: number}} at
 */
export async function moveOnDesktop(page, frame, at) {
  const canvas = frame.locator('canvas');
  const box = await canvas.boundingBox();
  const size = await canvas.evaluate((c) => ({ width: /** @type {HTMLCanvasElement} */ (c).width, height: /** @type {HTMLCanvasElement} */ (c).height }));
  if (!box) throw new Error('the canvas is not on screen');
  const x = box.x + (at.x + 0.5) * (box.width / size.width);
  const y = box.y + (at.y + 0.5) * (box.height / size.height);
  await page.mouse.move(x, y, { steps: 3 });
}

/**
 * Where the desktop's pointer is, asked of the desktop itself.
 *
 * @param {Client} client
 * @param {string} project
 * @returns {Promise<{x: number, y: number}>}
 */
export async function pointer(client, project) {
  const { stdout } = await client.exec(project, 'xdotool getmouselocation --shell', { timeoutMs: 10_000 });
  const x = Number(/^X=(\d+)/m.exec(stdout)?.[1]);
  const y = Number(/^Y=(\d+)/m.exec(stdout)?.[1]);
  return { x, y };
}

/**
 * Starts recording every text the status badge and the progress line
 * show; the returned function reads what was seen, in order.
 *
 * @param {Page} page
 * @returns {Promise<() => Promise<{badges: string[], progress: string[]}>>}
 */
export async function recordPanel(page) {
  await page.evaluate(() => {
    const root = /** @type {ShadowRoot} */ (document.querySelector('pilot-sandbox-panel')?.shadowRoot);
    /** @type {{badges: string[], progress: string[]}} */
    const seen = { badges: [], progress: [] };
    /** @type {any} */ (window).__pilotSeen = seen;
    /**
     * @param {string} selector
     * @param {string[]} list
     */
    const watch = (selector, list) => {
      const el = /** @type {Element} */ (root.querySelector(selector));
      const record = () => {
        const text = el.textContent?.trim() ?? '';
        if (text && list.at(-1) !== text) list.push(text);
      };
      record();
      new MutationObserver(record).observe(el, { subtree: true, childList: true, characterData: true });
    };
    watch('.badge', seen.badges);
    watch('.progress-text', seen.progress);
  });
  return () => page.evaluate(() => /** @type {any} */ (window).__pilotSeen);
}
