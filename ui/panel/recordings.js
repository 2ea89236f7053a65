// The panel's Recordings section (a <details> in template.js): a Record
// button that starts and stops a recording of the desktop
// (sandbox/recording/start and stop), the project's recordings
// (sandbox/recording/list), and a player for one of them. The player's
// address comes from whoever hosts the panel (recordingUrl: `pilot-sandbox
// ui` serves /recordings/ID with its token; an app serves the file its
// own way); without one the list shows no player. The scrubber shows
// marks ({timeMs, label}): what the activity timeline holds of the
// recording's time (sandbox/activity with from/to), or what setMarks gives.
// Reasons come from the sidecar: they are set as text, never as markup.

import { messageOf } from './model.js';

/** @typedef {import('../client/pilot-sandbox.js').Client} Client */
/** @typedef {import('../client/types.js').Recording} Recording */
/** @typedef {{timeMs: number, label: string}} Mark */

/** How many of a recording's timeline entries the scrubber marks at most. */
const MAX_MARKS = 100;

/** How often an open section reads the list again while one records. */
const REFRESH_MS = 3000;

export class RecordingsSection {
  /** @type {Client | null} */
  #client = null;
  #project = '';
  #running = false;
  /** @type {string | null} the recording under way, started here or found */
  #current = null;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #timer;
  #root;
  /** @type {((recording: Recording) => string) | null} */
  recordingUrl = null;
  /** @type {Mark[]} */
  #marks = [];

  /** @param {ShadowRoot} root the panel's, with template.js's markup */
  constructor(root) {
    this.#root = root;
    this.#details.addEventListener('toggle', () => this.#refresh());
    this.#$('.record').addEventListener('click', () => this.#toggle());
    this.#player.addEventListener('loadedmetadata', () => this.#drawMarks());
  }

  get #details() { return /** @type {HTMLDetailsElement} */ (this.#$('details.recordings')); }
  get #player() { return /** @type {HTMLVideoElement} */ (this.#$('video.player')); }

  /**
   * What the section works on: the list whenever connected, the Record
   * button while the sandbox runs.
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
    this.#details.hidden = !client;
    if (changed) this.#refresh();
  }

  /**
   * The marks the player's scrubber shows, at their times.
   *
   * @param {Mark[]} marks
   */
  setMarks(marks) {
    this.#marks = marks.filter((m) => Number.isFinite(m.timeMs) && m.timeMs >= 0);
    this.#drawMarks();
  }

  async #toggle() {
    const client = this.#client;
    if (!client) return;
    this.#error('');
    const button = /** @type {HTMLButtonElement} */ (this.#$('.record'));
    button.disabled = true;
    try {
      if (this.#current) {
        await client.stopRecording(this.#current);
        this.#current = null;
      } else {
        this.#current = (await client.startRecording(this.#project)).recordingId;
      }
    } catch (err) {
      this.#error(messageOf(err));
    }
    button.disabled = false;
    await this.#refresh();
  }

  /** Reads the list now if the section is open, and again while one records. */
  async #refresh() {
    clearTimeout(this.#timer);
    const client = this.#client;
    this.#drawButton();
    if (!client || !this.#details.open) return;
    try {
      const { recordings } = await client.listRecordings(this.#project);
      if (client !== this.#client) return;
      this.#current = recordings.find((r) => r.state === 'recording')?.recordingId ?? null;
      this.#draw(recordings);
    } catch (err) {
      this.#error(messageOf(err));
    }
    this.#drawButton();
    if (this.#details.open && this.#current) this.#timer = setTimeout(() => this.#refresh(), REFRESH_MS);
  }

  #drawButton() {
    const button = /** @type {HTMLButtonElement} */ (this.#$('.record'));
    button.textContent = this.#current ? 'Stop recording' : 'Record';
    button.hidden = !this.#running && !this.#current;
  }

  /** @param {Recording[]} recordings */
  #draw(recordings) {
    const list = this.#$('ul.recording-list');
    list.replaceChildren(...recordings.map((r) => {
      const li = document.createElement('li');
      const text = document.createElement('span');
      const when = new Date(r.startedAt).toLocaleString();
      const length = r.state === 'recording' ? 'recording' : `${(r.durationMs / 1000).toFixed(1)} s`;
      text.textContent = `${when}, ${length}, ${(r.bytes / 1e6).toFixed(2)} MB${r.reason ? ` (${r.reason})` : ''}`;
      li.append(text);
      if (this.recordingUrl && r.state !== 'recording') {
        const play = document.createElement('button');
        play.type = 'button';
        play.textContent = 'Play';
        play.setAttribute('aria-label', `Play the recording of ${when}`);
        play.addEventListener('click', () => this.#play(r));
        li.append(play);
      }
      return li;
    }));
    this.#$('.recordings-empty').hidden = recordings.length > 0;
  }

  /** @param {Recording} recording */
  #play(recording) {
    if (!this.recordingUrl) return;
    const player = this.#player;
    player.hidden = false;
    player.src = this.recordingUrl(recording);
    player.dataset.recordingId = recording.recordingId;
    player.play().catch(() => {}); // a player the page may not start is still loaded
    this.setMarks([]);
    this.#marksOf(recording).then((marks) => {
      if (player.dataset.recordingId === recording.recordingId) this.setMarks(marks);
    });
  }

  /**
   * The timeline's entries during the recording, as marks at their times
   * from its start; none when the timeline cannot be read (the player
   * works without them).
   *
   * @param {Recording} recording
   * @returns {Promise<Mark[]>}
   */
  async #marksOf(recording) {
    const client = this.#client;
    if (!client) return [];
    const to = recording.endedAt || recording.startedAt + recording.durationMs;
    try {
      const { entries } = await client.activity(this.#project, { from: recording.startedAt, to, brief: true, limit: MAX_MARKS });
      return entries.map((e) => ({ timeMs: e.time - recording.startedAt, label: `${e.name}: ${e.summary}` }));
    } catch {
      return [];
    }
  }

  /** The marks over the scrubber, once the video's length is known. */
  #drawMarks() {
    const bar = this.#$('.marks');
    const duration = this.#player.duration;
    if (!Number.isFinite(duration) || duration <= 0) {
      bar.replaceChildren();
      return;
    }
    bar.replaceChildren(...this.#marks.filter((m) => m.timeMs <= duration * 1000).map((m) => {
      const mark = document.createElement('button');
      mark.type = 'button';
      mark.className = 'mark';
      mark.style.left = `${(m.timeMs / 1000 / duration) * 100}%`;
      mark.title = m.label;
      mark.setAttribute('aria-label', `Go to ${m.label}`);
      mark.addEventListener('click', () => { this.#player.currentTime = m.timeMs / 1000; });
      return mark;
    }));
  }

  /** @param {string} message */
  #error(message) { this.#$('.recordings-error').textContent = message; }

  /** @param {string} selector */
  #$(selector) { return /** @type {HTMLElement} */ (this.#root.querySelector(selector)); }
}
