// What the tests share: the binaries under test, a private state
// directory, project directories, and whether Docker is there.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';
import { spawnSidecar } from '../client/node.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** @type {Record<string, string>} */
const built = {};

/**
 * The path of a binary under test: from the environment (scripts/test.sh
 * builds them once), or built here with go build.
 *
 * @param {'PILOT_SANDBOX_BIN' | 'PILOT_WS_SERVER_BIN'} variable
 * @param {string} pkg
 * @returns {string}
 */
function binary(variable, pkg) {
  const fromEnv = process.env[variable];
  if (fromEnv) return fromEnv;
  if (!built[pkg]) {
    const dir = mkdtempSync(join(tmpdir(), 'pilot-ui-bin-'));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    built[pkg] = join(dir, 'bin');
    execFileSync('go', ['build', '-o', built[pkg], pkg], { cwd: repo, stdio: 'inherit' });
  }
  return built[pkg];
}

/** `pilot-sandbox`, the real binary. */
export const serveBinary = () => binary('PILOT_SANDBOX_BIN', './cmd/pilot-sandbox');
/** internal/wsserver: the rpc package's WebSocket transport on the real manager. */
export const wsServerBinary = () => binary('PILOT_WS_SERVER_BIN', './internal/wsserver');

/**
 * A directory removed when the current test (or file) ends, symlinks resolved (the
 * server names projects by their resolved path).
 *
 * @param {string} prefix
 * @returns {string}
 */
export function tempDir(prefix) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The environment for a server under test: its own state directory, and
 * the rest of ours (DOCKER_HOST, PILOT_IMAGE).
 *
 * @param {Record<string, string>} [extra]
 * @returns {NodeJS.ProcessEnv}
 */
export function serverEnv(extra = {}) {
  return { ...process.env, XDG_STATE_HOME: tempDir('pilot-ui-state-'), ...extra };
}

/** An engine address where no Docker answers. */
export const NO_DOCKER = 'unix:///nonexistent/docker.sock';

/**
 * Spawns `pilot-sandbox serve` with the client, and kills it when the
 * current test (or file) ends.
 *
 * @param {Record<string, string>} [env]
 */
export function spawnServe(env) {
  const sidecar = spawnSidecar({ command: serveBinary(), env: serverEnv(env), stderr: 'ignore' });
  after(() => { sidecar.child.kill(); });
  return sidecar;
}

let dockerChecked = /** @type {Promise<string | false> | null} */ (null);

/**
 * Whether tests that need a Docker engine run: a reason to skip them, or
 * false to run them. With PILOT_REQUIRE_DOCKER=1 (CI) a missing engine
 * is a failure, not a skip.
 *
 * @returns {Promise<string | false>}
 */
export function skipWithoutDocker() {
  dockerChecked ??= (async () => {
    const { client, stop } = spawnServe();
    const { docker } = await client.initialize();
    await stop();
    if (docker.available) return false;
    if (process.env.PILOT_REQUIRE_DOCKER === '1') {
      throw new Error(`no Docker engine, and PILOT_REQUIRE_DOCKER=1: ${docker.error}`);
    }
    return `no Docker engine (${docker.error})`;
  })();
  return dockerChecked;
}

/**
 * Checks results against the result schemas of the server's rpc.discover
 * document, with Ajv: the server's own description of itself, validated by
 * a library nobody here wrote.
 *
 * @param {Record<string, any>} doc the OpenRPC document
 * @returns {Promise<(method: string, result: unknown) => void>} a check that throws on a mismatch
 */
export async function resultChecker(doc) {
  const { default: Ajv } = await import('ajv');
  const ajv = new Ajv.default({ strict: false, allErrors: true });
  /** @type {Map<string, import('ajv').ValidateFunction>} */
  const validators = new Map();
  for (const m of doc.methods) {
    if (m.result) validators.set(m.name, ajv.compile({ ...m.result.schema, components: doc.components }));
  }
  for (const n of doc['x-notifications']) {
    const properties = Object.fromEntries(n.params.map((/** @type {any} */ p) => [p.name, p.schema]));
    const required = n.params.filter((/** @type {any} */ p) => p.required).map((/** @type {any} */ p) => p.name);
    validators.set(n.name, ajv.compile({ type: 'object', properties, required, additionalProperties: false, components: doc.components }));
  }
  return (method, result) => {
    const validate = validators.get(method);
    if (!validate) throw new Error(`rpc.discover has no result schema for ${method}`);
    if (!validate(result)) {
      throw new Error(`${method}: ${JSON.stringify(result).slice(0, 300)} does not match its schema: ${ajv.errorsText(validate.errors)}`);
    }
  };
}
