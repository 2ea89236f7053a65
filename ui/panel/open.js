// The panel's Open menu (a <details> in the toolbar, template.js): a
// terminal, or the browser on images that have one, opened on the
// sandbox's desktop. The desktop's own menu runs nothing (fluxbox runs as
// the desktop's user, resources/docker/sandbox/Dockerfile), so this is
// how a person who took control gets a window to work in. Each is a
// background sandbox/exec, as the sandbox user, like the agent's programs.

import { messageOf } from './model.js';

/** @typedef {import('../client/pilot-sandbox.js').Client} Client */

/** What each item runs: xterm is in every image, pilot-open in the browser's. */
const COMMANDS = {
  terminal: 'exec xterm',
  browser: 'exec pilot-open',
};

export class OpenMenu {
  /** @type {Client | null} */
  #client = null;
  #project = '';
  #root;

  /** @param {ShadowRoot} root the panel's, with template.js's markup */
  constructor(root) {
    this.#root = root;
    this.#$('.open-terminal').addEventListener('click', () => this.#open('terminal'));
    this.#$('.open-browser').addEventListener('click', () => this.#open('browser'));
    // A menu: it closes as focus leaves it, and on Escape.
    const menu = this.#menu;
    menu.addEventListener('focusout', (e) => {
      if (!menu.contains(/** @type {Node | null} */ (e.relatedTarget))) menu.open = false;
    });
    menu.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape' || !menu.open) return;
      menu.open = false;
      /** @type {HTMLElement} */ (menu.querySelector('summary')).focus();
    });
  }

  get #menu() { return /** @type {HTMLDetailsElement} */ (this.#$('details.open-menu')); }

  /**
   * What the menu works on; it shows only while the sandbox runs.
   *
   * @param {Client | null} client
   * @param {string} project
   * @param {boolean} running
   * @param {string | undefined} imageVariant the sandbox's (SandboxState)
   */
  update(client, project, running, imageVariant) {
    if (client !== this.#client || project !== this.#project || !running) this.#$('.open-error').textContent = '';
    this.#client = client;
    this.#project = project;
    const menu = this.#menu;
    menu.hidden = !running;
    if (!running) menu.open = false;
    // The project's own Dockerfile builds on the browser image.
    this.#$('.open-browser').hidden = imageVariant !== 'browser' && imageVariant !== 'dockerfile';
  }

  /** @param {keyof typeof COMMANDS} what */
  async #open(what) {
    const client = this.#client;
    this.#menu.open = false;
    if (!client) return;
    this.#$('.open-error').textContent = '';
    try {
      await client.execBackground(this.#project, COMMANDS[what]);
    } catch (err) {
      if (client === this.#client) this.#$('.open-error').textContent = `Could not open the ${what}: ${messageOf(err)}`;
    }
  }

  /** @param {string} selector */
  #$(selector) { return /** @type {HTMLElement} */ (this.#root.querySelector(selector)); }
}
