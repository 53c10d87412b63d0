import type { CallContext } from '../calls/call-context';
import type { CallerPolicy } from './policy-schema';

/**
 * The caller's policy as it applies to a call in `context`: the first `contexts` entry whose channel
 * and tenant (each when it names one) match the call's replaces the fields it gives (tools, autonomy,
 * approval, limits, untrustedText). Pure: the evaluation and the credential minter both use it, so
 * they judge a call by the same rules.
 */
export function callerPolicyIn(input: {
  callerPolicy: CallerPolicy;
  context: CallContext | undefined;
}): CallerPolicy {
  const { callerPolicy, context } = input;
  const entry = callerPolicy.contexts?.find(
    ({ when }) =>
      (when.channel === undefined || when.channel === context?.channel) &&
      (when.tenant === undefined || when.tenant === context?.tenant),
  );
  if (!entry) return callerPolicy;
  return {
    ...callerPolicy,
    ...(entry.tools !== undefined ? { tools: entry.tools } : {}),
    ...(entry.autonomy !== undefined ? { autonomy: entry.autonomy } : {}),
    ...(entry.approval !== undefined ? { approval: entry.approval } : {}),
    ...(entry.limits !== undefined ? { limits: entry.limits } : {}),
    ...(entry.untrustedText !== undefined ? { untrustedText: entry.untrustedText } : {}),
  };
}
