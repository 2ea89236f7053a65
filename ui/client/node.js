// The stdio transport, for Node and Electron's main process: spawns
// `pilot-sandbox serve` and speaks Content-Length framed JSON-RPC on its
// stdin and stdout.

import { spawn } from 'node:child_process';
import { Client } from './pilot-sandbox.js';
import { encodeFrame, FrameDecoder } from './framing.js';

export { Client, RpcError, ConnectionClosedError, PROTOCOL_VERSION } from './pilot-sandbox.js';

/** @typedef {import('./types.js').Transport} Transport */

/**
 * A transport over a pair of streams, such as a child's stdout and stdin.
 *
 * @param {NodeJS.ReadableStream} input the server's output
 * @param {NodeJS.WritableStream} output the server's input
 * @returns {Transport}
 */
export function streamTransport(input, output) {
  let ended = false;
  return {
    send(message) {
      if (!ended) output.write(encodeFrame(message));
    },
    listen(onMessage, onClose) {
      const decoder = new FrameDecoder();
      /** @param {Error} [error] */
      const finish = (error) => {
        if (ended) return;
        ended = true;
        onClose(error);
      };
      input.on('data', (/** @type {Uint8Array} */ chunk) => {
        let messages;
        try {
          messages = decoder.push(chunk);
        } catch (error) {
          finish(/** @type {Error} */ (error));
          return;
        }
        for (const message of messages) onMessage(message);
      });
      input.on('end', () => finish());
      input.on('error', (/** @type {Error} */ error) => finish(error));
      // Writing to a server that has exited fails; the read side reports it.
      output.on('error', () => {});
    },
    close() {
      ended = true;
      output.end();
    },
  };
}

/**
 * @typedef {object} SpawnOptions
 * @property {string} [command] the pilot-sandbox binary (default: found on PATH)
 * @property {string[]} [args] more arguments to serve, e.g. ['-v']
 * @property {NodeJS.ProcessEnv} [env]
 * @property {string} [cwd]
 * @property {'inherit' | 'ignore' | 'pipe'} [stderr] where the server's log lines go (default inherit)
 */

/**
 * @typedef {object} Sidecar
 * @property {Client} client
 * @property {import('node:child_process').ChildProcess} child
 * @property {Promise<number | null>} exited resolves with the exit code
 * @property {(timeoutMs?: number) => Promise<number | null>} stop shutdown,
 *   exit, and wait for the process (killed if it has not exited within timeoutMs)
 */

/**
 * Spawns `pilot-sandbox serve` and returns a client connected to it.
 *
 * @param {SpawnOptions} [options]
 * @returns {Sidecar}
 */
export function spawnSidecar(options = {}) {
  const { command = 'pilot-sandbox', args = [], env, cwd, stderr = 'inherit' } = options;
  const child = spawn(command, ['serve', ...args], { stdio: ['pipe', 'pipe', stderr], env, cwd });
  /** @type {Promise<number | null>} */
  const exited = new Promise((resolve, reject) => {
    child.once('error', reject); // could not start: ENOENT and the like
    child.once('exit', (code) => resolve(code));
  });
  exited.catch(() => {}); // a caller that never awaits it must not crash
  if (!child.stdout || !child.stdin) throw new Error('spawn gave no stdio pipes');
  const client = new Client(streamTransport(child.stdout, child.stdin));
  const stop = async (timeoutMs = 10000) => {
    try {
      await client.shutdown();
      client.exit();
    } catch {
      // already closed: waiting for the process is all there is to do
    }
    const timer = setTimeout(() => child.kill(), timeoutMs);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };
  return { client, child, exited, stop };
}
