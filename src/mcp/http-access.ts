// Who may reach the MCP server over HTTP, decided from the request's headers before anything runs:
// the Host and the Origin (a web page must not drive a local server through DNS rebinding) and the
// bearer token. Pure functions.

const loopbackHostnames = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** True for a name or address that reaches this machine only. */
export function isLoopbackHost(host: string): boolean {
  return loopbackHostnames.has(host.toLowerCase()) || /^127(\.\d{1,3}){3}$/.test(host);
}

/** `host:port` as a URL's authority: IPv6 addresses in brackets. */
export function authorityOf(input: { host: string; port: number }): string {
  const host = input.host.includes(':') && !input.host.startsWith('[') ? `[${input.host}]` : input.host;
  return `${host}:${input.port}`;
}

/**
 * The origins a browser page may call from when none are configured: the server's own, under each
 * loopback name when it listens on loopback (a page served by this server or a local tool), else
 * under its host.
 */
export function defaultAllowedOrigins(input: { host: string; port: number }): string[] {
  const hosts = isLoopbackHost(input.host) ? ['127.0.0.1', 'localhost', '[::1]'] : [input.host];
  return hosts.map((host) => `http://${authorityOf({ host, port: input.port })}`);
}

/**
 * Whether the `Host` header names this server: on loopback, only a loopback name (a rebinding page's
 * request carries the attacker's domain); elsewhere any, as the operator chose to expose it.
 */
export function hostAllowed(input: { hostHeader: string | undefined; boundHost: string }): boolean {
  if (!isLoopbackHost(input.boundHost)) return true;
  if (input.hostHeader === undefined) return false;
  let hostname: string;
  try {
    hostname = new URL(`http://${input.hostHeader}`).hostname;
  } catch {
    return false;
  }
  return isLoopbackHost(hostname);
}

/** Whether a request's `Origin` may call: none (not a browser) or one in the allowlist. */
export function originAllowed(input: { origin: string | undefined; allowed: ReadonlySet<string> }): boolean {
  return input.origin === undefined || input.allowed.has(input.origin.toLowerCase().replace(/\/$/, ''));
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerTokenOf(authorization: string | undefined): string | undefined {
  const match = /^Bearer +([^\s]+) *$/i.exec(authorization ?? '');
  return match?.[1];
}
