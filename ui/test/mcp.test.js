// `pilot-sandbox mcp` driven by a real third-party MCP client: the
// TypeScript SDK's Client over StdioClientTransport, against the built
// binary and a real engine, as Claude Code, Cursor or VS Code would run it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inflateSync } from 'node:zlib';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { serveBinary, serverEnv, spawnServe, tempProject, skipWithoutDocker } from './helpers.js';

const skip = await skipWithoutDocker();

/**
 * Connects the SDK's client to `pilot-sandbox mcp` for project.
 *
 * @param {string} project
 * @param {string[]} [flags]
 */
async function connectMCP(project, flags = []) {
  const transport = new StdioClientTransport({
    command: serveBinary(),
    args: ['mcp', '--project', project, ...flags],
    env: /** @type {Record<string, string>} */ (serverEnv()),
    stderr: 'ignore',
  });
  const client = new Client({ name: 'ui-test', version: '1' });
  await client.connect(transport);
  return client;
}

/**
 * The text of a tool's result.
 *
 * @param {any} result
 * @returns {string}
 */
function textOf(result) {
  return result.content.filter((/** @type {any} */ c) => c.type === 'text').map((/** @type {any} */ c) => c.text).join('\n');
}

/**
 * Decodes a PNG far enough to prove it is one: the signature, the header's
 * size, and the image data inflated to one filtered row per line of pixels.
 *
 * @param {Buffer} png
 * @returns {{width: number, height: number, pixels: Buffer}}
 */
function decodePNG(png) {
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  let width = 0, height = 0, channels = 0;
  const idat = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      assert.equal(data[8], 8, 'bit depth');
      channels = { 0: 1, 2: 3, 4: 2, 6: 4 }[data[9]] ?? 0;
    } else if (type === 'IDAT') {
      idat.push(data);
    }
    at += 12 + length;
  }
  const pixels = inflateSync(Buffer.concat(idat));
  assert.equal(pixels.length, height * (1 + width * channels), 'one filtered row per line');
  return { width, height, pixels };
}

/**
 * Starts the sandbox through sandbox_start. A first start that builds the
 * image answers within 45 s that it goes on; sandbox_wait waits for it.
 *
 * @param {Client} client
 * @param {string[]} progress where the start's progress messages go
 */
async function startSandbox(client, progress) {
  let text = textOf(await client.callTool({ name: 'sandbox_start', arguments: {} }, undefined, {
    onprogress: (p) => progress.push(p.message ?? ''),
  }));
  while (text.includes('is still running')) {
    text = textOf(await client.callTool({ name: 'sandbox_wait', arguments: { seconds: 30 } }));
  }
  assert.match(text, /The sandbox is running: a 1280x800 Linux desktop/);
}

/**
 * Resolves as promise does, or rejects after ms.
 *
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 * @param {string} what
 * @returns {Promise<T>}
 */
async function within(promise, ms, what) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`no ${what} after ${ms} ms`)), ms); });
  try {
    return /** @type {T} */ (await Promise.race([promise, late]));
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Polls a shell test in the sandbox until it holds (20 s at most).
 *
 * @param {Client} client
 * @param {string} what
 * @param {string} command
 */
async function until(client, what, command) {
  for (const deadline = Date.now() + 20_000; ;) {
    const text = textOf(await client.callTool({ name: 'sandbox_exec', arguments: { command, timeoutSeconds: 10 } }));
    if (text.startsWith('Exit code 0.')) return text;
    if (Date.now() > deadline) throw new Error(`${what}: not so after 20 s (${text})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('an MCP client sees and drives the sandbox, and follows the switch', { skip, timeout: 900_000 }, async () => {
  const project = tempProject('pilot-ui-mcp-');
  const { client: app, stop } = spawnServe(); // the desktop app, another process
  project.removeSandbox = async () => { await app.remove(project.path); };
  const mcp = await connectMCP(project.path, ['--enable-tools']);
  try {
    assert.equal(mcp.getServerVersion()?.name, 'pilot-sandbox');
    assert.ok(mcp.getServerCapabilities()?.tools?.listChanged, 'tools.listChanged');
    assert.match(mcp.getInstructions() ?? '', /sandbox_screenshot/);

    // The 16 tools, with the schemas the app's JSON-RPC server gives.
    const { tools } = await mcp.listTools();
    assert.equal(tools.length, 16);
    const served = (await app.listTools(project.path)).tools;
    for (const tool of tools) {
      const same = served.find((t) => t.name === tool.name);
      assert.deepEqual(tool, same, tool.name);
      assert.equal(tool.inputSchema.type, 'object');
    }
    assert.deepEqual(tools.find((t) => t.name === 'sandbox_scroll')?.inputSchema.properties?.amount,
      { type: 'integer', description: 'How many wheel clicks, 1 to 100.', minimum: 1, maximum: 100, default: 3 });
    // The tools that only look say so, so that a host need not ask the
    // user before each (tools/hints.go); the others do not.
    const readOnly = tools.filter((t) => t.annotations?.readOnlyHint).map((t) => t.name).sort();
    assert.deepEqual(readOnly, ['sandbox_clipboard_get', 'sandbox_screenshot', 'sandbox_wait']);
    assert.equal(tools.find((t) => t.name === 'sandbox_exec')?.annotations?.destructiveHint, true);
    assert.equal(tools.find((t) => t.name === 'sandbox_click')?.annotations?.destructiveHint, false);

    /** @type {string[]} */
    const progress = [];
    await startSandbox(mcp, progress);
    // Progress came as MCP progress notifications. (Not always the last
    // one: the SDK runs notification handlers in a later microtask, and a
    // notification read in the same chunk as its call's response finds
    // the call's progress handler already gone.)
    assert.ok(progress.some((m) => m.startsWith('Creating the sandbox container')), `progress: ${progress}`);

    const before = /** @type {any} */ (await mcp.callTool({ name: 'sandbox_screenshot', arguments: {} }));
    const image = before.content[0];
    assert.equal(image.type, 'image');
    assert.equal(image.mimeType, 'image/png');
    const shot = decodePNG(Buffer.from(image.data, 'base64'));
    assert.deepEqual([shot.width, shot.height], [1280, 800]);
    assert.equal(textOf(before), 'Screenshot of the whole 1280x800 screen; coordinates are pixels of this image.');

    // Two terminals, each writing what it reads to a file of its own (no
    // shell, which would retitle them): the second opens last and takes
    // the focus. A click gives the first the focus back, so the typed line
    // lands in its file only if the click did.
    const focused = (/** @type {string} */ title) =>
      `xprop -id "$(xprop -root _NET_ACTIVE_WINDOW | awk '{print $NF}')" WM_NAME | grep -q '"${title}"'`;
    await mcp.callTool({ name: 'sandbox_exec', arguments: {
      command: "xterm -T first -geometry 40x10+100+100 -e sh -c 'cat > /tmp/typed' >/dev/null 2>&1 &",
    } });
    await until(mcp, 'the first terminal focused', focused('first'));
    await mcp.callTool({ name: 'sandbox_exec', arguments: {
      command: "xterm -T second -geometry 40x10+700+100 -e sh -c 'cat > /tmp/second' >/dev/null 2>&1 &",
    } });
    await until(mcp, 'the second terminal focused', focused('second'));
    assert.match(textOf(await mcp.callTool({ name: 'sandbox_click', arguments: { x: 200, y: 150 } })),
      /^Left-clicked at \(200, 150\)\. The pointer is at \(200, 150\)\. The screen (changed \(.*\) and settled \d+ ms|did not change within 0\.5 s)/);
    await until(mcp, 'the first terminal focused by the click', focused('first'));
    await mcp.callTool({ name: 'sandbox_type', arguments: { text: 'héllo from MCP' } });
    await mcp.callTool({ name: 'sandbox_key', arguments: { keys: 'Return' } });
    const typed = await until(mcp, 'the typed line', 'grep -x "héllo from MCP" /tmp/typed');
    assert.match(typed, /stdout:\nhéllo from MCP\n/);
    const after = /** @type {any} */ (await mcp.callTool({ name: 'sandbox_screenshot', arguments: {} })).content[0];
    assert.notDeepEqual(decodePNG(Buffer.from(after.data, 'base64')).pixels, shot.pixels, 'the screen shows the terminals');

    // A model's mistake is a result with isError, naming the argument.
    const bad = await mcp.callTool({ name: 'sandbox_click', arguments: { x: -1, y: 5 } });
    assert.equal(bad.isError, true);
    assert.equal(textOf(bad), 'Invalid arguments: argument "x" must be at least 0; got -1.');
    const missing = await mcp.callTool({ name: 'sandbox_type', arguments: {} });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /argument "text" is required/);

    // The app turns the agent tools off: the list empties, and the client
    // is told.
    const changed = new Promise((resolve) => mcp.setNotificationHandler(ToolListChangedNotificationSchema, resolve));
    assert.deepEqual(await app.setToolsEnabled(project.path, false), { enabled: false });
    await within(changed, 10_000, 'notifications/tools/list_changed');
    assert.deepEqual((await mcp.listTools()).tools, []);
    const off = await mcp.callTool({ name: 'sandbox_screenshot', arguments: {} });
    assert.equal(off.isError, true);
    assert.match(textOf(off), /agent tools are off/);
  } finally {
    await mcp.close();
    await project.removeSandbox();
    assert.equal(await stop(), 0);
  }
});
