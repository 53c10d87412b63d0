import { authorityOf, isLoopbackHost } from '../mcp/http-access';

/*
 * Which `Host` headers the approvals console answers. A page of another site can point its own DNS
 * name at this console's address (DNS rebinding); its requests then carry that name as their Host,
 * so the console accepts only names it was told are its own. Pure.
 */

/** Where a console listens and the URL browsers use, which together say which names are its own. */
export interface ConsoleHostRule {
  /** The address it listens on. */
  boundHost: string;
  /** The port it listens on. */
  port: number;
  /** The URL browsers use (behind a reverse proxy), if any. */
  publicUrl?: string;
}

/** True for a wildcard address (every interface): not a name a browser uses. */
export function isWildcardHost(host: string): boolean {
  return ['0.0.0.0', '::', '[::]'].includes(host);
}

/**
 * Whether the `Host` header names this console: the public URL's host and port; a loopback name
 * when it listens on loopback or on every interface; with no public URL, the address and port it
 * listens on when that is one other address. Anything else, or no Host at all, is refused.
 */
export function consoleHostAllowed(input: {
  hostHeader: string | undefined;
  rule: ConsoleHostRule;
}): boolean {
  const { rule } = input;
  const given = parseAuthority(input.hostHeader);
  if (!given) return false;
  if (rule.publicUrl !== undefined) {
    const url = new URL(rule.publicUrl);
    const defaultPort = url.protocol === 'https:' ? '443' : '80';
    if (given.hostname === url.hostname && (given.port || defaultPort) === (url.port || defaultPort)) {
      return true;
    }
  }
  if (isLoopbackHost(rule.boundHost) || isWildcardHost(rule.boundHost)) return isLoopbackHost(given.hostname);
  // Named by a public URL, it answers to that name alone.
  if (rule.publicUrl !== undefined) return false;
  const bound = parseAuthority(authorityOf({ host: rule.boundHost, port: rule.port }));
  return bound !== undefined && given.hostname === bound.hostname && (given.port || '80') === bound.port;
}

/** A Host header's lowercase name and its port as written ('' when none), or undefined when it is not one. */
function parseAuthority(header: string | undefined): { hostname: string; port: string } | undefined {
  if (header === undefined || header === '' || /[\s/?#@\\]/.test(header)) return undefined;
  try {
    const url = new URL(`http://${header}`);
    // URL drops port 80 for http; the header's own port is what was sent.
    const port = /:(\d{1,5})$/.exec(header)?.[1];
    return { hostname: url.hostname.toLowerCase(), port: port === undefined ? '' : String(Number(port)) };
  } catch {
    return undefined;
  }
}
