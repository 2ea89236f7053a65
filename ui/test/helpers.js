// What the tests share: the binary under test, a private state
// directory, project directories, and whether Docker is there.

import { execFileSync, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { closeSync, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';
import { spawnSidecar } from '../client/node.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

let built = /** @type {string | null} */ (null);

/**
 * The path of `pilot-sandbox`, the real binary under test: from
 * PILOT_SANDBOX_BIN (scripts/test.sh builds it once), or built here.
 *
 * @returns {string}
 */
export function serveBinary() {
  const fromEnv = process.env.PILOT_SANDBOX_BIN;
  if (fromEnv) return fromEnv;
  if (!built) {
    const dir = mkdtempSync(join(tmpdir(), 'pilot-ui-bin-'));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    built = join(dir, 'pilot-sandbox');
    execFileSync('go', ['build', '-o', built, './cmd/pilot-sandbox'], { cwd: repo, stdio: 'inherit' });
  }
  return built;
}

/**
 * A directory removed when the current test (or file) ends, symlinks resolved (the
 * server names projects by their resolved path).
 *
 * @param {string} prefix
 * @returns {string}
 */
export function tempDir(prefix) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  // A sidecar given this directory as its state may still be writing its
  // log or activity marks: its own after hook, which ends it, may come
  // after this one. What cannot be removed now is removed at exit.
  after(() => {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    } catch {
      process.on('exit', () => rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }));
    }
  });
  return dir;
}

/**
 * A project directory for a test that starts its sandbox and may end before
 * removing it: set removeSandbox once there is a client, and the sandbox is
 * removed before the directory is (a project that no longer exists cannot
 * be named to the sidecar).
 *
 * @param {string} prefix
 */
export function tempProject(prefix) {
  const path = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const project = { path, removeSandbox: async () => {} };
  after(async () => {
    await project.removeSandbox().catch(() => {});
    rmSync(path, { recursive: true, force: true });
  });
  return project;
}

/**
 * The environment for a server under test: its own state directory, a
 * config directory whose config.json turns the lifecycle policy off (the
 * user's own must not stop or refuse the tests' sandboxes), and the rest
 * of ours (DOCKER_HOST, PILOT_IMAGE).
 *
 * @param {Record<string, string>} [extra]
 * @returns {NodeJS.ProcessEnv}
 */
export function serverEnv(extra = {}) {
  const config = tempDir('pilot-ui-config-');
  mkdirSync(join(config, 'pilot-sandbox'));
  writeFileSync(join(config, 'pilot-sandbox', 'config.json'), '{"idleStop": "0", "maxRunning": 0, "disk": "0"}\n');
  return { ...process.env, XDG_STATE_HOME: tempDir('pilot-ui-state-'), XDG_CONFIG_HOME: config, ...extra };
}

/** An engine address where no Docker answers. */
export const NO_DOCKER = 'unix:///nonexistent/docker.sock';

/**
 * Starts `pilot-sandbox ui --no-open` for project, stops it when the
 * current test (or file) ends, and resolves with the panel's address, the
 * first line it prints.
 *
 * @param {string} project
 * @param {Record<string, string>} [env]
 * @param {string} [logFile] where its stderr goes (appended), else nowhere
 * @returns {Promise<{address: string, rpcUrl: string, child: import('node:child_process').ChildProcess}>}
 */
export async function startUI(project, env, logFile) {
  const log = logFile ? openSync(logFile, 'a') : 'ignore';
  const child = spawn(serveBinary(), ['ui', '--no-open', '-v', '--project', project], {
    env: serverEnv(env), stdio: ['ignore', 'pipe', log],
  });
  if (typeof log === 'number') closeSync(log);
  after(() => { child.kill(); });
  const lines = createInterface({ input: /** @type {import('node:stream').Readable} */ (child.stdout) });
  for await (const address of lines) {
    const url = new URL(address);
    const token = new URLSearchParams(url.hash.slice(1)).get('token');
    return { address, rpcUrl: `ws://${url.host}/rpc?token=${token}`, child };
  }
  throw new Error('pilot-sandbox ui printed no address');
}

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
 * @returns {Promise<(method: string, result: unknown) => void>} a check that throws on a mismatch; a
 *   notification named as a method is checked as 'notification NAME'
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
    const validate = ajv.compile({ type: 'object', properties, required, additionalProperties: false, components: doc.components });
    // sandbox/activity is a method and a notification: its notification is
    // checked as 'notification sandbox/activity'.
    validators.set(`notification ${n.name}`, validate);
    if (!validators.has(n.name)) validators.set(n.name, validate);
  }
  return (method, result) => {
    const validate = validators.get(method);
    if (!validate) throw new Error(`rpc.discover has no result schema for ${method}`);
    if (!validate(result)) {
      throw new Error(`${method}: ${JSON.stringify(result).slice(0, 300)} does not match its schema: ${ajv.errorsText(validate.errors)}`);
    }
  };
}
