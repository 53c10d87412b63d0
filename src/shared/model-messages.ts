/**
 * Messages for the model that more than one part sends (the client, a workflow): each wording is
 * written once, here. Pure and sandbox-safe.
 */

/** `SESSION_CLOSED`: the conversation has ended, whoever noticed it (the session or the client). */
export const sessionClosedMessage =
  'This conversation has ended; no more tools can be called in it. Answer the user.';

/** `IDEMPOTENCY_CONFLICT`: an intent id reused with other arguments. */
export function intentConflictMessage(input: { intentId: string | undefined; tool: string }): string {
  return (
    `intent "${input.intentId}" was already used for ${input.tool} with other arguments. ` +
    'Nothing was applied for this proposal. Do not retry; ask the user to confirm the request again.'
  );
}
