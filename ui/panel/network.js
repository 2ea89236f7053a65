// The panel's network parts (template.js): the permission questions
// beside the live desktop (sandbox/permission, docs/protocol.md,
// Permission requests), a queue of cards oldest first, each with its
// cause, destination and the answers; a card leaves when
// sandbox/permission/resolved says its question ended (answered here or
// elsewhere, settled, expired). Below, the Network section: the policy's
// preset, the user's kept and session decisions (each can be forgotten),
// and the recent connection log, followed live (sandbox/network).
// Host names and command lines come from the sandbox: set as text only.

import { messageOf } from './model.js';
import { questionFacts, secondsLeft, enqueue, dequeue, logLine, presetText, clip } from './asks.js';

/** @typedef {import('../client/pilot-sandbox.js').Client} Client */
/** @typedef {import('../client/types.js').PermissionRequest} PermissionRequest */
/** @typedef {import('../client/types.js').NetworkLogEntry} NetworkLogEntry */
/** @typedef {import('../client/types.js').KeptDecision} KeptDecision */

/** How long past its expiry a question's card may stay (its resolved notice lost). */
const STALE_MS = 5000;

/** How many log entries the section shows, newest first. */
const LOG_SHOWN = 50;

/** The answers offered besides Deny, in the protocol's words. */
const ALLOWS = /** @type {const} */ ([
  ['allow_once', 'Allow once', 'Let this connection through; ask again next time.'],
  ['allow_session', 'Allow this session', 'Until the sandbox stops.'],
  ['allow_always', "Always allow", "Kept for this project: don't ask again."],
]);

export class NetworkSection {
  /** @type {Client | null} */
  #client = null;
  #project = '';
  #running = false;
  /** @type {(() => void)[]} */
  #unsubscribe = [];
  /** @type {PermissionRequest[]} */
  #queue = [];
  /** @type {Map<string, HTMLLIElement>} the cards shown, by question id */
  #cards = new Map();
  /** @type {NetworkLogEntry[]} oldest first */
  #log = [];
  /** @type {ReturnType<typeof setInterval> | undefined} */
  #ticker;
  #root;
  /** Called when the queue empties or fills (the panel shows its side column). */
  onChange = () => {};

  /** @param {ShadowRoot} root the panel's, with template.js's markup */
  constructor(root) {
    this.#root = root;
    this.#$('details.network').addEventListener('toggle', () => this.#readLog());
  }

  /** Whether questions wait. */
  get asking() { return this.#queue.length > 0; }

  /**
   * What the section works on.
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
    this.#$('details.network').hidden = !running;
    if (attached) this.#attach();
    else if (started) this.#readPolicy();
  }

  #attach() {
    for (const off of this.#unsubscribe) off();
    this.#unsubscribe = [];
    this.#setQueue([]);
    this.#log = [];
    this.#drawLog();
    this.#$('.preset').textContent = '';
    const client = this.#client;
    if (!client || !this.#project) return;
    this.#unsubscribe.push(
      client.onPermission((q) => this.#setQueue(enqueue(this.#queue, q, this.#project))),
      client.onPermissionResolved((r) => {
        this.#setQueue(dequeue(this.#queue, r.id));
        // An answer for the session or always is a decision to list.
        if (r.projectPath === this.#project && r.decision !== 'allow_once') this.#readKept();
      }),
      client.onNetwork(({ projectPath, entry }) => {
        if (projectPath !== this.#project || client !== this.#client) return;
        this.#log = [...this.#log, entry].slice(-LOG_SHOWN);
        this.#drawLog();
      }),
    );
    // Questions asked before this panel was there.
    client.listPermissions(this.#project).then(({ pending }) => {
      if (client !== this.#client) return;
      let queue = this.#queue;
      for (const q of pending) queue = enqueue(queue, q, this.#project);
      this.#setQueue(queue);
    }, () => {});
    if (this.#running) this.#readPolicy();
  }

  /** Reads the policy in force, for the preset line, and the log, at once. */
  async #readPolicy() {
    const client = this.#client;
    if (!client) return;
    const log = this.#readLog();
    try {
      const policy = await client.networkPolicy(this.#project);
      if (client === this.#client) this.#$('.preset').textContent = presetText(policy);
    } catch (err) {
      if (client === this.#client) this.#$('.preset').textContent = `Policy unreadable: ${clip(messageOf(err), 200)}`;
    }
    await log;
  }

  /** Lists the project's kept and session decisions, while open. */
  async #readKept() {
    const client = this.#client;
    if (!client || !this.#running || !/** @type {HTMLDetailsElement} */ (this.#$('details.network')).open) return;
    try {
      const { rules } = await client.listPermissions(this.#project);
      if (client === this.#client) this.#drawKept(rules);
    } catch (err) {
      this.#$('.network-error').textContent = messageOf(err);
    }
  }

  /** @param {KeptDecision[]} rules */
  #drawKept(rules) {
    const rows = rules.map((r) => {
      const li = document.createElement('li');
      const forget = document.createElement('button');
      forget.type = 'button';
      forget.textContent = 'Forget';
      forget.setAttribute('aria-label', `Forget ${r.decision} ${clip(r.rule, 260)}`);
      forget.addEventListener('click', async () => {
        const client = this.#client;
        if (!client) return;
        try {
          await client.forgetPermission(this.#project, r.rule);
        } catch (err) {
          this.#$('.network-error').textContent = messageOf(err);
        }
        await this.#readKept();
      });
      li.append(
        span(r.decision === 'allow' ? 'allow' : 'deny', 'netlog-decision'),
        span(clip(r.rule, 260), 'netlog-host'),
        span(r.source === 'session' ? 'until the sandbox stops' : 'kept for this project', 'netlog-by'),
        ...(r.reason ? [span(clip(r.reason), 'netlog-by')] : []),
        forget,
      );
      li.dataset.decision = r.decision;
      return li;
    });
    if (!rows.length) {
      const li = document.createElement('li');
      li.append(span('None: what the policy does not settle, you are asked.', 'hint'));
      rows.push(li);
    }
    this.#$('.kept').replaceChildren(...rows);
  }

  /** Reads the recent log and follows it (watch) while open, and the decisions beside it. */
  async #readLog() {
    const client = this.#client;
    if (!client || !this.#running || !/** @type {HTMLDetailsElement} */ (this.#$('details.network')).open) return;
    const kept = this.#readKept();
    try {
      const { entries } = await client.networkLog(this.#project, { limit: LOG_SHOWN, watch: true });
      if (client !== this.#client) return;
      this.#log = entries.slice(-LOG_SHOWN);
      this.#$('.network-error').textContent = '';
      this.#drawLog();
    } catch (err) {
      this.#$('.network-error').textContent = messageOf(err);
    }
    await kept;
  }

  #drawLog() {
    const list = this.#$('.netlog');
    // Newest first: an entry is recorded when its connection ends (its
    // bytes counted), so the order received is not the order of time.
    const rows = [...this.#log].sort((a, b) => b.time - a.time).map((e) => {
      const line = logLine(e);
      const li = document.createElement('li');
      li.dataset.decision = line.decision;
      li.append(
        span(line.time, 'netlog-time'),
        span(line.decision === 'allow' ? 'allowed' : 'denied', 'netlog-decision'),
        span(line.destination, 'netlog-host'),
        span(line.by, 'netlog-by'),
        ...(line.bytes ? [span(line.bytes, 'netlog-bytes')] : []),
        ...(line.cause ? [span(`from ${line.cause}`, 'netlog-cause')] : []),
      );
      return li;
    });
    if (!rows.length) {
      const li = document.createElement('li');
      li.append(span('No connection yet.', 'hint'));
      rows.push(li);
    }
    list.replaceChildren(...rows);
  }

  /** @param {PermissionRequest[]} queue */
  #setQueue(queue) {
    this.#queue = queue;
    const ids = new Set(queue.map((q) => q.id));
    let hadFocus = false;
    for (const [id, card] of this.#cards) {
      if (ids.has(id)) continue;
      hadFocus ||= card.contains(this.#root.activeElement);
      card.remove();
      this.#cards.delete(id);
    }
    const list = this.#$('.question-list');
    for (const q of queue) {
      if (!this.#cards.has(q.id)) {
        const card = this.#card(q);
        this.#cards.set(q.id, card);
        list.append(card);
      }
    }
    // A keyboard user who answered one goes on with the next.
    if (hadFocus) /** @type {HTMLElement | null | undefined} */ (list.querySelector('.question button'))?.focus();
    this.#$('.questions').hidden = queue.length === 0;
    this.#$('.questions-title').textContent = queue.length === 1
      ? 'The sandbox asks' : `The sandbox asks ${queue.length} things`;
    clearInterval(this.#ticker);
    this.#ticker = undefined;
    if (queue.length) {
      this.#tick();
      this.#ticker = setInterval(() => this.#tick(), 1000);
    }
    this.onChange();
  }

  /**
   * Updates each card's time left. A question well past its expiry is
   * dropped: its resolved notice can come before the answer of the list
   * that still had it.
   */
  #tick() {
    const now = Date.now();
    const stale = this.#queue.filter((q) => now > q.expiresAt + STALE_MS);
    if (stale.length) {
      this.#setQueue(this.#queue.filter((q) => !stale.includes(q)));
      return;
    }
    for (const q of this.#queue) {
      const left = this.#cards.get(q.id)?.querySelector('.q-left');
      if (left) left.textContent = `Denied without an answer in ${secondsLeft(q, now)} s.`;
    }
  }

  /**
   * A question's card: what asks, why, and the answers.
   *
   * @param {PermissionRequest} q
   * @returns {HTMLLIElement}
   */
  #card(q) {
    const li = document.createElement('li');
    li.className = 'question';
    const summary = span(clip(q.summary, 400), 'q-summary');
    summary.id = `q-${q.id.replace(/[^\w-]/g, '')}`;
    li.setAttribute('aria-labelledby', summary.id);
    const facts = document.createElement('dl');
    for (const f of questionFacts(q)) {
      const dt = document.createElement('dt');
      dt.textContent = f.label;
      const dd = document.createElement('dd');
      dd.textContent = f.value;
      facts.append(dt, dd);
    }
    const allows = document.createElement('div');
    allows.className = 'q-answers';
    for (const [decision, label, title] of ALLOWS) {
      allows.append(this.#answerButton(q, label, title, () => ({ decision })));
    }
    const reason = document.createElement('input');
    reason.type = 'text';
    reason.maxLength = 1000;
    reason.placeholder = 'e.g. use the package registry instead';
    const label = document.createElement('label');
    label.className = 'q-reason';
    label.append('Message to the agent (with Deny)', reason);
    const deny = this.#answerButton(q, 'Deny', 'Refuse it; the message, if any, is told to the agent.',
      () => ({ decision: 'deny', ...(reason.value.trim() && { reason: reason.value.trim() }) }));
    deny.classList.add('deny');
    const error = span('', 'q-error');
    error.setAttribute('role', 'alert');
    li.append(summary, facts, span('', 'q-left hint'), allows, label, deny, error);
    return li;
  }

  /**
   * @param {PermissionRequest} q
   * @param {string} label
   * @param {string} title
   * @param {() => {decision: 'allow_once' | 'allow_session' | 'allow_always' | 'deny', reason?: string}} answer
   */
  #answerButton(q, label, title, answer) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = label;
    b.title = title;
    b.addEventListener('click', async () => {
      const client = this.#client;
      if (!client) return;
      const { decision, reason } = answer();
      try {
        await client.answerPermission(q.id, decision, reason ? { reason } : {});
        // sandbox/permission/resolved takes the card away; this call's
        // answer may come first.
        this.#setQueue(dequeue(this.#queue, q.id));
      } catch (err) {
        // Answered elsewhere or expired meanwhile: resolved removes it.
        const error = this.#cards.get(q.id)?.querySelector('.q-error');
        if (error) error.textContent = messageOf(err);
      }
    });
    return b;
  }

  /** @param {string} selector */
  #$(selector) { return /** @type {HTMLElement} */ (this.#root.querySelector(selector)); }
}

/**
 * @param {string} value
 * @param {string} className
 */
function span(value, className) {
  const s = document.createElement('span');
  s.textContent = value;
  s.className = className;
  return s;
}
