// The panel's Ports section (a <details> in template.js): host ports
// forwarded into the sandbox, sandbox ports exposed on this computer with
// a link that opens the preview, and what listens in the sandbox now;
// add and remove in both directions. It reads sandbox/ports/list when
// opened, every few seconds while open, and after each change; the first
// read of a run also asks, beside it, for what the sidecar knows without
// looking inside (skipListening), which it draws at once while what
// listens is read (seconds under load). Names of
// processes come from the sandbox: they are set as text, never as markup.

import { messageOf } from './model.js';

/** @typedef {import('../client/pilot-sandbox.js').Client} Client */
/** @typedef {import('../client/types.js').PortsList} PortsList */

/** How often an open section reads the list again. */
const REFRESH_MS = 5000;

export class PortsSection {
  /** @type {Client | null} */
  #client = null;
  #project = '';
  #running = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #timer;
  #root;
  // What the last change was refused for, and what reading the list last
  // failed with: a read that works must not wipe out why a change did
  // not (it follows every change).
  #changeError = '';
  #listError = '';
  // The lists show a full read of this client, project and run.
  #drawn = false;

  /** @param {ShadowRoot} root the panel's, with template.js's markup */
  constructor(root) {
    this.#root = root;
    this.#details.addEventListener('toggle', () => this.#refresh());
    this.#$('.forward-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const port = this.#number('.forward-form input[name=port]');
      const hostPort = this.#number('.forward-form input[name=hostPort]');
      if (port) this.#change((c) => c.forwardPort(this.#project, port, hostPort || undefined), '.forward-form');
    });
    this.#$('.expose-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const port = this.#number('.expose-form input[name=port]');
      if (port) this.#change((c) => c.exposePort(this.#project, port), '.expose-form');
    });
    this.#$('.ports-refresh').addEventListener('click', () => this.#refresh());
  }

  get #details() { return /** @type {HTMLDetailsElement} */ (this.#$('details.ports')); }

  /**
   * What the section works on; it shows only while the sandbox runs.
   *
   * @param {Client | null} client
   * @param {string} project
   * @param {boolean} running
   */
  update(client, project, running) {
    const changed = client !== this.#client || project !== this.#project || running !== this.#running;
    this.#client = client;
    this.#project = project;
    this.#running = running;
    this.#details.hidden = !running;
    if (!changed) return;
    this.#drawn = false;
    this.#refresh();
  }

  /** Reads the list now if the section is open, and again later. */
  async #refresh() {
    clearTimeout(this.#timer);
    const client = this.#client;
    if (!client || !this.#running || !this.#details.open) return;
    const full = client.listPorts(this.#project);
    if (!this.#drawn) this.#drawKnown(client);
    try {
      const list = await full;
      if (client !== this.#client) return;
      this.#draw(list);
      this.#drawn = true;
      this.#listError = '';
    } catch (err) {
      this.#listError = messageOf(err);
    }
    this.#showError();
    if (this.#details.open && this.#running) this.#timer = setTimeout(() => this.#refresh(), REFRESH_MS);
  }

  /**
   * Makes a change, then reads the list again.
   *
   * @param {(client: Client) => Promise<unknown>} call
   * @param {string} [form] a form to clear once it worked
   */
  async #change(call, form) {
    const client = this.#client;
    if (!client) return;
    try {
      await call(client);
      if (form) /** @type {HTMLFormElement} */ (this.#$(form)).reset();
      this.#changeError = '';
    } catch (err) {
      this.#changeError = messageOf(err);
    }
    this.#showError();
    await this.#refresh();
  }

  /**
   * Shows that the lists are being read, then what the sidecar knows
   * without looking inside, unless the full read came first.
   *
   * @param {Client} client
   */
  async #drawKnown(client) {
    const reading = { forwarded: [], exposed: [], listening: [] };
    this.#draw(reading, 'Reading…', 'Reading what listens in the sandbox…');
    try {
      const known = await client.listPorts(this.#project, { skipListening: true });
      if (client === this.#client && !this.#drawn) this.#draw(known, undefined, 'Reading what listens in the sandbox…');
    } catch {
      // The full read says why.
    }
  }

  /**
   * @param {PortsList} list
   * @param {string} [unknown] what the forwarded and exposed lists say
   *   while they are being read, instead of that they hold nothing
   * @param {string} [unlistened] the same for the listening list
   */
  #draw(list, unknown, unlistened) {
    const exposed = new Map(list.exposed.map((x) => [x.port, x]));
    this.#fill('.forwarded', list.forwarded, (f) => [
      text(`localhost:${f.port} in the sandbox → 127.0.0.1:${f.hostPort} here`),
      ...(f.error ? [text(f.error, 'port-error')] : []),
      this.#button('Remove', `Stop forwarding port ${f.port}`, (c) => c.closePort(this.#project, f.port, 'forwarded')),
    ], unknown ?? 'No host port is forwarded.');
    this.#fill('.exposed', list.exposed, (x) => [
      text(`Port ${x.port} of the sandbox → `),
      preview(x.url, `Open preview of port ${x.port}`),
      this.#button('Remove', `Stop exposing port ${x.port}`, (c) => c.closePort(this.#project, x.port, 'exposed')),
    ], unknown ?? 'No sandbox port is exposed.');
    const forwarded = new Set(list.forwarded.map((f) => f.port));
    this.#fill('.listening', list.listening, (l) => {
      const x = exposed.get(l.port);
      // A forwarded port's listener is the sidecar's own: nothing to expose.
      if (forwarded.has(l.port)) return [text(`${l.port} forwarded from this computer`)];
      return [
        text(`${l.port}${l.process ? ` ${l.process}` : ''}`),
        x ? preview(x.url, `Open preview of port ${l.port}`)
          : this.#button('Expose', `Expose port ${l.port}`, (c) => c.exposePort(this.#project, l.port)),
      ];
    }, unlistened ?? 'Nothing listens in the sandbox.');
  }

  /**
   * @template T
   * @param {string} selector a <ul>
   * @param {T[]} items
   * @param {(item: T) => Node[]} row
   * @param {string} empty what the list says when it has nothing
   */
  #fill(selector, items, row, empty) {
    const ul = this.#$(selector);
    ul.replaceChildren(...(items.length ? items : [null]).map((item) => {
      const li = document.createElement('li');
      if (item === null) li.append(text(empty, 'hint'));
      else li.append(...row(item));
      return li;
    }));
  }

  /**
   * @param {string} label
   * @param {string} name its accessible name
   * @param {(client: Client) => Promise<unknown>} call
   */
  #button(label, name, call) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = label;
    b.setAttribute('aria-label', name);
    b.addEventListener('click', () => this.#change(call));
    return b;
  }

  /** Shows why the last change was refused, else why the list was not read. */
  #showError() {
    this.#$('.ports-error').textContent = this.#changeError || this.#listError;
  }

  /**
   * @param {string} selector
   * @returns {number}
   */
  #number(selector) {
    return Number(/** @type {HTMLInputElement} */ (this.#$(selector)).value);
  }

  /** @param {string} selector */
  #$(selector) { return /** @type {HTMLElement} */ (this.#root.querySelector(selector)); }
}

/**
 * @param {string} value
 * @param {string} [className]
 */
function text(value, className) {
  const span = document.createElement('span');
  span.textContent = value;
  if (className) span.className = className;
  return span;
}

/**
 * A link that opens an exposed port in a new tab of the user's browser.
 *
 * @param {string} url
 * @param {string} label
 */
function preview(url, label) {
  const a = document.createElement('a');
  a.href = url;
  a.target = '_blank';
  a.rel = 'noopener noreferrer';
  a.textContent = label;
  return a;
}
