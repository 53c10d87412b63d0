import type { Context, MiddlewareHandler } from 'hono';

/**
 * Refuses a request body over `maxBytes`, whatever its framing: a `Content-Length` above it is refused
 * before anything is read; any other body (chunked, or a length that lies) is read and counted, and
 * refused once it passes the limit. A body within it is handed on as the request's body, so handlers
 * read it as usual. Unlike hono's `bodyLimit`, it builds no Request from node-server's own (which
 * throws on a chunked body when the server does not replace the global Request).
 */
export function limitBody(input: {
  maxBytes: number;
  onTooLarge: (context: Context) => Response | Promise<Response>;
}): MiddlewareHandler {
  const { maxBytes } = input;
  return async (context, next) => {
    const raw = context.req.raw;
    if (!raw.body) return next();
    const declared = raw.headers.get('content-length');
    if (declared !== null && !raw.headers.has('transfer-encoding') && Number(declared) > maxBytes) {
      return input.onTooLarge(context);
    }
    const reader = raw.body.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        void reader.cancel().catch(() => undefined);
        return input.onTooLarge(context);
      }
      chunks.push(value);
    }
    const headers = new Headers(raw.headers);
    headers.delete('transfer-encoding');
    headers.set('content-length', String(size));
    context.req.raw = new Request(raw.url, {
      method: raw.method,
      headers,
      body: Buffer.concat(chunks),
      signal: raw.signal,
    });
    return next();
  };
}
