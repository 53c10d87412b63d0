// Just enough Markdown for the docs test: fenced code blocks, tables under a heading, relative links,
// heading anchors as GitHub makes them, and the `npm run toolgate -- …` commands a page shows.

export interface CodeBlock {
  /** The fence's info string, e.g. `ts`, `ts check`, `sh`. */
  info: string;
  code: string;
}

/** The fenced code blocks of `text`, in order. */
export function codeBlocksOf(text: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  let open: { info: string; lines: string[]; fence: string } | undefined;
  for (const line of text.split('\n')) {
    const fence = /^(\s*)(`{3,}|~{3,})(.*)$/.exec(line);
    if (open) {
      if (fence && fence[2]!.startsWith(open.fence) && fence[3]!.trim() === '') {
        blocks.push({ info: open.info, code: open.lines.join('\n') });
        open = undefined;
      } else {
        open.lines.push(line);
      }
    } else if (fence) {
      open = { info: fence[3]!.trim(), lines: [], fence: fence[2]! };
    }
  }
  return blocks;
}

/** `text` without its fenced code blocks (for what is prose: links and inline code). */
function proseOf(text: string): string {
  let inBlock = false;
  return text
    .split('\n')
    .filter((line) => {
      if (/^\s*(`{3,}|~{3,})/.test(line)) {
        inBlock = !inBlock;
        return false;
      }
      return !inBlock;
    })
    .join('\n');
}

/**
 * The cells of each row of the first table after the heading named `heading` (any level), header
 * and separator rows left out; each cell trimmed.
 */
export function tableRowsUnder(text: string, heading: string): string[][] {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => new RegExp(`^#+\\s+${escape(heading)}\\s*$`).test(line));
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const rows: string[][] = [];
  let inTable = false;
  for (const line of lines.slice(start + 1)) {
    if (/^#+\s/.test(line)) break;
    if (line.startsWith('|')) {
      inTable = true;
      rows.push(
        line
          .slice(1, line.trimEnd().endsWith('|') ? line.trimEnd().length - 1 : undefined)
          .split('|')
          .map((cell) => cell.trim()),
      );
    } else if (inTable) {
      break;
    }
  }
  // The header row and the |---| row.
  return rows.slice(2);
}

/** The targets of the Markdown links and images in `text` that are not URLs (`http:`, `mailto:` …). */
export function relativeLinksOf(text: string): string[] {
  const prose = proseOf(text).replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** The anchors GitHub gives the headings of `text` (`## The path of a call` is `#the-path-of-a-call`). */
export function headingAnchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseOf(text).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

export interface DocumentedCommand {
  /** The command as the page shows it, after `npm run toolgate --`. */
  text: string;
  /** Its words, quotes removed, up to a `#` comment. */
  words: string[];
}

/**
 * Every `npm run toolgate -- …` a page shows: in code blocks (a line ending in `\` goes on) and in
 * inline code. A placeholder such as `<call id>` is a word like any other argument.
 */
export function documentedCliCommands(text: string): DocumentedCommand[] {
  const found: string[] = [];
  for (const block of codeBlocksOf(text)) {
    const joined = block.code.replace(/\\\n\s*/g, ' ');
    for (const line of joined.split('\n')) {
      const at = line.indexOf('npm run toolgate -- ');
      if (at >= 0) found.push(line.slice(at + 'npm run toolgate -- '.length));
    }
  }
  for (const [, inline] of proseOf(text).matchAll(/`([^`\n]*)`/g)) {
    const at = inline!.indexOf('npm run toolgate -- ');
    if (at >= 0) found.push(inline!.slice(at + 'npm run toolgate -- '.length));
  }
  return found.map((command) => ({ text: command.trim(), words: shellWords(command) }));
}

/** Splits a shell command line into words: quotes group and are removed, `#` starts a comment. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let quote: string | undefined;
  let inWord = false;
  for (const char of line) {
    if (quote) {
      if (char === quote) quote = undefined;
      else word += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else if (char === '#' && !inWord) {
      break;
    } else if ((char === ';' || char === '|' || char === '&') && !inWord) {
      break;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
