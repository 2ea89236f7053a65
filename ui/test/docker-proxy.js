// A stand-in for the Docker engine's socket that a test can take away and
// give back, as internal/dockertest's Proxy does for the Go tests, without
// stopping the engine other tests share: a Unix socket that forwards every
// connection to the real engine while it is up.

import net from 'node:net';
import { join } from 'node:path';
import { after } from 'node:test';
import { tempDir } from './helpers.js';

/** The real engine's socket, from DOCKER_HOST (unix:// only) or the default. */
function engineSocket() {
  const host = process.env.DOCKER_HOST ?? '';
  if (host.startsWith('unix://')) return host.slice('unix://'.length);
  if (host) throw new Error(`the Docker proxy forwards to a Unix socket only, not ${host}`);
  return '/var/run/docker.sock';
}

/**
 * A proxy, down until restore() is called. dockerHost is the DOCKER_HOST
 * to give a sidecar.
 */
export function dockerProxy() {
  const path = join(tempDir('pilot-ui-proxy-'), 'docker.sock');
  const target = engineSocket();
  /** @type {Set<net.Socket>} */
  const sockets = new Set();
  /** @type {net.Server | null} */
  let server = null;

  const proxy = {
    dockerHost: `unix://${path}`,
    /** Starts forwarding: the engine is back. */
    async restore() {
      if (server) return;
      const s = net.createServer((client) => {
        const upstream = net.connect(target);
        for (const sock of [client, upstream]) {
          sockets.add(sock);
          sock.on('close', () => sockets.delete(sock));
          sock.on('error', () => { client.destroy(); upstream.destroy(); });
        }
        client.pipe(upstream).pipe(client);
      });
      await new Promise((resolve, reject) => s.once('error', reject).listen(path, () => resolve(undefined)));
      server = s;
    },
    /** Closes the socket and every connection through it: the engine is gone. */
    async cut() {
      const s = server;
      server = null;
      if (!s) return;
      for (const sock of sockets) sock.destroy();
      await new Promise((resolve) => s.close(() => resolve(undefined)));
    },
  };
  after(() => proxy.cut());
  return proxy;
}
