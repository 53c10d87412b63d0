// `toolgate/ai-sdk`: toolgate's tools for the Vercel AI SDK (`ai`, an optional peer dependency).
export { aiSdkTools } from './providers/ai-sdk';
export type { ToolGateAiSdkTool } from './providers/ai-sdk';
export type { ProviderSession } from './providers/provider-calls';
