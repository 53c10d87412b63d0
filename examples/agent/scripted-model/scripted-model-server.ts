// A stand-in for an LLM behind the interface a real one uses: an HTTP server speaking OpenAI's Chat
// Completions (`POST /v1/chat/completions`, JSON or server-sent events; `GET /v1/models`), whose
// answers come from a script of turns played against the conversation each request carries.
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setImmediate as nextTick, setTimeout as sleep } from 'node:timers/promises';
import type { AssistantAnswer } from './chat-completions-wire';
import { chatCompletion, chatCompletionChunks, estimateUsage, wireId } from './chat-completions-wire';
import { ChatRequestError, parseChatRequest } from './chat-request';
import { readConversation } from './conversation';
import type { ModelScript } from './model-script';
import { playScript } from './model-script';
import { modelScripts } from './scripts';

/** One chat completion request the server answered. */
export interface ServedRequest {
  /** The script, named by the request's `model`. */
  model: string;
  stream: boolean;
  /** The tools the request offered, by name. */
  offeredTools: string[];
  /** The turn played (0-based: the number of assistant messages already in the conversation). */
  turn: number;
  /** The tools the answer called, in order; empty for a text answer. */
  calledTools: string[];
  /** True when the conversation had left the script and the answer says SCRIPT DIVERGED. */
  diverged: boolean;
}

/** A running scripted model server; `close()` ends open connections and stops it. */
export interface ScriptedModelServer {
  /** The base URL an OpenAI client takes, `http://127.0.0.1:<port>/v1`. */
  baseURL: string;
  port: number;
  /** The model ids it serves: its scripts' names. */
  models: readonly string[];
  /** Every chat completion request answered so far, oldest first. */
  requests: readonly ServedRequest[];
  /** The most chat completion requests it has had in flight at once. */
  readonly peakInFlight: number;
  close(): Promise<void>;
}

// A long conversation is a few hundred KiB; the cap keeps a runaway client from filling memory.
const maxBodyBytes = 4 * 1024 * 1024;

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // The rest of an oversized body is drained and dropped, so the 413 can still be sent.
      if (size > maxBodyBytes)
        reject(new ChatRequestError(413, `The request body is larger than ${maxBodyBytes} bytes.`));
      else chunks.push(chunk);
    });
    request.on('error', reject);
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

/**
 * Starts the server on `host` (127.0.0.1) and `port` (0: any free port). Each script is a model id;
 * the model keeps no state between requests: it reads the conversation it is sent and plays the turn
 * the conversation is at. Any API key is accepted.
 */
export async function startScriptedModelServer(
  input: {
    scripts?: readonly ModelScript[];
    host?: string;
    port?: number;
    /** How long each chat completion takes to start answering, as a model thinks (default 0). */
    latencyMs?: number;
  } = {},
): Promise<ScriptedModelServer> {
  const scripts = input.scripts ?? modelScripts;
  const host = input.host ?? '127.0.0.1';
  const requests: ServedRequest[] = [];
  let inFlight = 0;
  let peakInFlight = 0;
  const created = () => Math.floor(Date.now() / 1000);
  const modelEntry = (script: ModelScript) => ({
    id: script.name,
    object: 'model',
    created: 0,
    owned_by: 'toolgate-scripted-model',
  });

  async function completeChat(request: IncomingMessage, response: ServerResponse): Promise<void> {
    inFlight += 1;
    peakInFlight = Math.max(peakInFlight, inFlight);
    try {
      if (input.latencyMs) await sleep(input.latencyMs);
      await answerChat(request, response);
    } finally {
      inFlight -= 1;
    }
  }

  async function answerChat(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const text = await readBody(request);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new ChatRequestError(
        400,
        'We could not parse the JSON body of your request. Send a JSON object with model and messages.',
      );
    }
    const chat = parseChatRequest(body);
    const script = scripts.find((candidate) => candidate.name === chat.model);
    if (!script) {
      throw new ChatRequestError(
        404,
        `The model '${chat.model}' does not exist. This server plays the scripts: ${scripts.map((entry) => entry.name).join(', ')}.`,
        'model',
        'model_not_found',
      );
    }
    const conversation = readConversation(chat);
    const played = playScript(script, conversation);
    const answer: AssistantAnswer =
      played.reply.kind === 'text'
        ? { content: played.reply.text, toolCalls: [] }
        : {
            content: null,
            toolCalls: played.reply.calls.map((call) => ({
              id: wireId('call_'),
              name: call.name,
              arguments: JSON.stringify(call.arguments),
            })),
          };
    const stream = chat.stream === true;
    requests.push({
      model: script.name,
      stream,
      offeredTools: [...conversation.offeredTools],
      turn: conversation.turn,
      calledTools: answer.toolCalls.map((call) => call.name),
      diverged: played.diverged,
    });
    const wire = {
      id: wireId('chatcmpl-'),
      model: script.name,
      created: created(),
      answer,
      usage: estimateUsage({ requestCharacters: text.length, answer }),
    };
    if (!stream) {
      sendJson(response, 200, chatCompletion(wire));
      return;
    }
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    const chunks = chatCompletionChunks({
      ...wire,
      includeUsage: chat.stream_options?.include_usage === true,
    });
    for (const chunk of chunks) {
      response.write(`data: ${JSON.stringify(chunk)}\n\n`);
      // One write per event loop turn, so the client sees the chunks arrive apart, as from a model.
      await nextTick();
    }
    response.end('data: [DONE]\n\n');
  }

  async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://scripted-model').pathname.replace(/\/+$/, '');
    if (request.method === 'POST' && path === '/v1/chat/completions') return completeChat(request, response);
    if (request.method === 'GET' && path === '/v1/models') {
      return sendJson(response, 200, { object: 'list', data: scripts.map(modelEntry) });
    }
    const modelPath = /^\/v1\/models\/(.+)$/.exec(path);
    if (request.method === 'GET' && modelPath?.[1]) {
      const script = scripts.find((candidate) => candidate.name === decodeURIComponent(modelPath[1]!));
      if (script) return sendJson(response, 200, modelEntry(script));
      throw new ChatRequestError(
        404,
        `The model '${modelPath[1]}' does not exist.`,
        'model',
        'model_not_found',
      );
    }
    throw new ChatRequestError(404, `Unknown request URL: ${request.method} ${path}.`, null, 'unknown_url');
  }

  const server = createServer((request, response) => {
    route(request, response).catch((error: unknown) => {
      const refusal =
        error instanceof ChatRequestError
          ? error
          : new ChatRequestError(
              500,
              `The scripted model failed: ${String(error)}`,
              null,
              null,
              'server_error',
            );
      if (response.headersSent) response.destroy();
      else sendJson(response, refusal.status, refusal.body());
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(input.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://${host}:${port}/v1`,
    port,
    models: scripts.map((script) => script.name),
    requests,
    get peakInFlight() {
      return peakInFlight;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // Clients keep connections alive; end them so close() returns now.
        server.closeAllConnections();
      }),
  };
}
