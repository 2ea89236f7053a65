// What the Tasks section says: a task's events as a readable transcript
// (not raw JSON), its status and duration, its diff split file by file,
// and the argv typed into the form. Pure functions, tested without a
// browser (test/transcript.test.js); tasks.js draws them. A task's output
// is the sandbox's text: returned as text for textContent, never markup.

/** @typedef {import('../client/types.js').TaskEvent} TaskEvent */
/** @typedef {import('../client/types.js').Task} Task */

/** How much of a tool's input or output a transcript entry shows. */
const MAX_TOOL_TEXT = 2000;

/**
 * @typedef {object} Entry one line of the transcript
 * @property {'text' | 'reasoning' | 'tool' | 'result' | 'error' | 'line' | 'stderr' | 'note'} kind
 * @property {string} text
 * @property {string} [title] what it is, before the text (a tool's name)
 */

/**
 * One event as a transcript entry, or null for what the transcript does
 * not show as a line of its own (started, finished: the status says them).
 *
 * @param {TaskEvent} e
 * @returns {Entry | null}
 */
export function entryOf(e) {
  switch (e.type) {
    case 'text':
      return { kind: e.reasoning ? 'reasoning' : 'text', text: String(e.text ?? '') + (e.cut ? ' …(cut)' : '') };
    case 'tool':
      return { kind: 'tool', title: String(e.name ?? 'tool'), text: short(inputText(e.input)) };
    case 'toolResult':
      return { kind: e.isError ? 'error' : 'result', title: String(e.name ?? ''), text: short(String(e.output ?? '')) + (e.cut ? ' …(cut)' : '') };
    case 'line':
      return { kind: e.stream === 'stderr' ? 'stderr' : 'line', text: String(e.text ?? '') + (e.cut ? ` …(${e.cut} bytes, cut)` : '') };
    case 'usage':
      return { kind: 'note', text: usageText(e) };
    case 'started':
    case 'finished':
      return null;
    default:
      return { kind: 'note', text: `(an event of type ${short(String(e.type), 40)})` };
  }
}

/**
 * A tool's input for people: a command or a path as it is, else its JSON
 * on one line.
 *
 * @param {unknown} input
 * @returns {string}
 */
function inputText(input) {
  if (typeof input === 'string') return input;
  if (input && typeof input === 'object') {
    const o = /** @type {Record<string, unknown>} */ (input);
    for (const key of ['command', 'cmd', 'file_path', 'path', 'url', 'query', 'pattern']) {
      if (typeof o[key] === 'string') return /** @type {string} */ (o[key]);
    }
  }
  return JSON.stringify(input) ?? '';
}

/**
 * @param {string} s
 * @param {number} [max]
 */
function short(s, max = MAX_TOOL_TEXT) {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** @param {TaskEvent} e */
function usageText(e) {
  const parts = [`${Number(e.inputTokens) || 0} tokens in`, `${Number(e.outputTokens) || 0} out`];
  if (typeof e.costUsd === 'number') parts.push(`$${e.costUsd.toFixed(4)}`);
  return `Usage: ${parts.join(', ')}`;
}

/** @type {Record<Task['status'], string>} */
const STATUS = {
  running: 'Running', succeeded: 'Succeeded', failed: 'Failed', cancelled: 'Cancelled', timed_out: 'Timed out', lost: 'Lost',
};

/**
 * The task's status and how long it ran (or runs, at now), for the line
 * above its transcript.
 *
 * @param {Task} task
 * @param {number} now Unix milliseconds
 * @returns {string}
 */
export function statusText(task, now) {
  const label = STATUS[task.status] ?? String(task.status);
  const ms = task.finished?.durationMs ?? ((task.finishedAt ?? now) - task.startedAt);
  const parts = [`${label}, ${durationText(ms)}`];
  const f = task.finished;
  if (f && task.status !== 'running') {
    if (typeof f.exitCode === 'number' && task.status !== 'cancelled') parts.push(`exit code ${f.exitCode}`);
    if (typeof f.turns === 'number') parts.push(`${f.turns} turns`);
    if (typeof f.costUsd === 'number') parts.push(`$${f.costUsd.toFixed(4)}`);
    if (f.droppedLines) parts.push(`${f.droppedLines} lines only in the sandbox's output file`);
    if (f.error) parts.push(short(String(f.error), 300));
  }
  return parts.join(' · ');
}

/**
 * @param {number} ms
 * @returns {string} 40 ms, 2.4 s, 12 s, 3 min 05 s, 1 h 02 min
 */
export function durationText(ms) {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = ms / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.floor(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(Math.floor(s % 60)).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

/**
 * The part of a unified patch (git's) that is about path: from its
 * `diff --git` line to the next one; empty when the patch has none (it
 * was cut at its bound, or the file is binary).
 *
 * @param {string} patch
 * @param {string} path
 * @returns {string}
 */
export function patchOf(patch, path) {
  const starts = [...patch.matchAll(/^diff --git /gm)].map((m) => /** @type {number} */ (m.index));
  for (let i = 0; i < starts.length; i++) {
    const chunk = patch.slice(starts[i], starts[i + 1] ?? patch.length);
    const header = chunk.slice(0, chunk.indexOf('\n') + 1 || chunk.length);
    // git quotes unusual names ("a/x y"); both forms name the path.
    if (header === `diff --git a/${path} b/${path}\n` || header.includes(` b/${path}\n`) || header.includes(`"b/${path}"`)) return chunk;
  }
  return '';
}

/**
 * A command typed into the form, one argument a line (no shell: what is
 * typed is what runs), blank lines left out.
 *
 * @param {string} text
 * @returns {string[]}
 */
export function argvOf(text) {
  return text.split('\n').map((line) => line.replace(/\r$/, '')).filter((line) => line.trim() !== '');
}

/**
 * A command's argv as one line for people: an argument with spaces or
 * quotes in it shown quoted (JSON's way), so that the words stay apart.
 *
 * @param {string[]} argv
 * @returns {string}
 */
export function argvText(argv) {
  return argv.map((a) => (a === '' || /[\s"'\\]/.test(a) ? JSON.stringify(a) : a)).join(' ');
}
