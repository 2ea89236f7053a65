// The WebSocket transport, for the sandbox panel in a browser: one JSON-RPC
// message per text message, at ws://127.0.0.1:PORT/rpc?token=T.

import { Client } from './pilot-sandbox.js';

/** @typedef {import('./types.js').Transport} Transport */

/**
 * Connects to the server's WebSocket endpoint and resolves with a Client
 * once the connection is open. A refused connection (wrong token, or a
 * page from another origin) rejects: browsers do not say which.
 *
 * @param {string} url ws://127.0.0.1:PORT/rpc?token=T
 * @param {{WebSocket?: typeof WebSocket}} [options] another WebSocket
 *   implementation, such as the ws package's in Node
 * @returns {Promise<Client>}
 */
export function connectWebSocket(url, options = {}) {
  const WS = options.WebSocket ?? globalThis.WebSocket;
  if (!WS) return Promise.reject(new Error('no WebSocket here: pass options.WebSocket'));
  return new Promise((resolve, reject) => {
    const socket = new WS(url);
    const refused = () => reject(new Error(`cannot connect to ${redact(url)}: the server is not there, or it refused the token or this page's origin`));
    socket.addEventListener('error', refused);
    socket.addEventListener('close', refused);
    socket.addEventListener('open', () => {
      socket.removeEventListener('error', refused);
      socket.removeEventListener('close', refused);
      resolve(new Client(webSocketTransport(socket)));
    }, { once: true });
  });
}

/**
 * A transport over an open WebSocket.
 *
 * @param {WebSocket} socket
 * @returns {Transport}
 */
export function webSocketTransport(socket) {
  return {
    send(message) { socket.send(JSON.stringify(message)); },
    listen(onMessage, onClose) {
      socket.addEventListener('message', (event) => {
        if (typeof event.data !== 'string') return; // the server sends text only
        let message;
        try {
          message = JSON.parse(event.data);
        } catch {
          onClose(new Error('the server sent a message that is not JSON'));
          socket.close();
          return;
        }
        onMessage(message);
      });
      socket.addEventListener('close', (event) => {
        onClose(event.code === 1000 ? undefined : new Error(`WebSocket closed with code ${event.code}`));
      });
    },
    close() { socket.close(1000); },
  };
}

/**
 * The URL without its token, for messages.
 *
 * @param {string} url
 * @returns {string}
 */
function redact(url) {
  return url.replace(/([?&]token=)[^&]*/, '$1…');
}
