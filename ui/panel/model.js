// What the sandbox panel knows, and what it shows for it: plain data and
// pure functions, so the decisions are tested without a browser
// (test/model.test.js). panel.js keeps a Model up to date from the
// sidecar and draws what these functions say.

/** @typedef {import('../client/types.js').DockerStatus} DockerStatus */
/** @typedef {import('../client/types.js').SandboxState} SandboxState */
/** @typedef {import('../client/types.js').SandboxProgress} SandboxProgress */
/** @typedef {import('../client/types.js').Approval} Approval */

/**
 * @typedef {object} Failure a call of this panel that failed
 * @property {string} message what went wrong, in the sidecar's words
 * @property {string[]} [log] the last lines of a failed build or start
 */

/**
 * @typedef {'connecting' | 'connected' | 'disconnected' | 'credentials-required' | 'failed'} ViewerState
 * what the viewer page in the iframe reports
 */

/**
 * @typedef {object} Model
 * @property {'connecting' | 'connected' | 'lost'} connection to the sidecar
 * @property {string} connectionError why the connection was lost
 * @property {DockerStatus | null} docker null until known
 * @property {boolean} loaded whether the sandbox's state is known
 * @property {SandboxState | null} sandbox null when the project has none
 * @property {'start' | 'stop' | null} action a call of this panel in flight
 * @property {SandboxProgress | null} progress of the start in progress
 * @property {Failure | null} failure of the last start or stop
 * @property {Approval | null} approval what the last start asked the user to approve
 * @property {boolean | null} toolsEnabled null until known
 * @property {boolean} toolsPending a change of it is in flight
 * @property {string} toolsError why the last change failed
 * @property {'watch' | 'control'} mode what the viewer does with input
 * @property {ViewerState} viewer
 * @property {string} viewerMessage
 * @property {Clipboard | null} clipboard what the desktop's clipboard last gave the viewer
 */

/**
 * @typedef {object} Clipboard text copied in the desktop, as the viewer
 * posted it
 * @property {string} text
 * @property {boolean} written whether it is on this computer's clipboard
 */

/** @returns {Model} */
export function initialModel() {
  return {
    connection: 'connecting', connectionError: '', docker: null,
    loaded: false, sandbox: null, action: null, progress: null, failure: null, approval: null,
    toolsEnabled: null, toolsPending: false, toolsError: '',
    mode: 'watch', viewer: 'connecting', viewerMessage: '', clipboard: null,
  };
}

/**
 * @typedef {'connecting' | 'lost' | 'docker' | 'stopped' | 'approval' | 'starting' | 'running' | 'stopping' | 'error' | 'paused'} Phase
 */

/**
 * Where the panel is: which body it shows.
 *
 * @param {Model} m
 * @returns {Phase}
 */
export function phase(m) {
  if (m.connection === 'lost') return 'lost';
  if (m.connection === 'connecting' || !m.docker) return 'connecting';
  if (!m.docker.available) return 'docker';
  if (!m.loaded) return 'connecting';
  const status = m.sandbox?.status ?? 'stopped';
  // A start or stop of this panel shows at once, before the sidecar's
  // first event says so.
  if (m.action === 'start' && (status === 'stopped' || status === 'error' || status === 'paused')) return 'starting';
  if (m.action === 'stop' && (status === 'running' || status === 'paused')) return 'stopping';
  // The project's own files ask for something only the user may allow.
  if (m.approval && (status === 'stopped' || status === 'error')) return 'approval';
  if (status === 'stopped' && m.failure) return 'error';
  return status;
}

/** @typedef {'neutral' | 'busy' | 'good' | 'bad'} Tone */

/** @type {Record<Phase, {label: string, tone: Tone}>} */
const BADGES = {
  connecting: { label: 'Connecting…', tone: 'busy' },
  lost: { label: 'Disconnected', tone: 'bad' },
  docker: { label: 'No Docker', tone: 'bad' },
  stopped: { label: 'Stopped', tone: 'neutral' },
  approval: { label: 'Needs approval', tone: 'busy' },
  starting: { label: 'Starting…', tone: 'busy' },
  running: { label: 'Running', tone: 'good' },
  stopping: { label: 'Stopping…', tone: 'busy' },
  error: { label: 'Error', tone: 'bad' },
  paused: { label: 'Paused', tone: 'neutral' },
};

/**
 * The status badge: its label, its colour, and the error it stands for,
 * or why the lifecycle policy stopped the sandbox.
 *
 * @param {Model} m
 * @returns {{label: string, tone: Tone, detail: string}}
 */
export function badge(m) {
  const p = phase(m);
  let detail = '';
  if (p === 'error') detail = errorText(m);
  else if (p === 'stopped') detail = m.sandbox?.stopReason ?? '';
  else if (p === 'paused') detail = pausedText(m.sandbox?.memoryBytes);
  return { ...BADGES[p], detail };
}

/**
 * What a paused sandbox keeps, and holds.
 *
 * @param {number | undefined} memoryBytes
 * @returns {string}
 */
function pausedText(memoryBytes) {
  const held = memoryBytes ? `; it holds ${Math.round(memoryBytes / (1 << 20))} MiB of memory` : '';
  return `Every window is kept: Start resumes it as it was${held}`;
}

/**
 * What went wrong, for the error phase: the failed call's message, else the
 * sandbox's own error.
 *
 * @param {Model} m
 * @returns {string}
 */
export function errorText(m) {
  return m.failure?.message || m.sandbox?.error || 'The sandbox stopped with an error.';
}

/**
 * Which header buttons work now.
 *
 * @param {Model} m
 * @returns {{start: boolean, stop: boolean, tools: boolean, mode: boolean}}
 */
export function controls(m) {
  const p = phase(m);
  const online = m.connection === 'connected';
  return {
    start: online && m.action === null && (p === 'stopped' || p === 'error' || p === 'paused'),
    stop: online && m.action === null && (p === 'running' || p === 'paused'),
    tools: online && m.toolsEnabled !== null && !m.toolsPending,
    mode: p === 'running',
  };
}

/**
 * The progress of a start, for people: a line of text, and a fraction
 * when the sidecar counts steps (the image build does).
 *
 * @param {Model} m
 * @returns {{text: string, value: number | null, building: boolean}}
 */
export function progressOf(m) {
  const p = m.progress;
  if (!p) return { text: 'Starting the sandbox…', value: null, building: false };
  const { current, total } = p;
  const counted = total !== undefined && total > 0 && current !== undefined;
  return {
    text: p.message,
    value: counted ? Math.min(1, Math.max(0, current / total)) : null,
    building: p.stage === 'image',
  };
}

/**
 * The address the viewer frame loads: the sandbox's viewerUrl to take
 * control, its watchUrl to watch, and reconnect=false so the viewer leaves
 * reconnecting to the panel, which knows whether the sandbox still runs.
 * Empty when there is nothing to show.
 *
 * @param {Model} m
 * @returns {string}
 */
export function viewerSource(m) {
  if (phase(m) !== 'running' || !m.sandbox) return '';
  const url = m.mode === 'control' ? m.sandbox.viewerUrl : m.sandbox.watchUrl;
  if (!url) return '';
  const [page, fragment = ''] = url.split('#', 2);
  const params = new URLSearchParams(fragment);
  params.set('reconnect', 'false');
  return `${page}#${params}`;
}

/**
 * A sidecar error message without the method name the client puts first
 * ("sandbox/start: ...").
 *
 * @param {unknown} err
 * @returns {string}
 */
export function messageOf(err) {
  const text = err instanceof Error ? err.message : String(err);
  return text.replace(/^[\w$./]+: /, '');
}
