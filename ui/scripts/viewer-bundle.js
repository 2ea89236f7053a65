// The sandbox's viewer in one file: resources/docker/sandbox/viewer/viewer.js
// is viewer-src/viewer.js bundled with the noVNC modules it imports, as
// the desktop image has them (Debian's novnc package, which the
// Dockerfile unpacks into /usr/share/novnc). The page then loads one
// script instead of 41 modules five levels deep (docs/performance.md, The
// panel's Start), and the sidecar's check of the viewer's files
// (desktop/viewerpage.go) covers noVNC's code too.
//
//   node scripts/viewer-bundle.js IMAGE    (npm run viewer-bundle -- IMAGE)
//
// writes the bundle from IMAGE's noVNC; test/viewer-bundle.test.js makes
// it again from the image the sidecar builds and fails when the two
// differ, so a noVNC that Debian updates cannot drift from the bundle
// unnoticed.

import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const sandbox = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'resources', 'docker', 'sandbox');
/** The viewer's source, which imports ../core/rfb.js as the image lays it out. */
export const viewerSource = join(sandbox, 'viewer-src', 'viewer.js');
/** The bundle the image serves as pilot/viewer.js. */
export const viewerBundle = join(sandbox, 'viewer', 'viewer.js');

// What the bundle drops of its inputs' headers, said once: noVNC's
// licence (its files' sources stay in the image, /usr/share/novnc) and
// where pako, which noVNC carries as vendor/pako, comes from.
const banner = `// Made by ui/scripts/viewer-bundle.js from resources/docker/sandbox/viewer-src/viewer.js
// and the desktop image's noVNC (/usr/share/novnc): do not edit, make it again.
// noVNC: Copyright (C) The noVNC Authors, licensed under MPL 2.0; its source
// is in the image, /usr/share/novnc. vendor/pako: noVNC's ES module version
// of pako 1.0.3 (MIT licence), a port of zlib.`;

/**
 * Copies the noVNC modules out of image (core/ and vendor/, about 600 KB)
 * into a new directory, laid out as in the image, with the viewer's
 * source at pilot/viewer.js beside them.
 *
 * @param {string} image
 * @returns {string} the directory; the caller removes it
 */
export function novncTree(image) {
  const dir = mkdtempSync(join(tmpdir(), 'pilot-viewer-bundle-'));
  try {
    execFileSync('sh', ['-c', 'docker run --rm --network none --entrypoint tar "$1" -C /usr/share/novnc -c core vendor | tar -x -C "$2"', 'sh', image, dir], {
      stdio: ['ignore', 'ignore', 'pipe'], timeout: 120_000,
    });
    mkdirSync(join(dir, 'pilot'));
    cpSync(viewerSource, join(dir, 'pilot', 'viewer.js'));
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return dir;
}

/**
 * The bundle of tree/pilot/viewer.js (a novncTree), as text: one ES
 * module, not minified (it is read in review like the rest), with the
 * modules' paths relative to the tree, so the same inputs give the same
 * bytes on any machine.
 *
 * @param {string} tree
 * @returns {Promise<string>}
 */
export async function bundleViewer(tree) {
  const result = await build({
    absWorkingDir: tree,
    entryPoints: ['pilot/viewer.js'],
    bundle: true,
    format: 'esm',
    target: 'es2020',
    banner: { js: banner },
    legalComments: 'inline',
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0].text;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const image = process.argv[2];
  if (!image) {
    console.error('usage: node scripts/viewer-bundle.js IMAGE (the desktop image whose noVNC to bundle)');
    process.exit(2);
  }
  const tree = novncTree(image);
  try {
    writeFileSync(viewerBundle, await bundleViewer(tree));
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
  console.log(`Wrote ${viewerBundle} from the noVNC of ${image}.`);
}
