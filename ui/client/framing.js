// The LSP base protocol's framing, which `pilot-sandbox serve` speaks on
// stdio: "Content-Length: N\r\n\r\n" and N bytes of UTF-8 JSON. Works on
// Uint8Arrays, so it needs nothing from Node.

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const HEADER_END = encoder.encode('\r\n\r\n');
/** Headers longer than this are not headers. */
const MAX_HEADER_BYTES = 4096;

/**
 * Frames one message.
 *
 * @param {object} message
 * @returns {Uint8Array}
 */
export function encodeFrame(message) {
  const body = encoder.encode(JSON.stringify(message));
  const header = encoder.encode(`Content-Length: ${body.length}\r\n\r\n`);
  const frame = new Uint8Array(header.length + body.length);
  frame.set(header);
  frame.set(body, header.length);
  return frame;
}

/**
 * Reassembles messages from chunks of a byte stream, however the chunks
 * cut them.
 */
export class FrameDecoder {
  constructor() {
    /** @type {Uint8Array} */
    this.buffer = new Uint8Array(0);
  }

  /**
   * Adds a chunk and returns the messages it completed. Throws on a
   * stream that is not Content-Length framed JSON: there is no way to
   * find the next frame after that.
   *
   * @param {Uint8Array} chunk
   * @returns {any[]}
   */
  push(chunk) {
    const joined = new Uint8Array(this.buffer.length + chunk.length);
    joined.set(this.buffer);
    joined.set(chunk, this.buffer.length);
    this.buffer = joined;
    const messages = [];
    for (;;) {
      const end = indexOf(this.buffer, HEADER_END);
      if (end < 0) {
        if (this.buffer.length > MAX_HEADER_BYTES) throw new Error('no Content-Length header in the stream');
        return messages;
      }
      const length = contentLength(decoder.decode(this.buffer.subarray(0, end)));
      const start = end + HEADER_END.length;
      if (this.buffer.length < start + length) return messages;
      const body = this.buffer.subarray(start, start + length);
      this.buffer = this.buffer.slice(start + length);
      messages.push(JSON.parse(decoder.decode(body)));
    }
  }
}

/**
 * @param {string} headers
 * @returns {number}
 */
function contentLength(headers) {
  for (const line of headers.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === 'content-length') {
      const value = line.slice(colon + 1).trim();
      if (/^\d+$/.test(value)) return Number(value);
    }
  }
  throw new Error(`bad frame headers: ${JSON.stringify(headers.slice(0, 100))}`);
}

/**
 * @param {Uint8Array} haystack
 * @param {Uint8Array} needle
 * @returns {number}
 */
function indexOf(haystack, needle) {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) continue outer;
    }
    return i;
  }
  return -1;
}
