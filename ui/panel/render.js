// Draws a panel's Model (model.js) into its markup (template.js): which
// section shows, what the badge and the buttons say, the progress bar,
// the viewer's overlay. Pure DOM updates, no calls to the sidecar.

import { phase, badge, controls, progressOf, errorText } from './model.js';

/** @typedef {import('./model.js').Model} Model */

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
