// What a schema written as JSON Schema says where zod has a type JSON Schema cannot express (a date, a
// bigint, a transform's result...). Left to zod's `unrepresentable: 'any'`, such a field is written as
// `{}`, any value, so a change from or to it shows nowhere; written as a marker, it does.
import type { z } from 'zod';

/** The keyword of the marker: its value is the zod type's name (`date`, `bigint`, `transform`...). */
export const zodTypeKeyword = 'x-zod-type';

/**
 * For `z.toJSONSchema`'s `unrepresentable` option: writes a type JSON Schema cannot express as
 * `{"x-zod-type": "<zod type>"}` instead of throwing or writing `{}`. Schemas without such a type are
 * written exactly as before. Pure.
 */
export function markUnrepresentable(context: { zodSchema: z.core.$ZodType }): Record<string, string> {
  return { [zodTypeKeyword]: context.zodSchema._zod.def.type };
}
