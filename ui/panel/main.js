// The page `pilot-sandbox ui` serves: connects the panel to the server it
// came from, with the token from the address's fragment (#token=T), which
// the browser never sends to a server.

import { connectWebSocket } from '../client/websocket.js';
import './panel.js';

const panel = /** @type {import('./panel.js').PilotSandboxPanel} */ (document.querySelector('pilot-sandbox-panel'));

async function main() {
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  if (!token) {
    panel.connectionFailed('This address has no token: open the address `pilot-sandbox ui` printed, with everything after #.');
    return;
  }
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  try {
    const client = await connectWebSocket(`${scheme}://${location.host}/rpc?token=${encodeURIComponent(token)}`);
    await client.initialize({ name: 'pilot-sandbox-panel', version: '1' });
    panel.recordingUrl = (r) => `/recordings/${encodeURIComponent(r.recordingId)}?token=${encodeURIComponent(token)}`;
    panel.client = client;
  } catch (err) {
    panel.connectionFailed(`Cannot reach pilot-sandbox: ${err instanceof Error ? err.message : err}. Is \`pilot-sandbox ui\` still running, and is this its latest address?`);
  }
}

main();
