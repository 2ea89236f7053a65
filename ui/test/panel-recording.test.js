// The panel's Recordings section as a person uses it, in a real browser
// on a real engine: Record, Stop recording, the recording in the list,
// Play, and the video loads in Chromium with its length; an agent's click
// during it is marked on the scrubber from the timeline, and marks given
// to the player show too.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { tempProject, skipWithoutDocker } from './helpers.js';
import { launchBrowser, newPage, skipWithoutBrowser } from './browser.js';
import { panelSetup } from './panel-helpers.js';

const skipBrowser = skipWithoutBrowser();
const skip = skipBrowser || (await skipWithoutDocker());
const browser = skipBrowser ? null : await launchBrowser();

test("the panel's recordings: record, stop, play the video with its length, marks on the scrubber", { skip, timeout: 600_000 }, async () => {
  const dir = tempProject('pilot-ui-recording-');
  const project = dir.path;
  const { page, screenshot, assertNoErrors, logFile } = await newPage(/** @type {any} */ (browser), 'panel-recording');
  const { client, start, open } = await panelSetup(page, dir, logFile);
  await client.setToolsEnabled(project, true);
  await start();
  const panel = await open();
  await page.getByText('Recordings', { exact: true }).click();
  await panel.expectVisible(page.getByText('No recordings of this project yet.'));

  // The first recording may build the recorder image: minutes, once.
  await page.getByRole('button', { name: 'Record', exact: true }).click();
  const stop = page.getByRole('button', { name: 'Stop recording' });
  await stop.waitFor({ timeout: 300_000 });
  await sleep(1000);
  // An agent's click during the recording: a mark on the player's scrubber.
  await client.callTool(project, 'sandbox_click', { x: 30, y: 30 });
  await sleep(2000); // the length recorded
  await stop.click();
  const play = page.getByRole('button', { name: /^Play the recording of / });
  await play.waitFor({ timeout: 30_000 });
  const [recording] = (await client.listRecordings(project)).recordings;
  assert.equal(recording.state, 'stopped');
  assert.ok(recording.durationMs >= 2500 && recording.durationMs <= 6000, `durationMs ${recording.durationMs}`);

  await play.click();
  const video = page.locator('video.player');
  const loaded = await video.evaluate((/** @type {HTMLVideoElement} */ v) => new Promise((resolve) => {
    const done = () => resolve({ duration: v.duration, width: v.videoWidth, error: v.error?.code ?? 0 });
    if (v.readyState >= 1) done();
    v.addEventListener('loadedmetadata', done, { once: true });
    v.addEventListener('error', done, { once: true });
  }));
  assert.equal(loaded.error, 0, 'the player could not load the recording');
  assert.equal(loaded.width, 1280);
  assert.ok(Math.abs(loaded.duration * 1000 - recording.durationMs) < 100, `the player's duration ${loaded.duration} s against ${recording.durationMs} ms`);

  // The click, from the timeline, marked where it happened.
  const clickMark = page.getByRole('button', { name: /^Go to sandbox_click: / });
  await clickMark.waitFor({ timeout: 10_000 });
  const left = parseFloat(await clickMark.evaluate((/** @type {HTMLElement} */ b) => b.style.left));
  assert.ok(left > 10 && left < 90, `the click's mark at ${left}% of the scrubber`);

  // The seam for an app's own marks: at their times.
  await page.evaluate(() => /** @type {any} */ (document.querySelector('pilot-sandbox-panel')).setRecordingMarks([{ timeMs: 1000, label: 'sandbox_click 10,10' }]));
  const mark = page.getByRole('button', { name: 'Go to sandbox_click 10,10' });
  await mark.waitFor();
  await mark.click();
  assert.ok(Math.abs(await video.evaluate((/** @type {HTMLVideoElement} */ v) => v.currentTime) - 1) < 0.3, 'the mark did not seek to 1 s');
  await screenshot('1-played');
  assertNoErrors();
});
