import { describe, expect, it } from 'vitest';
import { retryingTransient, transientQueryFailure } from './transient-retry';

/** An error shaped like the client's: a ServiceError whose cause carries the server's status text. */
function serviceError(causeMessage: string): Error {
  const error = new Error('Failed to query Workflow');
  error.name = 'ServiceError';
  (error as Error & { cause: Error }).cause = new Error(causeMessage);
  return error;
}

describe('retryingTransient', () => {
  it('asks a query again while the newest run has not had its first workflow task, then answers', async () => {
    let attempts = 0;
    const answer = await retryingTransient(
      async () => {
        attempts++;
        if (attempts < 3) throw serviceError('9 FAILED_PRECONDITION: Workflow task is not scheduled yet.');
        return 'stats';
      },
      { failures: transientQueryFailure, forMs: 5_000 },
    );
    expect(answer).toBe('stats');
    expect(attempts).toBe(3);
  });

  it('throws at once what is not transient, and a query failure when retrying updates only', async () => {
    let attempts = 0;
    const notFound = new Error('workflow not found');
    notFound.name = 'WorkflowNotFoundError';
    await expect(
      retryingTransient(
        async () => {
          attempts++;
          throw notFound;
        },
        { failures: transientQueryFailure },
      ),
    ).rejects.toBe(notFound);
    expect(attempts).toBe(1);
    const notScheduled = serviceError('9 FAILED_PRECONDITION: Workflow task is not scheduled yet.');
    await expect(
      retryingTransient(async () => {
        attempts++;
        throw notScheduled;
      }),
    ).rejects.toBe(notScheduled);
    expect(attempts).toBe(2);
  });

  it('gives up after its time and throws the last failure', async () => {
    let attempts = 0;
    const started = Date.now();
    const failure = serviceError('9 FAILED_PRECONDITION: Workflow task is not scheduled yet.');
    await expect(
      retryingTransient(
        async () => {
          attempts++;
          throw failure;
        },
        { failures: transientQueryFailure, forMs: 300 },
      ),
    ).rejects.toBe(failure);
    expect(attempts).toBeGreaterThan(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });
});
