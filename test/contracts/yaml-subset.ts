// A reader for the block YAML a GitHub Actions workflow is written in, so a test can check the
// workflow's structure without a YAML package among the dependencies: block mappings and sequences,
// plain, single- and double-quoted scalars, `|` and `>` block scalars, comments. Anything else (tabs,
// flow collections, anchors, a line at an indentation nothing opened, a key given twice) throws with
// its line number, so a file this cannot read is a failing test, never a silently wrong value.

/** A YAML value as this reader builds it. */
export type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue };

interface Line {
  number: number;
  indent: number;
  text: string;
}

/** Reads a YAML document of the subset above; throws `line N: problem` on anything outside it. */
export function parseYamlSubset(source: string): YamlValue {
  const raw = source.split(/\r?\n/);
  raw.forEach((line, index) => {
    if (/^\t| \t/.test(line.match(/^[\t ]*/)?.[0] ?? ''))
      throw new Error(`line ${index + 1}: a tab in the indentation`);
  });
  const reader = new Reader(raw);
  const first = reader.peek();
  if (!first) return null;
  if (first.indent !== 0) throw new Error(`line ${first.number}: the document must start at column 0`);
  const value = reader.block(0);
  const rest = reader.peek();
  if (rest) throw new Error(`line ${rest.number}: indented as nothing above it opened`);
  return value;
}

class Reader {
  private index = 0;

  constructor(private readonly raw: string[]) {}

  /** The next line with content (comments and blank lines skipped), without consuming it. */
  peek(): Line | undefined {
    while (this.index < this.raw.length) {
      const text = this.raw[this.index]!;
      const trimmed = text.trim();
      if (trimmed === '' || trimmed.startsWith('#')) {
        this.index++;
        continue;
      }
      return { number: this.index + 1, indent: text.length - text.trimStart().length, text: trimmed };
    }
    return undefined;
  }

  private take(): Line {
    const line = this.peek()!;
    this.index++;
    return line;
  }

  /** A mapping or a sequence whose lines start at `indent`. */
  block(indent: number): YamlValue {
    const line = this.peek()!;
    return line.text === '-' || line.text.startsWith('- ') ? this.sequence(indent) : this.mapping(indent);
  }

  private sequence(indent: number): YamlValue[] {
    const items: YamlValue[] = [];
    for (let line = this.peek(); line && line.indent === indent; line = this.peek()) {
      if (!(line.text === '-' || line.text.startsWith('- '))) {
        throw new Error(`line ${line.number}: a mapping key among the items of a sequence`);
      }
      this.take();
      const content = line.text.slice(1).trimStart();
      if (content === '') {
        const next = this.peek();
        items.push(next && next.indent > indent ? this.block(next.indent) : null);
      } else if (keyOf(content)) {
        // `- key: value` opens a mapping whose keys line up with `key`.
        const column = indent + (line.text.length - content.length);
        items.push(this.mapping(column, { ...line, indent: column, text: content }));
      } else items.push(scalar(content, line.number));
    }
    return items;
  }

  private mapping(indent: number, first?: Line): { [key: string]: YamlValue } {
    const map: { [key: string]: YamlValue } = {};
    let line: Line | undefined = first ?? this.peek();
    while (line && line.indent === indent) {
      if (line !== first) this.take();
      const entry = keyOf(line.text);
      if (!entry) throw new Error(`line ${line.number}: expected "key: value", got "${line.text}"`);
      if (Object.hasOwn(map, entry.key))
        throw new Error(`line ${line.number}: key "${entry.key}" given twice`);
      map[entry.key] = this.valueAfter({ line, indent, rest: entry.rest });
      line = this.peek();
    }
    if (line && line.indent > indent)
      throw new Error(`line ${line.number}: indented as nothing above it opened`);
    return map;
  }

  /** The value of a key: on its line, a block scalar, or the block indented under it. */
  private valueAfter(input: { line: Line; indent: number; rest: string }): YamlValue {
    const { line, indent, rest } = input;
    if (/^[|>][+-]?$/.test(rest)) return this.blockScalar({ style: rest, parentIndent: indent, line });
    if (rest !== '') return scalar(rest, line.number);
    const next = this.peek();
    if (next && next.indent > indent) return this.block(next.indent);
    return null;
  }

  /** `|` keeps the lines, `>` folds them into one; `-` drops the final newline, `+` keeps every one. */
  private blockScalar(input: { style: string; parentIndent: number; line: Line }): string {
    const lines: string[] = [];
    let contentIndent: number | undefined;
    while (this.index < this.raw.length) {
      const text = this.raw[this.index]!;
      const indent = text.length - text.trimStart().length;
      if (text.trim() === '') {
        lines.push('');
        this.index++;
        continue;
      }
      if (indent <= input.parentIndent) break;
      contentIndent ??= indent;
      if (indent < contentIndent)
        throw new Error(`line ${this.index + 1}: less indented than its block scalar`);
      lines.push(text.slice(contentIndent));
      this.index++;
    }
    while (lines.length && lines.at(-1) === '') lines.pop();
    const body = input.style.startsWith('>') ? lines.join(' ').replace(/ {2,}/g, ' ') : lines.join('\n');
    if (input.style.endsWith('-')) return body;
    return `${body}\n`;
  }
}

/** `key: rest` or `key:` outside quotes; undefined when the text is not a mapping entry. */
function keyOf(text: string): { key: string; rest: string } | undefined {
  if (text.startsWith('"') || text.startsWith("'")) {
    const quote = text[0]!;
    const end = text.indexOf(quote, 1);
    if (end > 0 && /^:(\s|$)/.test(text.slice(end + 1))) {
      return { key: text.slice(1, end), rest: stripComment(text.slice(end + 2).trim()) };
    }
    return undefined;
  }
  const match = /^([^\s#'"{}[\],&*!|>%@`][^:#]*?):(?:\s+(.*))?$/.exec(text);
  if (!match?.[1]) return undefined;
  return { key: match[1].trim(), rest: stripComment((match[2] ?? '').trim()) };
}

/** The text without a trailing ` # comment` that sits outside quotes. */
function stripComment(text: string): string {
  let quote: string | undefined;
  for (let index = 0; index < text.length; index++) {
    const character = text[index]!;
    if (quote) {
      if (character === quote) quote = undefined;
    } else if (character === '"' || character === "'") {
      if (index === 0) quote = character;
    } else if (character === '#' && (index === 0 || text[index - 1] === ' ')) {
      return text.slice(0, index).trimEnd();
    }
  }
  return text;
}

function scalar(text: string, lineNumber: number): YamlValue {
  if (text.startsWith("'")) {
    if (!text.endsWith("'") || text.length < 2) throw new Error(`line ${lineNumber}: an unterminated '...'`);
    return text.slice(1, -1).replace(/''/g, "'");
  }
  if (text.startsWith('"')) {
    if (!text.endsWith('"') || text.length < 2) throw new Error(`line ${lineNumber}: an unterminated "..."`);
    return JSON.parse(text) as string;
  }
  if (/^[[{&*!%@`]/.test(text)) {
    throw new Error(`line ${lineNumber}: "${text}": flow collections, anchors and tags are not read here`);
  }
  if (text === '~' || text === 'null') return null;
  if (text === 'true' || text === 'false') return text === 'true';
  if (/^-?\d+$/.test(text)) return Number(text);
  return text;
}
