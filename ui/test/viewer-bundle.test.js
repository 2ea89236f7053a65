// The viewer's bundle (resources/docker/sandbox/viewer/viewer.js, made by
// scripts/viewer-bundle.js) is made from exactly the noVNC of the image
// the sidecar builds now: made again from that image's files, it is the
// same byte for byte. A Debian update of novnc, or a change to
// viewer-src/viewer.js without making the bundle again, fails here.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { serveBinary, serverEnv, skipWithoutDocker } from './helpers.js';
import { bundleViewer, novncTree, viewerBundle } from '../scripts/viewer-bundle.js';

const skip = await skipWithoutDocker();

test("the viewer's bundle is made from the image's noVNC and the viewer's source", { skip, timeout: 900_000 }, async () => {
  // The image as a start would have it: built now if it is missing or old.
  const out = execFileSync(serveBinary(), ['build'], { env: serverEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const image = /The sandbox image (\S+) is up to date/.exec(out)?.[1];
  assert.ok(image, `pilot-sandbox build said: ${out}`);
  const tree = novncTree(image);
  try {
    const made = await bundleViewer(tree);
    const checkedIn = readFileSync(viewerBundle, 'utf8');
    assert.ok(made.includes('\n// core/rfb.js\n'), 'the bundle has no core/rfb.js');
    assert.ok(made === checkedIn,
      `resources/docker/sandbox/viewer/viewer.js is not the bundle of ${image}'s noVNC (${made.length} bytes made, ${checkedIn.length} checked in): ` +
      `run npm run viewer-bundle -- ${image}`);
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
});
