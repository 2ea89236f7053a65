// The sandbox's viewer: shows the desktop through noVNC's RFB module,
// scaled to fit the window, from the same origin as websockify (the noVNC
// port), so its modules load and its WebSocket needs no CORS.
//
// It reads no browser storage (noVNC's vnc.html reads localStorage at start
// and dies with a SecurityError when its frame has an opaque-origin parent).
//
// Parameters, in the URL fragment (never sent to a server):
//   password=P       the VNC password; without it, the viewer waits for one
//                    from its parent (below)
//   view_only=true   send no input (the watch password makes the VNC server
//                    ignore input anyway; this keeps the page from trying)
//   reconnect=false  do not reconnect by itself when the connection drops,
//                    leave it to the parent (the sandbox panel does)
//   log=debug        noVNC's log level (default warn)
//
// Messages from the parent window (postMessage, from window.parent only):
//   {target: 'pilot-sandbox-viewer', type: 'connect', password, viewOnly?}
//   {target: 'pilot-sandbox-viewer', type: 'disconnect'}
//   {target: 'pilot-sandbox-viewer', type: 'paste', text}: puts text on the
//     desktop's clipboard (ignored when watching)
// Messages to it, {source: 'pilot-sandbox-viewer', type, ...}:
//   type 'state': state is connecting | connected | disconnected |
//     credentials-required | failed, with viewOnly, width and height (the
//     desktop's size, once connected) and message (why, for the last three)
//   type 'release-focus': the user pressed Ctrl+Alt+Shift+Escape to leave the
//     desktop with the keyboard (it captures Tab and every other key)
//   type 'clipboard': text was copied in the desktop (text), and whether
//     the viewer wrote it to the browser's clipboard (written)
// They carry no password, so they go to any parent origin ('*'): an opaque
// origin cannot be named. The clipboard's text goes too: a parent that
// frames the viewer sees the desktop anyway.
//
// The clipboard both ways (README, Copy and paste):
// - Text copied in the desktop comes as noVNC's clipboard event, and is
//   posted to the parent. The viewer writes it to the browser's clipboard
//   only in control, and only when it comes within COPY_WINDOW_MS of the
//   user's copy key in this page (Ctrl+C and the like), one write a key: a
//   program in the sandbox sets the desktop's clipboard whenever it likes,
//   and a phishing line pushed into a watching viewer went to the host's
//   clipboard (issue 28, N7). A click does not count: the sandbox sees
//   every click, and a click is most of what a user does in control. What
//   was not written (a menu's Copy among it) the parent may show, and
//   write on the user's click there (the panel does). The browser also
//   allows the write only in a focused page, with clipboard-write
//   permission in a frame.
// - The browser's clipboard goes to the desktop when the viewer gets the
//   focus (a read the browser allows only with clipboard-read permission),
//   on a paste event (a paste from the browser's menu), or by message.

import RFB from '../core/rfb.js';
import { initLogging } from '../core/util/logging.js';

const SOURCE = 'pilot-sandbox-viewer';
const MAX_RECONNECT_DELAY_MS = 10_000;
// How long after the user's copy key the desktop's text may come and
// still be written: a copy in the desktop reaches the viewer in well under
// a second (pilot-clipboard hands it to x11vnc at once), more under load.
const COPY_WINDOW_MS = 3000;

const params = new URLSearchParams(location.hash.slice(1));
const flag = (/** @type {string} */ name, /** @type {boolean} */ fallback) => {
  const v = params.get(name);
  return v === null ? fallback : v === 'true' || v === '1';
};

const screen = /** @type {HTMLElement} */ (document.getElementById('screen'));
const notice = /** @type {HTMLElement} */ (document.getElementById('notice'));
const embedded = window.parent !== window;
const settings = {
  password: params.get('password') ?? '',
  viewOnly: flag('view_only', false),
  reconnect: flag('reconnect', true),
};

/** @type {RFB | null} */
let rfb = null;
let wanted = false; // whether the viewer should be connected
let reconnectDelay = 1000;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let reconnectTimer;
// The text both sides last agreed on, so neither side's copy comes back
// to it as a new one.
let lastClipboard = '';
// When (performance.now()) the user last pressed a copy key in control.
let copyGesture = -Infinity;

initLogging(params.get('log') ?? 'warn');

/**
 * Tells the parent (if any) what the viewer is doing.
 *
 * @param {Record<string, unknown>} message
 */
function post(message) {
  if (embedded) window.parent.postMessage({ source: SOURCE, ...message }, '*');
}

/**
 * @param {'connecting' | 'connected' | 'disconnected' | 'credentials-required' | 'failed'} state
 * @param {string} [message]
 */
function report(state, message = '') {
  const canvas = screen.querySelector('canvas');
  const connected = state === 'connected' && canvas;
  post({
    type: 'state', state, message, viewOnly: settings.viewOnly,
    width: connected ? canvas.width : 0, height: connected ? canvas.height : 0,
  });
  notice.textContent = embedded ? '' : message;
}

function connect() {
  clearTimeout(reconnectTimer);
  rfb?.disconnect();
  wanted = true;
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const client = new RFB(screen, `${scheme}://${location.host}/websockify`, {
    credentials: { password: settings.password },
    shared: true,
  });
  client.viewOnly = settings.viewOnly;
  client.scaleViewport = true;
  client.resizeSession = false;
  client.focusOnClick = !settings.viewOnly;
  client.background = '#1d2128';
  client.addEventListener('connect', () => {
    reconnectDelay = 1000;
    if (document.hasFocus()) readBrowserClipboard();
    report('connected');
    document.title = `Sandbox desktop${settings.viewOnly ? ' (watching)' : ''}`;
  });
  client.addEventListener('disconnect', (event) => onDisconnect(client, event.detail.clean));
  client.addEventListener('credentialsrequired', () => {
    if (settings.password) return; // a wrong one: securityfailure follows
    report('credentials-required', 'This address needs the password the sidecar gave with it (after #).');
  });
  client.addEventListener('clipboard', (event) => { fromDesktop(event.detail.text); });
  client.addEventListener('securityfailure', (event) => {
    wanted = false; // the same password would fail again
    const reason = event.detail.reason || `status ${event.detail.status}`;
    console.error(`pilot-sandbox viewer: the VNC server refused the password (${reason})`);
    report('failed', `The desktop refused the password (${reason}). The sandbox may have restarted: open its new address.`);
  });
  rfb = client;
  report('connecting', 'Connecting to the desktop…');
}

/**
 * @param {RFB} client
 * @param {boolean} clean
 */
function onDisconnect(client, clean) {
  if (client !== rfb) return; // replaced by a newer connection
  rfb = null;
  if (!wanted) return;
  report('disconnected', clean ? 'The desktop closed the connection.' : 'Lost the connection to the desktop.');
  if (!settings.reconnect) return;
  reconnectTimer = setTimeout(connect, reconnectDelay);
  reconnectDelay = Math.min(2 * reconnectDelay, MAX_RECONNECT_DELAY_MS);
}

/**
 * Text copied in the desktop: to the parent, and to the browser's
 * clipboard when the user's copy key asked for it (see the top).
 *
 * @param {string} text
 */
async function fromDesktop(text) {
  if (typeof text !== 'string' || text === lastClipboard) return;
  lastClipboard = text;
  const asked = !settings.viewOnly && performance.now() - copyGesture <= COPY_WINDOW_MS;
  copyGesture = -Infinity;
  let written = false;
  if (asked && navigator.clipboard) {
    // Rejected without the focus or the permission: the parent has the text.
    written = await navigator.clipboard.writeText(text).then(() => true, () => false);
  }
  post({ type: 'clipboard', text, written });
}

/**
 * Whether event is the user's copy key: Ctrl or Cmd with C or X (Shift
 * too, as terminals take it), or Ctrl+Insert.
 *
 * @param {KeyboardEvent} event
 */
function isCopyKey(event) {
  const key = event.key.toLowerCase();
  return (event.ctrlKey || event.metaKey) && (key === 'c' || key === 'x' || key === 'insert');
}

/**
 * Puts text on the desktop's clipboard, unless watching.
 *
 * @param {string} text
 */
function toDesktop(text) {
  if (!rfb || settings.viewOnly || typeof text !== 'string' || !text || text === lastClipboard) return;
  lastClipboard = text;
  rfb.clipboardPasteFrom(latin1(text));
}

/**
 * text as RFB's clipboard carries it: Latin-1, '?' for each character
 * beyond (x11vnc has no extended clipboard, and noVNC would keep only the
 * low byte of each UTF-16 unit: '日' would arrive as 'å'). pilot-clipboard
 * does the same the other way.
 *
 * @param {string} text
 */
function latin1(text) {
  return Array.from(text, (c) => ((c.codePointAt(0) ?? 0) > 0xff ? '?' : c)).join('');
}

/** Sends the browser's clipboard to the desktop, if the browser lets us read it. */
function readBrowserClipboard() {
  if (settings.viewOnly || !navigator.clipboard?.readText) return;
  navigator.clipboard.readText().then(toDesktop, () => {});
}

function disconnect() {
  wanted = false;
  clearTimeout(reconnectTimer);
  rfb?.disconnect();
}

window.addEventListener('message', (event) => {
  const data = event.data;
  if (event.source !== window.parent || !embedded || !data || data.target !== SOURCE) return;
  if (data.type === 'connect' && typeof data.password === 'string') {
    settings.password = data.password;
    if (typeof data.viewOnly === 'boolean') settings.viewOnly = data.viewOnly;
    connect();
  } else if (data.type === 'disconnect') {
    disconnect();
  } else if (data.type === 'paste') {
    toDesktop(data.text);
  }
});

window.addEventListener('focus', readBrowserClipboard);
window.addEventListener('paste', (event) => toDesktop(event.clipboardData?.getData('text/plain') ?? ''));

// The user's copy key, in control: capture phase, before noVNC's
// handlers on the canvas see it; isTrusted, so no script's event counts.
window.addEventListener('keydown', (event) => {
  if (event.isTrusted && !settings.viewOnly && isCopyKey(event)) copyGesture = performance.now();
}, true);

// Capture phase, before noVNC's keyboard handler on the canvas sees it.
window.addEventListener('keydown', (event) => {
  if (event.key !== 'Escape' || !event.ctrlKey || !event.altKey || !event.shiftKey) return;
  event.preventDefault();
  event.stopPropagation();
  rfb?.blur();
  post({ type: 'release-focus' });
}, true);

window.addEventListener('hashchange', () => location.reload());

if (settings.password || !embedded) {
  connect();
} else {
  report('credentials-required', 'Waiting for the password from the page around the viewer.');
}
