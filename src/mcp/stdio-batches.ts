// JSON-RPC batches over stdio. The MCP SDK's stdio transport reads one message per line and drops a
// line that holds an array without a word to the client; the Streamable HTTP transport answers each
// message of a batch (up to 100). This puts the stdio transport on the same footing.
import { Transform } from 'node:stream';
import type { Readable } from 'node:stream';

/** The most messages one batch may hold, as the SDK's HTTP transport allows. */
export const maxBatchMessages = 100;

/**
 * The server's standard input with every JSON-RPC batch (a line holding an array) split into one line
 * per message, each then answered on its own, as over HTTP. A batch that is empty or holds more than
 * `maxBatchMessages` is refused: `refuse` is given the JSON-RPC error line to write (`id: null`), and
 * nothing of it runs. Every other line passes through unchanged.
 */
export function splittingBatches(input: { stdin: Readable; refuse: (line: string) => void }): Readable {
  let pending = '';
  const splitter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      pending += chunk.toString('utf8');
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const line = pending.slice(0, newline + 1);
        pending = pending.slice(newline + 1);
        this.push(linesOf(line, input.refuse));
        newline = pending.indexOf('\n');
      }
      done();
    },
    flush(done) {
      if (pending !== '') this.push(pending);
      done();
    },
  });
  return input.stdin.pipe(splitter);
}

/** One input line as the lines the transport should read ('' when the batch was refused). */
function linesOf(line: string, refuse: (line: string) => void): string {
  if (!line.trimStart().startsWith('[')) return line;
  let batch: unknown;
  try {
    batch = JSON.parse(line);
  } catch {
    return line; // not JSON: the transport reports it as it does any other
  }
  if (!Array.isArray(batch)) return line;
  if (batch.length === 0 || batch.length > maxBatchMessages) {
    refuse(
      `${JSON.stringify({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message:
            batch.length === 0
              ? 'Invalid Request: an empty batch'
              : `Invalid Request: Batch must not exceed ${maxBatchMessages} messages`,
        },
      })}\n`,
    );
    return '';
  }
  return batch.map((message) => `${JSON.stringify(message)}\n`).join('');
}
