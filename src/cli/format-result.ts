import type { ToolResult } from '../shared/tool-result';

/** Renders a result for a person at a terminal: the code first, then what the model is told. */
export function formatResult(result: ToolResult): string {
  const lines = [
    `${result.ok ? 'OK' : result.code}  ${result.tool || '(no tool)'}${result.replayed ? '  (replayed: nothing ran again)' : ''}`,
    `  call id: ${result.callId}`,
    `  effect:  ${result.effect}`,
    `  message: ${result.message}`,
  ];
  if (result.data !== undefined) {
    const data = JSON.stringify(result.data, null, 2).split('\n').join('\n  ');
    lines.push(`  data:    ${data}`);
  }
  return lines.join('\n');
}
