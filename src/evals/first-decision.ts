// The model's first decision on a conversation, over any OpenAI-compatible Chat Completions endpoint,
// with plain fetch: one request, `tool_choice: auto`, and nothing after it. No tool runs and no final
// answer is asked for, which is what makes a selection case cost cents instead of a conversation.
import { setTimeout as delay } from 'node:timers/promises';
import type { OpenAIChatTool } from '../providers/openai';
import type { HistoryMessage } from './selection-cases';

/** An OpenAI-compatible endpoint: `baseURL` as OpenAI's clients take it (`http://127.0.0.1:8080/v1`). */
export interface ChatEndpoint {
  baseURL: string;
  /** Sent as a bearer token when given. */
  apiKey?: string;
}

/** What the model chose: the tool calls of its answer, in order (none for a text answer), and its text. */
export interface ModelDecision {
  calls: { name: string; arguments: string }[];
  text: string | null;
  /** The model id the endpoint says answered, when it says one. */
  servedModel?: string;
}

/** The request's outcome: a decision, or why there is none (a transport or protocol failure, never a wrong answer). */
export type DecisionOutcome = { ok: true; decision: ModelDecision } | { ok: false; error: string };

/** How hard to try: per attempt, and how many more attempts a transient failure gets. */
export interface RequestBudget {
  timeoutMs: number;
  retries: number;
  signal?: AbortSignal;
}

// Statuses worth another attempt, as OpenAI's own clients retry them.
const transientStatuses = new Set([408, 409, 429, 500, 502, 503, 504]);
const maxRetryAfterMs = 30_000;

/**
 * Asks for the first decision on `messages` with `tools` offered. Retries connection failures,
 * timeouts and transient statuses (honouring `retry-after`), up to `budget.retries` times; never throws
 * for what the endpoint did, only resolves to the error it ends on.
 */
export async function requestFirstDecision(input: {
  endpoint: ChatEndpoint;
  model: string;
  /** The whole conversation: system prompt, history, the user's message. */
  messages: readonly HistoryMessage[];
  tools: readonly OpenAIChatTool[];
  maxTokens?: number;
  budget: RequestBudget;
}): Promise<DecisionOutcome> {
  const body = JSON.stringify({
    model: input.model,
    messages: input.messages,
    ...(input.tools.length ? { tools: input.tools, tool_choice: 'auto' } : {}),
    ...(input.maxTokens !== undefined ? { max_tokens: input.maxTokens } : {}),
    stream: false,
  });
  const url = `${input.endpoint.baseURL.replace(/\/+$/, '')}/chat/completions`;
  for (let attempt = 0; ; attempt += 1) {
    const sent = await postJson({ url, body, endpoint: input.endpoint, budget: input.budget });
    if (sent.ok) return readDecision(sent.body);
    if (!sent.transient || attempt >= input.budget.retries || input.budget.signal?.aborted) {
      return { ok: false, error: attempt ? `${sent.error} (after ${attempt + 1} attempts)` : sent.error };
    }
    const backoff = sent.retryAfterMs ?? 500 * 2 ** attempt;
    try {
      await delay(backoff, undefined, { signal: input.budget.signal });
    } catch {
      return { ok: false, error: `${sent.error} (stopped before retrying)` };
    }
  }
}

/** The first model the endpoint lists (`GET /models`), for when none is configured. */
export async function firstListedModel(input: {
  endpoint: ChatEndpoint;
  budget: RequestBudget;
}): Promise<{ ok: true; model: string } | { ok: false; error: string }> {
  const url = `${input.endpoint.baseURL.replace(/\/+$/, '')}/models`;
  const got = await send({ url, endpoint: input.endpoint, budget: input.budget });
  if (!got.ok) return got;
  const data = (got.body as { data?: unknown } | null)?.data;
  const first = Array.isArray(data) ? (data[0] as { id?: unknown } | undefined) : undefined;
  return typeof first?.id === 'string'
    ? { ok: true, model: first.id }
    : { ok: false, error: `${url} lists no models` };
}

type Sent =
  { ok: true; body: unknown } | { ok: false; error: string; transient: boolean; retryAfterMs?: number };

function postJson(input: {
  url: string;
  body: string;
  endpoint: ChatEndpoint;
  budget: RequestBudget;
}): Promise<Sent> {
  return send({ ...input, method: 'POST' });
}

async function send(input: {
  url: string;
  method?: 'GET' | 'POST';
  body?: string;
  endpoint: ChatEndpoint;
  budget: RequestBudget;
}): Promise<Sent> {
  const { url, budget } = input;
  const timeout = AbortSignal.timeout(budget.timeoutMs);
  const signal = budget.signal ? AbortSignal.any([timeout, budget.signal]) : timeout;
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: input.method ?? 'GET',
      headers: {
        accept: 'application/json',
        ...(input.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(input.endpoint.apiKey ? { authorization: `Bearer ${input.endpoint.apiKey}` } : {}),
      },
      ...(input.body !== undefined ? { body: input.body } : {}),
      signal,
    });
    text = await response.text();
  } catch (error) {
    if (budget.signal?.aborted) return { ok: false, error: 'stopped', transient: false };
    if (timeout.aborted) {
      return { ok: false, error: `no answer from ${url} within ${budget.timeoutMs} ms`, transient: true };
    }
    return { ok: false, error: `cannot reach ${url}: ${causeOf(error)}`, transient: true };
  }
  if (!response.ok) {
    return {
      ok: false,
      error: `${url} answered HTTP ${response.status}: ${errorMessageOf(text)}`,
      transient: transientStatuses.has(response.status),
      ...retryAfter(response.headers.get('retry-after')),
    };
  }
  try {
    return { ok: true, body: JSON.parse(text) as unknown };
  } catch {
    return {
      ok: false,
      error: `${url} answered with something that is not JSON: ${cut(text)}`,
      transient: false,
    };
  }
}

/** The decision in a Chat Completions body; a body without `choices[0].message` is a protocol failure. */
function readDecision(body: unknown): DecisionOutcome {
  const record = body as { model?: unknown; choices?: { message?: unknown }[] } | null;
  const message = Array.isArray(record?.choices) ? record.choices[0]?.message : undefined;
  if (typeof message !== 'object' || message === null) {
    return { ok: false, error: `the answer has no choices[0].message: ${cut(JSON.stringify(body))}` };
  }
  const { content, tool_calls: toolCalls } = message as { content?: unknown; tool_calls?: unknown };
  const calls = (Array.isArray(toolCalls) ? toolCalls : []).map((call: unknown) => {
    // A function call, or a custom one: its name and its raw argument text, whatever shape they came in.
    const entry = (call ?? {}) as { function?: Record<string, unknown>; custom?: Record<string, unknown> };
    const body = entry.function ?? entry.custom ?? {};
    const raw = body.arguments ?? body.input;
    return {
      name: typeof body.name === 'string' ? body.name : '',
      arguments: typeof raw === 'string' ? raw : (JSON.stringify(raw ?? null) ?? 'null'),
    };
  });
  const text =
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content
            .map((part) => {
              const partText = (part as { text?: unknown } | null)?.text;
              return typeof partText === 'string' ? partText : '';
            })
            .join('')
        : null;
  return {
    ok: true,
    decision: {
      calls,
      text,
      ...(typeof record?.model === 'string' ? { servedModel: record.model } : {}),
    },
  };
}

/** `{error: {message}}` as OpenAI-compatible servers send it, else the body itself, cut short. */
function errorMessageOf(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message =
      typeof body.error === 'string'
        ? body.error
        : typeof body.error?.message === 'string'
          ? body.error.message
          : body.message;
    if (typeof message === 'string') return cut(message);
  } catch {
    // not JSON: shown as it came
  }
  return cut(text) || '(empty body)';
}

function retryAfter(header: string | null): { retryAfterMs?: number } {
  if (header === null) return {};
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(ms) && ms >= 0 ? { retryAfterMs: Math.min(ms, maxRetryAfterMs) } : {};
}

function causeOf(error: unknown): string {
  // fetch says "fetch failed" and puts what happened (ECONNREFUSED, a DNS failure) in `cause`.
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

function cut(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
