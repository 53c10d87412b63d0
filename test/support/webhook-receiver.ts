import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver saw, and what it answered. */
export interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json: Record<string, unknown>;
  answered: number;
  atMs: number;
}

/** A local webhook receiver on 127.0.0.1: records every POST; can answer 500 to the next N of an event. */
export async function startWebhookReceiver() {
  const received: Received[] = [];
  const failures: { path: string; event: string; left: number }[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const json = JSON.parse(body) as Record<string, unknown>;
      const path = request.url ?? '/';
      const failure = failures.find((f) => f.path === path && f.event === json.event && f.left > 0);
      if (failure) failure.left--;
      const answered = failure ? 500 : 200;
      received.push({ path, headers: request.headers, body, json, answered, atMs: Date.now() });
      response.writeHead(answered, { 'content-type': 'text/plain' }).end(answered === 200 ? 'ok' : 'down');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    /** What reached the receiver for one call, in order. */
    of: (callId: string) => received.filter((r) => r.json.callId === callId),
    failNext: (input: { path: string; event: string; times: number }) =>
      failures.push({ path: input.path, event: input.event, left: input.times }),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
