// The panel's Tasks section (a <details> in template.js, docs/tasks.md):
// start a task (Claude Code, Codex or a command) on the sandbox's copy of
// the project, follow its events as a transcript (sandbox/task), its
// status and duration, Cancel; once it ended, its change file by file
// (a file's patch on click), Apply into the project (a conflict names the
// files) or Discard. It shows the project's newest task, whoever started
// it. What a task prints is the sandbox's text: set as text only.

import { messageOf } from './model.js';
import { entryOf, statusText, patchOf, argvOf, argvText } from './transcript.js';

/** @typedef {import('../client/pilot-sandbox.js').Client} Client */
/** @typedef {import('../client/types.js').Task} Task */
/** @typedef {import('../client/types.js').TaskEvent} TaskEvent */
/** @typedef {import('../client/types.js').TaskDiff} TaskDiff */

/** How many transcript lines stay on the page; older ones are dropped. */
const MAX_LINES = 2000;

export class TasksSection {
  /** @type {Client | null} */
  #client = null;
  #project = '';
  #running = false;
  /** @type {(() => void)[]} */
  #unsubscribe = [];
  /** @type {Task | null} the task shown */
  #task = null;
  #seq = 0; // the last event shown
  #starting = false; // a start of this section is in flight
  /** @type {TaskDiff | null} */
  #diff = null;
  /** @type {ReturnType<typeof setInterval> | undefined} */
  #ticker;
  #root;

  /** @param {ShadowRoot} root the panel's, with template.js's markup */
  constructor(root) {
    this.#root = root;
    const agent = /** @type {HTMLSelectElement} */ (this.#$('.task-form select[name=agent]'));
    agent.addEventListener('change', () => this.#showFields());
    this.#$('.task-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.#start();
    });
    this.#$('.task-cancel').addEventListener('click', () => this.#call((c, id) => c.cancelTask(id)));
    this.#$('.task-apply').addEventListener('click', () => this.#apply());
    this.#$('.task-discard').addEventListener('click', () => this.#call(async (c, id) => {
      await c.discardTask(id);
      this.#diff = { base: '', files: [], patch: '', patchTruncated: false };
      this.#drawDiff('Discarded: the sandbox\'s copy is back to the project as it was synced.');
    }));
    this.#showFields();
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
    this.#$('details.tasks').hidden = !running;
    if (attached) this.#attach();
    if (attached || started) this.#loadNewest();
  }

  #attach() {
    for (const off of this.#unsubscribe) off();
    this.#unsubscribe = [];
    this.#show(null, []);
    const client = this.#client;
    if (!client) return;
    this.#unsubscribe.push(client.onTask(({ taskId, projectPath, seq, event }) => {
      if (projectPath !== this.#project || client !== this.#client) return;
      // A new task of the project (from here, the CLI or another app) is
      // the one shown from its first event on.
      if (event.type === 'started' && taskId !== this.#task?.taskId) {
        this.#show(placeholder(taskId, projectPath, event), []);
      }
      if (taskId !== this.#task?.taskId || seq <= this.#seq) return;
      this.#seq = seq;
      this.#append([event]);
      if (event.type === 'finished') this.#finished(event);
    }));
  }

  /** Shows the project's newest task, with its events so far. */
  async #loadNewest() {
    const client = this.#client;
    if (!client || !this.#running) return;
    try {
      const { tasks } = await client.listTasks(this.#project);
      if (client !== this.#client || !tasks.length || tasks[0].taskId === this.#task?.taskId) return;
      const { task, events } = await client.getTask(tasks[0].taskId);
      if (client !== this.#client) return;
      this.#show(task, events);
      this.#seq = task.events;
      if (task.status !== 'running') await this.#readDiff();
    } catch (err) {
      this.#error(err);
    }
  }

  async #start() {
    const client = this.#client;
    if (!client || this.#starting) return;
    const form = /** @type {HTMLFormElement} */ (this.#$('.task-form'));
    const agent = /** @type {'claude' | 'codex' | 'command'} */ (/** @type {HTMLSelectElement} */ (form.elements.namedItem('agent')).value);
    const prompt = /** @type {HTMLTextAreaElement} */ (form.elements.namedItem('prompt')).value.trim();
    const argv = argvOf(/** @type {HTMLTextAreaElement} */ (form.elements.namedItem('argv')).value);
    this.#$('.tasks-error').textContent = '';
    const submit = /** @type {HTMLButtonElement} */ (form.querySelector('button[type=submit]'));
    submit.setAttribute('aria-disabled', 'true');
    this.#starting = true;
    try {
      const { taskId, task } = await client.startTask(this.#project, agent === 'command' ? { agent, command: argv } : { agent, prompt });
      if (client !== this.#client) return;
      // Its started event may have come first and shown it already.
      if (this.#task?.taskId === taskId) {
        this.#task = { ...task, status: this.#task.status, finished: this.#task.finished };
        this.#drawTitle();
        this.#drawStatus();
      } else {
        this.#show(task, []);
      }
    } catch (err) {
      this.#error(err);
    } finally {
      this.#starting = false;
      submit.setAttribute('aria-disabled', 'false');
    }
  }

  /**
   * Shows a task afresh: its title, status, and these events.
   *
   * @param {Task | null} task
   * @param {TaskEvent[]} events
   */
  #show(task, events) {
    this.#task = task;
    this.#seq = 0;
    this.#diff = null;
    this.#$('.transcript').replaceChildren();
    this.#$('.apply-result').textContent = '';
    this.#$('.task').hidden = !task;
    this.#drawTitle();
    if (task) this.#append(events);
    this.#drawDiff('');
    this.#drawStatus();
  }

  /** What the task shown does: its agent and prompt, or its command. */
  #drawTitle() {
    const task = this.#task;
    const what = !task ? '' : task.agent === 'command' ? argvText(task.argv) : task.prompt ?? '';
    this.#$('.task-title').textContent = task ? `${AGENTS[task.agent] ?? task.agent}: ${what.length > 300 ? `${what.slice(0, 300)}…` : what}` : '';
  }

  /**
   * Adds events to the transcript.
   *
   * @param {TaskEvent[]} events
   */
  #append(events) {
    const list = this.#$('.transcript');
    const atEnd = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
    for (const e of events) {
      const entry = entryOf(e);
      if (!entry) continue;
      const li = document.createElement('li');
      li.dataset.kind = entry.kind;
      if (entry.title) {
        const title = document.createElement('span');
        title.className = 'entry-title';
        title.textContent = entry.title;
        li.append(title);
      }
      const text = document.createElement('span');
      text.className = 'entry-text';
      text.textContent = entry.text;
      li.append(text);
      list.append(li);
    }
    while (list.childElementCount > MAX_LINES) list.firstElementChild?.remove();
    if (atEnd) list.scrollTop = list.scrollHeight;
  }

  /**
   * The task ended: its status, then its change.
   *
   * @param {TaskEvent} event
   */
  #finished(event) {
    if (!this.#task) return;
    this.#task = { ...this.#task, status: event.status, finished: event, finishedAt: this.#task.startedAt + (event.durationMs ?? 0) };
    this.#drawStatus();
    this.#readDiff();
  }

  async #readDiff() {
    const client = this.#client;
    const task = this.#task;
    if (!client || !task) return;
    try {
      const diff = await client.diffTask(task.taskId);
      if (client !== this.#client || task.taskId !== this.#task?.taskId) return;
      this.#diff = diff;
      this.#drawDiff('');
    } catch (err) {
      this.#error(err);
    }
  }

  async #apply() {
    await this.#call(async (client, id) => {
      try {
        const { applied } = await client.applyTask(id);
        this.#$('.apply-result').textContent = applied.length
          ? `Applied to the project: ${applied.join(', ')}` : 'Nothing to apply: the project already has this change.';
      } catch (/** @type {any} */ err) {
        if (err?.kind !== 'conflict') throw err;
        const paths = Array.isArray(err.data?.paths) ? err.data.paths.map(String) : [];
        this.#$('.apply-result').textContent = `Not applied: these files changed in the project since the task started: ${paths.join(', ')}. Nothing was written.`;
      }
    });
  }

  /**
   * Calls the sidecar about the task shown, saying why when it fails.
   *
   * @param {(client: Client, taskId: string) => Promise<unknown>} call
   */
  async #call(call) {
    const client = this.#client;
    const id = this.#task?.taskId;
    if (!client || !id) return;
    this.#$('.tasks-error').textContent = '';
    try {
      await call(client, id);
    } catch (err) {
      this.#error(err);
    }
  }

  /** @param {unknown} err */
  #error(err) {
    if (/** @type {any} */ (err)?.name === 'ConnectionClosedError') return;
    this.#$('.tasks-error').textContent = messageOf(err);
  }

  /** The status line, Cancel, and a ticking duration while it runs. */
  #drawStatus() {
    const task = this.#task;
    const running = task?.status === 'running';
    // A change of status is told to a screen reader; the ticking is not.
    this.#$('.task-status').setAttribute('aria-live', 'polite');
    this.#$('.task-status').textContent = task ? statusText(task, Date.now()) : '';
    this.#$('.task-status').dataset.status = task?.status ?? '';
    this.#$('.task-cancel').hidden = !running;
    clearInterval(this.#ticker);
    this.#ticker = undefined;
    if (running) {
      this.#ticker = setInterval(() => {
        if (this.#task !== task) return;
        this.#$('.task-status').setAttribute('aria-live', 'off');
        this.#$('.task-status').textContent = statusText(task, Date.now());
      }, 1000);
    }
  }

  /**
   * The change, file by file; a file's button shows its patch.
   *
   * @param {string} note said instead of the list when set
   */
  #drawDiff(note) {
    const diff = this.#diff;
    this.#$('.diff').hidden = !diff;
    this.#$('.diff-patch').hidden = true;
    const has = !!diff && diff.files.length > 0 && !note;
    this.#$('.diff-actions').hidden = !has;
    const rows = (diff?.files ?? []).map((f) => {
      const li = document.createElement('li');
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'diff-file';
      b.textContent = f.path;
      b.setAttribute('aria-label', `Show the change of ${f.path}`);
      b.addEventListener('click', () => this.#showPatch(f.path, f.binary));
      const counts = document.createElement('span');
      counts.className = 'diff-counts';
      counts.textContent = `${f.status}${f.binary ? ', binary' : `, +${f.additions} −${f.deletions}`}`;
      li.append(b, counts);
      return li;
    });
    if (diff && !has) {
      const li = document.createElement('li');
      li.className = 'hint';
      li.textContent = note || 'No change.';
      rows.splice(0, rows.length, li);
    }
    this.#$('.diff-files').replaceChildren(...rows);
  }

  /**
   * @param {string} path
   * @param {boolean} binary
   */
  #showPatch(path, binary) {
    const pre = this.#$('.diff-patch');
    const patch = patchOf(this.#diff?.patch ?? '', path);
    pre.textContent = patch || (binary ? `${path} is binary: no text to show.` : `No text of the change of ${path} came with the diff (a patch is cut at 8 MiB).`);
    pre.setAttribute('aria-label', `The change of ${path}`);
    pre.hidden = false;
  }

  #showFields() {
    const command = /** @type {HTMLSelectElement} */ (this.#$('.task-form select[name=agent]')).value === 'command';
    this.#$('.task-prompt').hidden = command;
    this.#$('.task-argv').hidden = !command;
  }

  /** @param {string} selector */
  #$(selector) { return /** @type {HTMLElement} */ (this.#root.querySelector(selector)); }
}

/** @type {Record<string, string>} */
const AGENTS = { claude: 'Claude Code', codex: 'Codex', command: 'Command' };

/**
 * A task known only from its started event, until the sidecar's answer or
 * a get says more.
 *
 * @param {string} taskId
 * @param {string} projectPath
 * @param {TaskEvent} started
 * @returns {Task}
 */
function placeholder(taskId, projectPath, started) {
  return {
    taskId, projectPath, agent: started.agent ?? 'command', argv: Array.isArray(started.argv) ? started.argv : [],
    timeout: '', container: '', base: String(started.base ?? ''), status: 'running',
    startedAt: Date.now() - (Number(started.timeMs) || 0), events: 0,
  };
}
