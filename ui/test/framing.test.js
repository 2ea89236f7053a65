import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeFrame, FrameDecoder } from '../client/framing.js';

const enc = new TextEncoder();

test('a frame counts bytes, not characters', () => {
  const frame = new TextDecoder().decode(encodeFrame({ text: 'é👋' }));
  assert.equal(frame, 'Content-Length: 17\r\n\r\n{"text":"é👋"}');
});

test('messages are reassembled however the stream is cut', () => {
  const messages = [{ a: 1 }, { b: 'é👋'.repeat(100) }, { c: [1, 2, 3] }];
  const stream = new Uint8Array(messages.flatMap((m) => [...encodeFrame(m)]));
  for (const size of [1, 2, 3, 7, 64, stream.length]) {
    const decoder = new FrameDecoder();
    const got = [];
    for (let i = 0; i < stream.length; i += size) got.push(...decoder.push(stream.subarray(i, i + size)));
    assert.deepEqual(got, messages, `chunks of ${size} bytes`);
  }
});

test('header names are case-insensitive and other headers are ignored', () => {
  const decoder = new FrameDecoder();
  const got = decoder.push(enc.encode('content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}'));
  assert.deepEqual(got, [{}]);
});

test('a stream that is not framed is an error, not a hang', () => {
  assert.throws(() => new FrameDecoder().push(enc.encode('Content-Type: x\r\n\r\n{}')), /bad frame headers/);
  assert.throws(() => new FrameDecoder().push(enc.encode('x'.repeat(5000))), /no Content-Length/);
});
