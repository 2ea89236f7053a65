// Draws a panel's Model (model.js) into its markup (template.js): which
// section shows, what the badge and the buttons say, the progress bar,
// the viewer's overlay. Pure DOM updates, no calls to the sidecar.

import { phase, badge, controls, progressOf, errorText } from './model.js';

/** @typedef {import('./model.js').Model} Model */
/** @typedef {import('../client/types.js').Approval} Approval */

/**
 * Draws the model into the panel's markup (template.js).
 *
 * @param {ShadowRoot} root
 * @param {Model} m
 * @param {string} project
 */
export function renderPanel(root, m, project) {
  const $ = (/** @type {string} */ selector) => /** @type {HTMLElement} */ (root.querySelector(selector));
  const p = phase(m);
  const b = badge(m);
  const can = controls(m);

  $('.badge').dataset.tone = b.tone;
  $('.badge .label').textContent = b.label;
  $('.badge-detail').textContent = b.detail;
  $('.badge-detail').title = b.detail;
  $('.project').textContent = project.split('/').filter(Boolean).pop() ?? '';
  $('.project').title = project;

  setEnabled($('.start'), can.start);
  setEnabled($('.stop'), can.stop);
  setEnabled($('.start-sandbox'), can.start);
  setEnabled($('.switch'), can.tools);
  $('.switch').setAttribute('aria-checked', String(m.toolsEnabled === true));
  $('.switch').setAttribute('aria-busy', String(m.toolsPending));
  $('.tools-error').textContent = m.toolsError;

  $('.modebar').hidden = !can.mode;
  for (const radio of root.querySelectorAll('input[name=mode]')) {
    const input = /** @type {HTMLInputElement} */ (radio);
    input.checked = input.value === m.mode;
  }
  $('.clipboard-note').hidden = !m.clipboard;
  $('.clipboard-text').textContent = clipPreview(m.clipboard?.text ?? '');
  $('.clipboard-text').title = m.clipboard?.text.slice(0, 2000) ?? '';
  $('.clipboard-copy').hidden = m.clipboard?.written !== false;
  $('.clipboard-written').hidden = m.clipboard?.written !== true;
  $('.mode-note').textContent = m.mode === 'control'
    ? 'Your mouse and keyboard go to the desktop. Ctrl+Alt+Shift+Esc gives the keyboard back.'
    : 'The desktop ignores your mouse and keyboard.';

  for (const section of root.querySelectorAll('section[data-phase]')) {
    /** @type {HTMLElement} */ (section).hidden = !(section.getAttribute('data-phase') ?? '').split(' ').includes(p);
  }
  $('.lost-reason').textContent = m.connectionError;
  $('.docker-error').textContent = m.docker?.error || `No Docker engine answers at ${m.docker?.endpoint ?? 'its address'}.`;

  $('.failure').hidden = p !== 'error';
  $('.failure-text').textContent = p === 'error' ? errorText(m) : '';
  $('.failure-log').hidden = !m.failure?.log?.length;
  $('.failure-log pre').textContent = (m.failure?.log ?? []).join('\n');

  $('.approval-summary').textContent = m.approval?.summary ?? '';
  renderApproval(root, m.approval);

  const progress = progressOf(m);
  const bar = /** @type {HTMLProgressElement} */ (root.querySelector('.progress'));
  if (progress.value === null) bar.removeAttribute('value');
  else bar.value = progress.value;
  $('.progress-text').textContent = progress.text;
  $('.build-note').hidden = !progress.building;

  const overlay = m.viewer !== 'connected';
  $('.overlay').hidden = !overlay;
  $('.overlay-text').textContent = m.viewer === 'connecting' ? 'Connecting to the desktop…' : m.viewerMessage;
  $('.reconnect').hidden = m.viewer === 'connecting' || m.viewer === 'connected';
}

/**
 * A clipboard text on one line, its first 200 characters: a long or
 * many-line text shows what it starts with.
 *
 * @param {string} text
 */
function clipPreview(text) {
  const line = text.slice(0, 200).replace(/\s+/g, ' ');
  return text.length > 200 ? `${line}…` : line;
}

/**
 * Shows what an approval approves, as text only (it is the repository's,
 * maybe a stranger's): its warnings, the change since the kind was last
 * approved, its content, and the files a Dockerfile takes. Drawn again
 * only when the approval changes.
 *
 * @param {ShadowRoot} root
 * @param {Approval | null} a
 */
function renderApproval(root, a) {
  const detail = /** @type {HTMLElement} */ (root.querySelector('.approval-detail'));
  const key = a ? `${a.kind} ${a.digest} ${a.diff ?? ''}` : '';
  if (detail.dataset.shown === key) return;
  detail.dataset.shown = key;
  const section = (/** @type {string} */ selector, /** @type {string | undefined} */ text) => {
    const el = /** @type {HTMLElement} */ (detail.querySelector(selector));
    el.hidden = !text;
    /** @type {HTMLElement} */ (el.querySelector('pre')).textContent = text ?? '';
  };
  section('.approval-diff', a?.diff);
  section('.approval-content', a?.content);
  const warnings = /** @type {HTMLElement} */ (detail.querySelector('.approval-warnings'));
  warnings.hidden = !a?.warnings?.length;
  /** @type {HTMLElement} */ (warnings.querySelector('ul')).replaceChildren(...(a?.warnings ?? []).map((w) => {
    const li = document.createElement('li');
    li.textContent = w;
    return li;
  }));
  /** @type {HTMLElement} */ (detail.querySelector('.approval-files')).replaceChildren(...(a?.files ?? []).map((f) => {
    const box = document.createElement('details');
    const summary = document.createElement('summary');
    summary.textContent = `File ${f.path} (${f.size} bytes)`;
    const body = document.createElement(f.omitted ? 'p' : 'pre');
    body.textContent = f.omitted ? `Not shown: ${f.omitted}` : (f.text ?? '');
    if (f.omitted) body.className = 'approval-omitted';
    box.open = true;
    box.append(summary, body);
    return box;
  }));
}

/**
 * Dims a button without taking it out of the focus order, so that a
 * keyboard user's focus stays where it was while a call runs.
 *
 * @param {HTMLElement} button
 * @param {boolean} enabled
 */
function setEnabled(button, enabled) {
  button.removeAttribute('disabled');
  button.setAttribute('aria-disabled', String(!enabled));
}
