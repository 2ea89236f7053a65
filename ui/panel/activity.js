// The panel's control of the desktop and its Activity section (a
// <details> in template.js, docs/activity.md): "Take over" and "Give
// back" (sandbox/control/take and release), the agent's handOver reason as
// a card with its own "Take over", and the sandbox's timeline, newest
// first and live (sandbox/activity), with the acting tools' thumbnails: a
// click shows the picture large. What an entry says comes from agents and
// the sandbox: set as text only.

import { messageOf } from './model.js';

/** @typedef {import('../client/pilot-sandbox.js').Client} Client */
/** @typedef {import('../client/types.js').ActivityEntry} ActivityEntry */
/** @typedef {import('../client/types.js').ControlState} ControlState */

/** How many entries stay on the page; older ones are dropped. */
const MAX_ENTRIES = 200;

export class ActivitySection {
  /** @type {Client | null} */
  #client = null;
  #project = '';
  #running = false;
  /** @type {(() => void)[]} */
  #unsubscribe = [];
  #seq = 0; // the newest entry shown
  #root;

  /** @param {ShadowRoot} root the panel's, with template.js's markup */
  constructor(root) {
    this.#root = root;
    for (const sel of ['.take-over', '.handover-take']) {
      this.#$(sel).addEventListener('click', () => this.#control((c, p) => c.takeControl(p)));
    }
    this.#$('.give-back').addEventListener('click', () => this.#control((c, p) => c.releaseControl(p)));
    this.#$('.export').addEventListener('click', () => this.#export());
    this.#$('.picture-close').addEventListener('click', () => /** @type {HTMLDialogElement} */ (this.#$('.picture')).close());
  }

  /**
   * What the section works on; it shows only while the sandbox runs.
   *
   * @param {Client | null} client
   * @param {string} project
   * @param {boolean} running
   */
  update(client, project, running) {
    const attached = client !== this.#client || project !== this.#project;
    const started = running && !this.#running;
    this.#client = client;
    this.#project = project;
    this.#running = running;
    this.#$('.control').hidden = !running;
    this.#$('details.activity').hidden = !running;
    if (attached) this.#attach();
    if (attached || started) this.#load();
  }

  #attach() {
    for (const off of this.#unsubscribe) off();
    this.#unsubscribe = [];
    this.#$('.timeline').replaceChildren();
    this.#seq = 0;
    this.#drawControl({ projectPath: this.#project, holder: 'agent' });
    const client = this.#client;
    if (!client) return;
    this.#unsubscribe.push(client.on('sandbox/activity', (/** @type {ActivityEntry} */ e) => {
      if (e.projectPath === this.#project && client === this.#client) this.#add([e]);
    }));
    this.#unsubscribe.push(client.on('sandbox/control', (/** @type {ControlState} */ st) => {
      if (st.projectPath === this.#project && client === this.#client) this.#drawControl(st);
    }));
  }

  async #load() {
    const client = this.#client;
    if (!client || !this.#running) return;
    try {
      const [{ entries }, control] = await Promise.all([
        client.activity(this.#project, this.#seq ? { since: this.#seq } : { limit: 50 }),
        client.controlState(this.#project),
      ]);
      if (client !== this.#client) return;
      this.#add(entries);
      this.#drawControl(control);
    } catch (err) {
      this.#$('.activity-error').textContent = messageOf(err);
    }
  }

  /** Writes the session into a new folder and says where. */
  async #export() {
    const client = this.#client;
    if (!client) return;
    const result = this.#$('.export-result');
    result.textContent = 'Exporting…';
    try {
      const { dir, entries, recordings } = await client.exportActivity(this.#project);
      result.textContent = `${entries} actions and ${recordings.length} recordings in ${dir}`;
    } catch (err) {
      result.textContent = '';
      this.#$('.activity-error').textContent = messageOf(err);
    }
  }

  /** @param {(client: Client, project: string) => Promise<ControlState>} f */
  async #control(f) {
    const client = this.#client;
    if (!client) return;
    try {
      this.#drawControl(await f(client, this.#project));
    } catch (err) {
      this.#$('.activity-error').textContent = messageOf(err);
    }
  }

  /** @param {ControlState} st */
  #drawControl(st) {
    const user = st.holder === 'user';
    this.#$('.control-status').textContent = user ? 'You have control: the agent waits.' : 'The agent has control.';
    this.#$('.take-over').hidden = user;
    this.#$('.give-back').hidden = !user;
    this.#$('.handover').hidden = user || !st.reason;
    this.#$('.handover-reason').textContent = st.reason ?? '';
  }

  /** @param {ActivityEntry[]} entries oldest first */
  #add(entries) {
    const list = this.#$('.timeline');
    for (const e of entries) {
      if (e.seq <= this.#seq) continue;
      this.#seq = e.seq;
      list.prepend(this.#item(e));
    }
    while (list.children.length > MAX_ENTRIES) list.lastElementChild?.remove();
  }

  /** @param {ActivityEntry} e */
  #item(e) {
    const li = document.createElement('li');
    li.className = e.isError ? 'entry error' : 'entry';
    const head = document.createElement('p');
    head.className = 'entry-head';
    const who = e.client ? `${e.source} ${e.client}` : e.source;
    head.textContent = `${new Date(e.time).toLocaleTimeString()} · ${who} · ${e.name}`;
    const summary = document.createElement('p');
    summary.className = 'entry-summary';
    summary.textContent = e.summary;
    const thumbs = document.createElement('div');
    thumbs.className = 'shots';
    li.append(head, summary, thumbs);
    for (const [data, when] of [[e.before, 'before'], [e.after, 'after']]) {
      if (!data) continue;
      const img = document.createElement('img');
      img.src = `data:image/jpeg;base64,${data}`;
      img.alt = `The screen ${when} ${e.name}`;
      img.className = 'shot';
      img.tabIndex = 0;
      img.addEventListener('click', () => this.#showPicture(img));
      thumbs.append(img);
    }
    return li;
  }

  /** @param {HTMLImageElement} img */
  #showPicture(img) {
    const big = /** @type {HTMLImageElement} */ (this.#$('.picture img'));
    big.src = img.src;
    big.alt = img.alt;
    /** @type {HTMLDialogElement} */ (this.#$('.picture')).showModal();
  }

  /** @param {string} selector */
  #$(selector) { return /** @type {HTMLElement} */ (this.#root.querySelector(selector)); }
}
