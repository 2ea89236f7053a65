// <pilot-sandbox-panel project="/abs/path">: the sandbox panel. It shows a
// project's sandbox (status, Start and Stop, the agent-tools switch, and
// the live desktop in the sandbox's viewer page, to watch or to take
// control), beside it the sandbox's permission questions, its tasks and its
// network log (network.js, tasks.js), follows the sidecar's events, and
// never needs a reload.
//
// It talks to the sidecar through a ui/client Client that its host sets:
// `panel.client = await connectWebSocket(url)` in a browser (main.js does),
// or a Client over the desktop app's own IPC. `project` must be the
// project's canonical path (absolute, symlinks resolved): events are
// matched by it.

import { initialModel, phase, controls, viewerSource, messageOf } from './model.js';
import { panelMarkup } from './template.js';
import { renderPanel } from './render.js';
import { PortsSection } from './ports.js';
import { RecordingsSection } from './recordings.js';
import { NetworkSection } from './network.js';
import { TasksSection } from './tasks.js';
import { ActivitySection } from './activity.js';
import { OpenMenu } from './open.js';

/** @typedef {import('../client/pilot-sandbox.js').Client} Client */
/** @typedef {import('./model.js').Model} Model */

/** How often the panel asks again while Docker is missing. */
const DOCKER_RECHECK_MS = 5000;
const VIEWER = 'pilot-sandbox-viewer';
/**
 * How long after its frame loaded the viewer has to say something, and how
 * often a viewer that stayed silent is loaded again. Chromium on Linux
 * cancels requests in flight when a network interface comes or goes, which
 * Docker does at every container start and stop: a viewer whose scripts
 * were cancelled so never runs, and loading it again is the cure.
 */
const VIEWER_SILENCE_MS = 3000;
const VIEWER_RELOADS = 3;

export class PilotSandboxPanel extends HTMLElement {
  static observedAttributes = ['project'];

  /** @type {Client | null} */
  #client = null;
  /** @type {(() => void)[]} */
  #unsubscribe = [];
  #model = initialModel();
  #events = 0; // sandbox/event notifications seen for this project
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #dockerTimer;
  /** @type {HTMLIFrameElement | null} */
  #frame = null;
  #frameSrc = '';
  #viewerHeard = false; // the current frame's viewer has said something
  #viewerReloads = 0; // silent viewers loaded again in a row
  #root;
  #ports;
  #recordings;
  #network;
  #tasks;
  #activity;
  #open;

  constructor() {
    super();
    this.#root = this.attachShadow({ mode: 'open' });
    this.#root.innerHTML = panelMarkup(new URL('./panel.css', import.meta.url).href);
    this.#ports = new PortsSection(this.#root);
    this.#recordings = new RecordingsSection(this.#root);
    this.#network = new NetworkSection(this.#root);
    this.#network.onChange = () => this.#drawSide();
    this.#tasks = new TasksSection(this.#root);
    this.#activity = new ActivitySection(this.#root);
    this.#open = new OpenMenu(this.#root);
    this.#on('.start', () => this.#start());
    this.#on('.start-sandbox', () => this.#start());
    this.#on('.stop', () => this.#stop());
    this.#on('.approve', () => this.#approve());
    this.#on('.cancel-approval', () => this.#set({ approval: null }));
    this.#on('.switch', () => this.#toggleTools());
    this.#on('.recheck', () => this.#load());
    this.#on('.clipboard-copy', () => this.#copyClipboard());
    this.#on('.reconnect', () => {
      this.#viewerReloads = 0;
      this.#reloadFrame();
    });
    for (const radio of this.#root.querySelectorAll('input[name=mode]')) {
      radio.addEventListener('change', () => this.#set({ mode: /** @type {any} */ (radio).value }));
    }
  }

  get project() { return this.getAttribute('project') ?? ''; }
  set project(value) { this.setAttribute('project', value); }

  /**
   * The address the player loads a recording from (`pilot-sandbox ui`:
   * /recordings/ID?token=T); null shows the recordings without a player.
   */
  get recordingUrl() { return this.#recordings.recordingUrl; }
  set recordingUrl(fn) { this.#recordings.recordingUrl = fn; }

  /**
   * Marks on the player's scrubber: [{timeMs, label}] from the start of
   * the recording shown.
   *
   * @param {{timeMs: number, label: string}[]} marks
   */
  setRecordingMarks(marks) { this.#recordings.setMarks(marks); }

  /** The connection to the sidecar; setting another one starts afresh. */
  get client() { return this.#client; }
  set client(client) { this.#attach(client); }

  /**
   * Shows that no connection to the sidecar could be made, and why.
   *
   * @param {string} message
   */
  connectionFailed(message) {
    this.#attach(null);
    this.#set({ connection: 'lost', connectionError: message });
  }

  connectedCallback() {
    window.addEventListener('message', this.#onMessage);
    document.addEventListener('visibilitychange', this.#onVisibility);
    this.#render();
    // Back in a document after a while away: what it shows may be old.
    if (this.#model.connection === 'connected') this.#load();
  }

  disconnectedCallback() {
    window.removeEventListener('message', this.#onMessage);
    document.removeEventListener('visibilitychange', this.#onVisibility);
    clearTimeout(this.#dockerTimer);
  }

  attributeChangedCallback() {
    this.#set({ ...initialModel(), connection: this.#model.connection, mode: this.#model.mode });
    this.#load();
  }

  /** @param {Client | null} client */
  #attach(client) {
    for (const off of this.#unsubscribe) off();
    this.#unsubscribe = [];
    this.#client = client;
    clearTimeout(this.#dockerTimer);
    this.#set({ ...initialModel(), mode: this.#model.mode });
    if (!client) return;
    this.#unsubscribe.push(
      client.onEvent(({ projectPath, state }) => {
        if (projectPath !== this.project) return;
        this.#events++;
        this.#set({
          sandbox: state,
          ...(state?.status !== 'starting' && { progress: null }),
          ...(state?.status === 'running' && { failure: null, approval: null }),
        });
      }),
      client.onProgress((progress) => {
        if (progress.projectPath === this.project) this.#set({ progress });
      }),
      client.onClose((err) => {
        clearTimeout(this.#dockerTimer);
        this.#set({ connection: 'lost', connectionError: err?.message ?? 'The sidecar closed the connection.' });
      }),
    );
    if (client.closedBy) {
      this.#set({ connection: 'lost', connectionError: client.closedBy.message });
      return;
    }
    this.#set({ connection: 'connected' });
    this.#load();
  }

  /** Reads Docker's status, then the sandbox and the tools switch. */
  async #load() {
    const client = this.#client;
    if (!client || client.closedBy || !this.project) return;
    clearTimeout(this.#dockerTimer);
    try {
      // The switch lives in the project's settings: it needs no Docker.
      const [docker, tools] = await Promise.all([client.dockerStatus(), client.getToolsEnabled(this.project)]);
      if (client !== this.#client) return;
      this.#set({ docker, toolsEnabled: tools.enabled });
      if (!docker.available) {
        this.#dockerTimer = setTimeout(() => this.#load(), DOCKER_RECHECK_MS);
        return;
      }
      const seen = this.#events;
      const sandbox = await client.status(this.project);
      if (client !== this.#client) return;
      // An event that came meanwhile is newer than the status read.
      this.#set({ loaded: true, ...(this.#events === seen && { sandbox }) });
    } catch (err) {
      this.#failed(err);
    }
  }

  async #start() {
    const client = this.#client;
    if (!client || !controls(this.#model).start) return;
    this.#set({ action: 'start', failure: null, approval: null, progress: null });
    try {
      this.#set({ sandbox: await client.start(this.project), action: null });
    } catch (/** @type {any} */ err) {
      this.#set({ action: null });
      if (err?.kind === 'needs_approval' && err.approval) this.#set({ approval: err.approval });
      else this.#failed(err);
    }
  }

  /** The user approved what the project asks: record it, then start. */
  async #approve() {
    const client = this.#client;
    const approval = this.#model.approval;
    if (!client || !approval || this.#model.action !== null) return;
    this.#set({ action: 'start', approval: null, failure: null, progress: null });
    try {
      await client.approve(this.project, approval.digest);
    } catch (err) {
      this.#set({ action: null });
      this.#failed(err);
      return;
    }
    this.#set({ action: null });
    await this.#start();
  }

  async #stop() {
    const client = this.#client;
    if (!client || !controls(this.#model).stop) return;
    this.#set({ action: 'stop', failure: null });
    try {
      this.#set({ sandbox: await client.stop(this.project), action: null });
    } catch (err) {
      this.#set({ action: null });
      this.#failed(err);
    }
  }

  async #toggleTools() {
    const client = this.#client;
    if (!client || !controls(this.#model).tools) return;
    this.#set({ toolsPending: true, toolsError: '' });
    try {
      const { enabled } = await client.setToolsEnabled(this.project, !this.#model.toolsEnabled);
      this.#set({ toolsEnabled: enabled, toolsPending: false });
    } catch (err) {
      this.#set({ toolsPending: false, toolsError: `Could not change it: ${messageOf(err)}` });
    }
  }

  /**
   * A call failed: Docker went away (read its status again), the
   * connection closed (onClose says so), or the sidecar said why.
   *
   * @param {any} err
   */
  #failed(err) {
    if (err?.name === 'ConnectionClosedError') return;
    if (err?.kind === 'docker_unavailable') {
      this.#load();
      return;
    }
    this.#set({ loaded: true, failure: { message: messageOf(err), log: err?.log } });
  }

  /** @param {MessageEvent} event */
  #onMessage = (event) => {
    const data = event.data;
    if (!this.#frame || event.source !== this.#frame.contentWindow || data?.source !== VIEWER) return;
    if (data.type === 'release-focus') {
      /** @type {HTMLElement | null} */ (this.#root.querySelector('input[name=mode]:checked'))?.focus();
    }
    this.#viewerHeard = true;
    if (data.type === 'clipboard' && typeof data.text === 'string') {
      this.#set({ clipboard: { text: data.text, written: data.written === true } });
    }
    if (data.type === 'state') {
      if (data.state === 'connected') this.#viewerReloads = 0;
      this.#set({ viewer: data.state, viewerMessage: String(data.message ?? '') });
      if (data.state === 'disconnected') this.#desktopLost();
    }
  };

  /**
   * The user's click on Copy: the desktop's text goes to this computer's
   * clipboard now, by the user's own gesture (viewer.js writes it only
   * after a copy key in control).
   */
  async #copyClipboard() {
    const clip = this.#model.clipboard;
    if (!clip) return;
    const written = await navigator.clipboard?.writeText(clip.text).then(() => true, () => false);
    if (written && this.#model.clipboard === clip) this.#set({ clipboard: { ...clip, written: true } });
  }

  /**
   * The viewer lost the desktop: find out whether the sandbox went away (the
   * state then says so), else connect again, a few times, before leaving it
   * to the Reconnect button.
   */
  async #desktopLost() {
    const frame = this.#frame;
    await this.#load();
    if (frame !== this.#frame || phase(this.#model) !== 'running' || this.#viewerReloads >= VIEWER_RELOADS) return;
    this.#viewerReloads++;
    // A sandbox being stopped (docker stop) still reads as running for as
    // long as its stop takes: ask again before connecting again, so the
    // viewer never dials the ports of a desktop that went away.
    setTimeout(async () => {
      if (frame !== this.#frame) return;
      await this.#load();
      if (frame === this.#frame && phase(this.#model) === 'running') this.#reloadFrame();
    }, 1000);
  }

  #onVisibility = () => {
    if (document.visibilityState === 'visible' && this.#model.connection === 'connected') this.#load();
  };

  #reloadFrame() {
    this.#frameSrc = '';
    this.#render();
  }

  /** @param {Partial<Model>} patch */
  #set(patch) {
    this.#model = { ...this.#model, ...patch };
    // Each time the desktop comes up, the panel watches until told
    // otherwise: a click meant for the panel must not land in the agent's work.
    if (this.#model.mode !== 'watch' && phase(this.#model) !== 'running') this.#model.mode = 'watch';
    // What the desktop's clipboard gave belongs to that desktop.
    if (this.#model.clipboard && phase(this.#model) !== 'running') this.#model.clipboard = null;
    this.#render();
  }

  /**
   * @param {string} selector
   * @param {() => void} handler
   */
  #on(selector, handler) {
    this.#root.querySelector(selector)?.addEventListener('click', handler);
  }

  #render() {
    const focused = /** @type {HTMLElement | null} */ (this.#root.activeElement);
    renderPanel(this.#root, this.#model, this.project);
    const client = this.#model.connection === 'connected' ? this.#client : null;
    const running = phase(this.#model) === 'running';
    this.#ports.update(client, this.project, running);
    this.#recordings.update(client, this.project, running);
    this.#network.update(client, this.project, running);
    this.#tasks.update(client, this.project, running);
    this.#activity.update(client, this.project, running);
    this.#open.update(client, this.project, running, this.#model.sandbox?.imageVariant);
    this.#drawSide();
    this.#syncFrame();
    if (focused && focused.closest('[hidden]')) this.#moveFocus();
  }

  /**
   * The column beside the desktop: while the sandbox runs (tasks, the
   * network), and whenever a question waits.
   */
  #drawSide() {
    const side = /** @type {HTMLElement} */ (this.#root.querySelector('.side'));
    side.hidden = phase(this.#model) !== 'running' && !this.#network.asking;
  }

  /** Keeps the iframe's address in step with the sandbox and the mode. */
  #syncFrame() {
    const src = viewerSource(this.#model);
    if (src === this.#frameSrc) return;
    this.#frame?.remove();
    this.#frame = null;
    this.#frameSrc = src;
    if (!src) return;
    const frame = document.createElement('iframe');
    frame.title = this.#model.mode === 'control'
      ? 'Sandbox desktop, in control: your mouse and keyboard go to it'
      : 'Sandbox desktop, watching: view only';
    // Its own origin (the noVNC port) and scripts, nothing more: no
    // navigating this page, no pop-ups, no forms.
    frame.setAttribute('sandbox', 'allow-scripts allow-same-origin');
    frame.referrerPolicy = 'no-referrer';
    // The clipboard both ways, in control (docs/sandbox.md, Copy and paste): a
    // frame of another origin may use it only if allowed here.
    if (this.#model.mode === 'control') frame.allow = 'clipboard-read; clipboard-write';
    frame.src = src;
    frame.addEventListener('load', () => this.#expectViewer(frame));
    this.#root.querySelector('.frame-slot')?.append(frame);
    this.#frame = frame;
    this.#viewerHeard = false;
    this.#model = { ...this.#model, viewer: 'connecting', viewerMessage: '' };
    renderPanel(this.#root, this.#model, this.project);
  }

  /**
   * The frame loaded: its viewer must speak soon, or be loaded again.
   *
   * @param {HTMLIFrameElement} frame
   */
  #expectViewer(frame) {
    setTimeout(() => {
      if (frame !== this.#frame || this.#viewerHeard) return;
      if (this.#viewerReloads++ < VIEWER_RELOADS) {
        this.#reloadFrame();
        return;
      }
      this.#set({ viewer: 'failed', viewerMessage: 'The desktop viewer did not load.' });
    }, VIEWER_SILENCE_MS);
  }

  /** Focus was on something now hidden: put it on what the phase offers. */
  #moveFocus() {
    const section = this.#root.querySelector('section:not([hidden])');
    const candidates = [
      ...(section?.querySelectorAll('button') ?? []),
      this.#root.querySelector('input[name=mode]:checked'),
      section?.querySelector('h2'),
    ];
    const target = /** @type {HTMLElement | undefined} */ (candidates.find((el) => el?.checkVisibility()));
    if (!target) return;
    if (target.tagName === 'H2') target.tabIndex = -1;
    target.focus();
  }
}

if (!customElements.get('pilot-sandbox-panel')) customElements.define('pilot-sandbox-panel', PilotSandboxPanel);
