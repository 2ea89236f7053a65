// What the panel says about the network: a permission question's cause and
// destination, the time it has left, a line of the connection log, the
// policy's preset. Plain data and pure functions, tested without a browser
// (test/asks.test.js); network.js draws them. Everything here comes from
// the sandbox (a host name, a command line) and is returned as text for
// textContent, never as markup.

/** @typedef {import('../client/types.js').PermissionRequest} PermissionRequest */
/** @typedef {import('../client/types.js').NetworkLogEntry} NetworkLogEntry */

/** The longest piece of sandbox text a line shows; the rest is cut with "…". */
export const MAX_SHOWN = 300;

/**
 * s, at most max characters (code points), cut with "…".
 *
 * @param {unknown} s
 * @param {number} [max]
 * @returns {string}
 */
export function clip(s, max = MAX_SHOWN) {
  const chars = [...String(s ?? '')];
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : chars.join('');
}

/**
 * What led to a connection, in words, as the question or the log entry
 * says (docs/protocol.md, Permission requests: {tool, requestId}, {exec},
 * {task}, {browser}); empty when it does not say.
 *
 * @param {{tool?: string, requestId?: string, exec?: string, task?: string, browser?: string} | undefined | null} cause
 * @returns {string}
 */
export function causeText(cause) {
  if (!cause || typeof cause !== 'object') return '';
  if (cause.tool) return `the agent's tool call ${clip(cause.tool, 80)}${cause.requestId ? ` (request ${clip(cause.requestId, 40)})` : ''}`;
  if (cause.exec) return `the command \`${clip(cause.exec)}\``;
  if (cause.task) return `task ${clip(cause.task, 80)}`;
  if (cause.browser) return `the browser's page ${clip(cause.browser)}`;
  return '';
}

/**
 * A network question's destination and who connects, one item a line.
 *
 * @param {PermissionRequest} q
 * @returns {{label: string, value: string}[]}
 */
export function questionFacts(q) {
  /** @type {{label: string, value: string}[]} */
  const facts = [];
  const d = q.detail && typeof q.detail === 'object' ? q.detail : {};
  if (q.kind === 'network' && d.host !== undefined) {
    facts.push({ label: 'Destination', value: `${clip(d.host, 260)}:${Number(d.port) || '?'} (${clip(d.protocol ?? 'tcp', 8)})` });
    if (d.sni && d.sni !== d.host) facts.push({ label: 'TLS name', value: clip(d.sni, 260) });
    if (d.process?.command) facts.push({ label: 'Process', value: `${clip(d.process.command)}${d.process.pid ? ` (pid ${Number(d.process.pid)})` : ''}` });
  }
  const cause = causeText(q.cause);
  facts.push({ label: 'Cause', value: cause || 'not known' });
  return facts;
}

/**
 * How long a question waits still, in whole seconds (0 once past).
 *
 * @param {PermissionRequest} q
 * @param {number} now Unix milliseconds
 * @returns {number}
 */
export function secondsLeft(q, now) {
  return Math.max(0, Math.ceil((q.expiresAt - now) / 1000));
}

/**
 * The queue with a question added (oldest first, no id twice), of the
 * project only.
 *
 * @param {PermissionRequest[]} queue
 * @param {PermissionRequest} q
 * @param {string} project
 * @returns {PermissionRequest[]}
 */
export function enqueue(queue, q, project) {
  if (q.projectPath !== project || queue.some((x) => x.id === q.id)) return queue;
  return [...queue, q];
}

/**
 * The queue without a question.
 *
 * @param {PermissionRequest[]} queue
 * @param {string} id
 * @returns {PermissionRequest[]}
 */
export function dequeue(queue, id) {
  return queue.filter((x) => x.id !== id);
}

/** @type {Record<string, string>} */
const DECIDERS = {
  rule: 'by a rule', preset: 'by the preset', user: 'by you', timeout: 'no answer in time', fixed: 'always denied',
};

/**
 * A line of the connection log: when, where, what was decided and by whom,
 * bytes each way, and the cause.
 *
 * @param {NetworkLogEntry} e
 * @returns {{time: string, destination: string, decision: 'allow' | 'deny', by: string, bytes: string, cause: string}}
 */
export function logLine(e) {
  const by = DECIDERS[e.by] ?? clip(e.by, 20);
  const rule = e.rule ? ` (${clip(e.rule, 100)})` : '';
  return {
    time: new Date(e.time).toLocaleTimeString(),
    destination: `${clip(e.host, 260)}:${Number(e.port) || '?'}${e.protocol && e.protocol !== 'tcp' ? ` ${clip(e.protocol, 8)}` : ''}`,
    decision: e.decision === 'allow' ? 'allow' : 'deny',
    by: `${by}${rule}${e.reason ? `: ${clip(e.reason)}` : ''}`,
    bytes: e.decision === 'allow' ? `${bytes(e.bytesOut)} out, ${bytes(e.bytesIn)} in` : '',
    cause: causeText(e.cause),
  };
}

/**
 * @param {number} n
 * @returns {string}
 */
function bytes(n) {
  const v = Number(n) || 0;
  if (v < 1024) return `${v} B`;
  if (v < 1024 * 1024) return `${(v / 1024).toFixed(1)} KiB`;
  return `${(v / 1024 / 1024).toFixed(1)} MiB`;
}

/** @type {Record<string, string>} */
const OTHERWISE = { allow: 'everything else is allowed', ask: 'everything else asks you', deny: 'everything else is denied' };

/**
 * The policy's preset in words (sandbox/network/policy's preset: {name,
 * source, otherwise}), or that the sandbox has no network.
 *
 * @param {any} policy
 * @returns {string}
 */
export function presetText(policy) {
  if (!policy || typeof policy !== 'object') return '';
  if (policy.none) return 'No network';
  const p = policy.preset;
  if (!p?.name) return '';
  const from = p.source === 'default' ? 'the default' : `from ${p.source === 'repository' ? 'the project' : 'your config.json'}`;
  const rest = OTHERWISE[p.otherwise] ?? '';
  return `Preset ${clip(p.name, 20)} (${from})${rest ? `: ${rest}` : ''}`;
}
