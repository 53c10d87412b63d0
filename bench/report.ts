// The bench's outputs: the printed table, results.json's shape, and report.html's charts.
import type { HistoryCounts } from './history-counts';
import { countedEvents } from './history-counts';
import type { Summary } from './stats';
import { quantile, sortedCopy } from './stats';

/** One latency scenario, measured one call at a time. */
export interface LatencyResult {
  id: string;
  label: string;
  kind: 'governed' | 'bare' | 'approval';
  summary: Summary;
  errors: number;
  /** Codes (or error names) of the calls that did not answer as expected. */
  errorCodes: Record<string, number>;
  /** Milliseconds, in measurement order (rounded to µs). */
  samples: number[];
}

/** Closed-loop throughput of one scenario at one number of concurrent callers. */
export interface ThroughputResult {
  scenario:
    | 'governed-read'
    | 'bare-activity'
    | 'shaped-read'
    | 'shaped-no-report'
    | 'shaped-no-session'
    | 'governed-write'
    | 'bare-refund';
  label: string;
  callers: number;
  /** Measured window in seconds, summed over rounds. */
  seconds: number;
  calls: number;
  callsPerSecond: number;
  /** Calls per second of each round, in order. */
  perRound: number[];
  latency: Summary;
  errors: number;
  errorCodes: Record<string, number>;
  /** CPU time of the scenario's worker process (all threads) per call. */
  workerCpuMsPerCall: number;
  /** CPU time of the Temporal server process per call (NaN where /proc cannot be read). */
  serverCpuMsPerCall: number;
  /** CPU time of the bench's own process (the clients: signing, canonical JSON, gRPC) per call. */
  clientCpuMsPerCall: number;
  /** The worst event-loop delay of the worker's main thread during the phases. */
  workerLoopDelayMaxMs: number;
}

/** The pure pipeline's cost per call, in microseconds. */
export interface PureResult {
  id: string;
  label: string;
  microseconds: Summary;
}

/** Peak resident memory of a worker process. */
export interface MemoryResult {
  label: string;
  /** RSS after the warm-up, before the throughput phases. */
  idleMb: number;
  /** The highest RSS sampled during the 50-caller phases. */
  peakMb: number;
  samples: number;
  /** Warnings the worker's SDK logged during the whole run, by code (e.g. TMPRL1104: workflow task over 5 s). */
  warnings: Record<string, number>;
}

/** Everything a run measured; written as bench/results.json. */
export interface BenchResults {
  mode: 'quick' | 'full';
  startedAt: string;
  durationSeconds: number;
  setupSeconds: number;
  commit: string;
  /** Uncommitted changes were measured too: the commit alone does not name the code. */
  workingTree: { dirty: boolean; changedFiles: string[]; diffSha256: string | null };
  machine: { cores: number; cpuModel: string; totalMemoryMb: number; platform: string; node: string };
  plan: Record<string, unknown>;
  latency: LatencyResult[];
  ratios: { label: string; p50: number; p95: number; p99: number }[];
  throughput: ThroughputResult[];
  pure: PureResult[];
  roundTrips: HistoryCounts[];
  memory: MemoryResult[];
  notes: string[];
}

const pad = (text: string, width: number): string => text.padEnd(width);
const padLeft = (text: string, width: number): string => text.padStart(width);

function fixed(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

function ratio(a: number, b: number): number {
  return b === 0 ? Number.NaN : a / b;
}

/** The ratios printed under the latency table. */
export function latencyRatios(latency: readonly LatencyResult[]): BenchResults['ratios'] {
  const find = (id: string) => latency.find((result) => result.id === id)?.summary;
  const pairs: [string, string, string][] = [
    ['governed read / bare activity', 'governed-read', 'bare-activity'],
    ['governed read / bare local activity', 'governed-read', 'bare-local'],
    ['governed read / bare shaped like it', 'governed-read', 'shaped-read'],
    ['governed rejection / bare activity', 'governed-reject', 'bare-activity'],
    ['governed write / bare refund activity', 'governed-write', 'bare-refund'],
  ];
  return pairs.flatMap(([label, governedId, bareId]) => {
    const governed = find(governedId);
    const bare = find(bareId);
    if (!governed || !bare) return [];
    return [
      {
        label,
        p50: ratio(governed.p50, bare.p50),
        p95: ratio(governed.p95, bare.p95),
        p99: ratio(governed.p99, bare.p99),
      },
    ];
  });
}

/** The table printed at the end of a run (and shown in report.html). */
export function formatTable(results: BenchResults): string {
  const lines: string[] = [];
  const { machine, workingTree } = results;
  const tree = workingTree.dirty
    ? ` + uncommitted changes in ${workingTree.changedFiles.length} file(s)`
    : ' (clean tree)';
  lines.push(
    `toolgate bench, ${results.mode} mode: commit ${results.commit.slice(0, 12)}${tree}`,
    `${machine.cores} cores (${machine.cpuModel}), ${machine.totalMemoryMb} MB, node ${machine.node}; ` +
      `ran ${fixed(results.durationSeconds, 0)} s (setup ${fixed(results.setupSeconds, 0)} s)`,
    '',
  );

  const latencyWidth = 44;
  lines.push(
    pad('Latency, one call at a time (ms)', latencyWidth) +
      ['n', 'p50', 'p95', 'p99', 'mean', 'errors'].map((h) => padLeft(h, 8)).join(''),
  );
  for (const result of results.latency) {
    const s = result.summary;
    lines.push(
      pad(`  ${result.label}`, latencyWidth) +
        [String(s.n), fixed(s.p50), fixed(s.p95), fixed(s.p99), fixed(s.mean), String(result.errors)]
          .map((cell) => padLeft(cell, 8))
          .join(''),
    );
  }
  lines.push('');
  lines.push(
    pad('Ratios, governed / bare', latencyWidth) + ['p50', 'p95', 'p99'].map((h) => padLeft(h, 8)).join(''),
  );
  for (const r of results.ratios) {
    lines.push(
      pad(`  ${r.label}`, latencyWidth) +
        [r.p50, r.p95, r.p99].map((value) => padLeft(`${fixed(value, 2)}x`, 8)).join(''),
    );
  }

  const throughputPairs: [string, ThroughputResult['scenario'], ThroughputResult['scenario']][] = [
    ['', 'governed-read', 'bare-activity'],
    [': vs shaped', 'governed-read', 'shaped-read'],
    [': writes', 'governed-write', 'bare-refund'],
  ];
  for (const [title, governedId, bareId] of throughputPairs) {
    if (!results.throughput.some((t) => t.scenario === governedId)) continue;
    lines.push('');
    const headers = ['callers', 'gov/s', 'bare/s', 'gov/bare', 'gov p50', 'gov p95', 'bare p50', 'bare p95'];
    const cpuHeaders = ['gov cpu', 'bare cpu', 'errors'];
    const cell = 10;
    lines.push(
      pad(`Throughput, closed loop${title}`, 24) +
        [...headers, ...cpuHeaders].map((h) => padLeft(h, cell)).join(''),
    );
    const levels = [...new Set(results.throughput.map((t) => t.callers))].sort((a, b) => a - b);
    levels.forEach((callers, index) => {
      const governed = results.throughput.find((t) => t.callers === callers && t.scenario === governedId);
      const bare = results.throughput.find((t) => t.callers === callers && t.scenario === bareId);
      const nan = Number.NaN;
      const legend = ['  calls/s; latency ms;', '  worker CPU ms/call', ''][index] ?? '';
      lines.push(
        pad(legend, 24) +
          [
            String(callers),
            fixed(governed?.callsPerSecond ?? nan),
            fixed(bare?.callsPerSecond ?? nan),
            `${fixed(ratio(governed?.callsPerSecond ?? nan, bare?.callsPerSecond ?? nan), 2)}x`,
            fixed(governed?.latency.p50 ?? nan),
            fixed(governed?.latency.p95 ?? nan),
            fixed(bare?.latency.p50 ?? nan),
            fixed(bare?.latency.p95 ?? nan),
            fixed(governed?.workerCpuMsPerCall ?? nan),
            fixed(bare?.workerCpuMsPerCall ?? nan),
            `${governed?.errors ?? 0}/${bare?.errors ?? 0}`,
          ]
            .map((text) => padLeft(text, cell))
            .join(''),
      );
    });

    lines.push('');
    const cpuColumns = [
      'callers',
      'gov wrk',
      'gov srv',
      'gov cli',
      'gov all',
      'bare wrk',
      'bare srv',
      'bare cli',
    ];
    lines.push(
      pad(`CPU per call (ms)${title}`, 24) +
        [...cpuColumns, 'bare all', 'gov/bare'].map((h) => padLeft(h, cell)).join(''),
    );
    levels.forEach((callers, index) => {
      const governed = results.throughput.find((t) => t.callers === callers && t.scenario === governedId);
      const bare = results.throughput.find((t) => t.callers === callers && t.scenario === bareId);
      const all = (t: ThroughputResult | undefined) =>
        t ? t.workerCpuMsPerCall + t.serverCpuMsPerCall + t.clientCpuMsPerCall : Number.NaN;
      const legend = ['  worker, server, client', '  (bench), all three', ''][index] ?? '';
      lines.push(
        pad(legend, 24) +
          [
            String(callers),
            fixed(governed?.workerCpuMsPerCall ?? Number.NaN),
            fixed(governed?.serverCpuMsPerCall ?? Number.NaN),
            fixed(governed?.clientCpuMsPerCall ?? Number.NaN),
            fixed(all(governed)),
            fixed(bare?.workerCpuMsPerCall ?? Number.NaN),
            fixed(bare?.serverCpuMsPerCall ?? Number.NaN),
            fixed(bare?.clientCpuMsPerCall ?? Number.NaN),
            fixed(all(bare)),
            `${fixed(ratio(all(governed), all(bare)), 2)}x`,
          ]
            .map((text) => padLeft(text, cell))
            .join(''),
      );
    });
  }
  lines.push(...formatShapeWhatIfs(results.throughput));

  lines.push('');
  lines.push(
    pad('Pure pipeline in-process (µs per call)', latencyWidth) +
      ['n', 'p50', 'p95', 'p99', 'mean'].map((h) => padLeft(h, 8)).join(''),
  );
  for (const result of results.pure) {
    const s = result.microseconds;
    lines.push(
      pad(`  ${result.label}`, latencyWidth) +
        [String(s.n), fixed(s.p50), fixed(s.p95), fixed(s.p99), fixed(s.mean)]
          .map((cell) => padLeft(cell, 8))
          .join(''),
    );
  }

  lines.push('');
  lines.push(...formatRoundTrips(results.roundTrips));

  lines.push('');
  lines.push(
    pad('Worker resident memory (MB)', latencyWidth) + ['idle', 'peak'].map((h) => padLeft(h, 8)).join(''),
  );
  for (const memory of results.memory) {
    const warnings = Object.entries(memory.warnings)
      .map(([code, count]) => `${count}x ${code}`)
      .join(', ');
    lines.push(
      pad(`  ${memory.label}`, latencyWidth) +
        [fixed(memory.idleMb), fixed(memory.peakMb)].map((cell) => padLeft(cell, 8)).join('') +
        (warnings ? `   SDK warnings in the run: ${warnings}` : ''),
    );
  }
  if (results.notes.length > 0) {
    lines.push('');
    for (const note of results.notes) lines.push(`* ${note}`);
  }
  return lines.join('\n');
}

/**
 * The shape's what-ifs at the highest level: the bare baseline shaped like a governed read, then the
 * same without the outcome's signal, then without a session, each with its CPU per call (all three).
 */
function formatShapeWhatIfs(throughput: readonly ThroughputResult[]): string[] {
  const top = Math.max(...throughput.map((t) => t.callers));
  const rows = (['governed-read', 'shaped-read', 'shaped-no-report', 'shaped-no-session'] as const)
    .map((id) => throughput.find((t) => t.callers === top && t.scenario === id))
    .filter((t): t is ThroughputResult => t !== undefined);
  const shaped = rows.find((t) => t.scenario === 'shaped-read');
  if (rows.length < 3 || !shaped) return [];
  const all = (t: ThroughputResult) => t.workerCpuMsPerCall + t.serverCpuMsPerCall + t.clientCpuMsPerCall;
  const cell = 10;
  const lines = [
    '',
    pad(`The shape, ${top} callers`, 44) +
      ['calls/s', 'vs shaped', 'cpu wrk', 'cpu srv', 'cpu cli', 'cpu all', 'vs shaped', 'errors']
        .map((h) => padLeft(h, cell))
        .join(''),
  ];
  for (const t of rows) {
    lines.push(
      pad(`  ${t.label}`, 44) +
        [
          fixed(t.callsPerSecond),
          `${fixed(ratio(t.callsPerSecond, shaped.callsPerSecond), 2)}x`,
          fixed(t.workerCpuMsPerCall),
          fixed(t.serverCpuMsPerCall),
          fixed(t.clientCpuMsPerCall),
          fixed(all(t)),
          `${fixed(ratio(all(t), all(shaped)), 2)}x`,
          String(t.errors),
        ]
          .map((text) => padLeft(text, cell))
          .join(''),
    );
  }
  return lines;
}

function formatRoundTrips(histories: readonly HistoryCounts[]): string[] {
  if (histories.length === 0) return ['Round trips per call: not measured'];
  const width = 30;
  const columnWidth = 15;
  const lines = [
    pad('Per call, from histories', width) +
      histories.map((h) => padLeft(h.id, columnWidth)).join('') +
      padLeft('governed sum', columnWidth) +
      padLeft('shaped sum', columnWidth),
  ];
  const call = histories.find((h) => h.id === 'gov-call');
  const session = histories.find((h) => h.id === 'gov-session');
  const shapedCall = histories.find((h) => h.id === 'shaped-call');
  const shapedSession = histories.find((h) => h.id === 'shaped-session');
  const perCall = (h: HistoryCounts | undefined, name: string): number =>
    h === undefined ? Number.NaN : (h.counts[name] ?? 0) / h.calls;
  const row = (label: string, value: (h: HistoryCounts | undefined) => number): string => {
    const cells = histories.map((h) => value(h));
    const governed = value(call) + value(session);
    const shaped = value(shapedCall) + value(shapedSession);
    const show = (n: number) => (Number.isInteger(n) ? String(n) : fixed(n, 2));
    return (
      pad(`  ${label}`, width) +
      cells.map((n) => padLeft(show(n), columnWidth)).join('') +
      padLeft(show(governed), columnWidth) +
      padLeft(show(shaped), columnWidth)
    );
  };
  for (const [name, label] of countedEvents) lines.push(row(label, (h) => perCall(h, name)));
  lines.push(row('all events', (h) => (h === undefined ? Number.NaN : h.totalEvents / h.calls)));
  lines.push(
    row(
      'task round trips (wft+act)',
      (h) => perCall(h, 'WORKFLOW_TASK_COMPLETED') + perCall(h, 'ACTIVITY_TASK_SCHEDULED'),
    ),
  );
  lines.push(pad('One run each, server clock (ms)', width));
  const timingRows: [string, keyof HistoryCounts['timings']][] = [
    ['first to last event', 'totalMs'],
    ['workflow tasks: wait', 'workflowTaskWaitMs'],
    ['workflow tasks: run', 'workflowTaskRunMs'],
    ['activity tasks: wait', 'activityTaskWaitMs'],
    ['activity tasks: run', 'activityTaskRunMs'],
  ];
  for (const [label, key] of timingRows) {
    lines.push(
      pad(`  ${label}`, width) + histories.map((h) => padLeft(fixed(h.timings[key]), columnWidth)).join(''),
    );
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------
// report.html: inline SVG only, no external assets.

const palette = {
  governed: '#c2410c',
  bare: '#2563eb',
  approval: '#7c3aed',
  grid: '#e5e7eb',
  axis: '#6b7280',
  text: '#111827',
};

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function niceStep(range: number, ticks: number): number {
  const raw = range / ticks;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const normalized = raw / magnitude;
  const step = normalized <= 1 ? 1 : normalized <= 2 ? 2 : normalized <= 5 ? 5 : 10;
  return step * magnitude;
}

/** A histogram of one sample set on a given x range; values above it go into a last "over" bar. */
function histogramSvg(input: {
  title: string;
  samples: readonly number[];
  xMax: number;
  color: string;
  bins: number;
  unit: string;
}): string {
  const width = 270;
  const height = 220;
  const margin = { top: 28, right: 12, bottom: 36, left: 40 };
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  const binWidth = input.xMax / input.bins;
  const counts = new Array<number>(input.bins + 1).fill(0);
  for (const value of input.samples) {
    const index = value >= input.xMax ? input.bins : Math.max(0, Math.floor(value / binWidth));
    counts[index] = (counts[index] ?? 0) + 1;
  }
  const maxCount = Math.max(1, ...counts);
  const barWidth = plotWidth / (input.bins + 1);
  const x = (value: number) =>
    margin.left + (Math.min(value, input.xMax) / input.xMax) * (plotWidth - barWidth);
  const y = (count: number) => margin.top + plotHeight - (count / maxCount) * plotHeight;
  const parts: string[] = [];
  parts.push(
    `<text x="4" y="16" font-size="11" font-weight="600" fill="${palette.text}">${escapeHtml(input.title)}</text>`,
  );
  const step = niceStep(input.xMax, 5);
  for (let tick = 0; tick <= input.xMax + 1e-9; tick += step) {
    const tx = x(tick);
    parts.push(
      `<line x1="${tx.toFixed(1)}" y1="${margin.top}" x2="${tx.toFixed(1)}" y2="${margin.top + plotHeight}" stroke="${palette.grid}"/>`,
      `<text x="${tx.toFixed(1)}" y="${margin.top + plotHeight + 14}" font-size="10" text-anchor="middle" fill="${palette.axis}">${Number(tick.toPrecision(6))}</text>`,
    );
  }
  counts.forEach((count, index) => {
    if (count === 0) return;
    const isOver = index === input.bins;
    const left = margin.left + index * barWidth;
    parts.push(
      `<rect x="${left.toFixed(1)}" y="${y(count).toFixed(1)}" width="${Math.max(1, barWidth - 1).toFixed(1)}" height="${(margin.top + plotHeight - y(count)).toFixed(1)}" fill="${input.color}" opacity="${isOver ? 0.45 : 0.85}"><title>${isOver ? `≥ ${fixed(input.xMax)}` : `${fixed(index * binWidth)}–${fixed((index + 1) * binWidth)}`} ${input.unit}: ${count}</title></rect>`,
    );
  });
  const sorted = sortedCopy(input.samples);
  const markers: [string, number, string][] = [
    ['p50', quantile(sorted, 0.5), '0'],
    ['p95', quantile(sorted, 0.95), '4 3'],
    ['p99', quantile(sorted, 0.99), '1 3'],
  ];
  markers.forEach(([name, value, dash], index) => {
    if (!Number.isFinite(value)) return;
    const mx = x(value);
    parts.push(
      `<line x1="${mx.toFixed(1)}" y1="${margin.top}" x2="${mx.toFixed(1)}" y2="${margin.top + plotHeight}" stroke="${palette.text}" stroke-dasharray="${dash}"/>`,
      `<text x="${(mx + 3).toFixed(1)}" y="${margin.top + 10 + index * 11}" font-size="10" fill="${palette.text}">${name} ${fixed(value)}</text>`,
    );
  });
  parts.push(
    `<line x1="${margin.left}" y1="${margin.top + plotHeight}" x2="${width - margin.right}" y2="${margin.top + plotHeight}" stroke="${palette.axis}"/>`,
    `<text x="${margin.left + plotWidth / 2}" y="${height - 6}" font-size="10" text-anchor="middle" fill="${palette.axis}">${escapeHtml(input.unit)} (n = ${input.samples.length}; last bar: beyond the axis)</text>`,
    `<text x="10" y="${margin.top + plotHeight / 2}" font-size="10" fill="${palette.axis}" transform="rotate(-90 10 ${margin.top + plotHeight / 2})" text-anchor="middle">calls (max ${maxCount})</text>`,
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img">${parts.join('')}</svg>`;
}

/** Horizontal box plots on a log axis: box p25–p75, whiskers p5–p95, dot p99, bar p50. */
function boxPlotSvg(input: {
  title: string;
  rows: { label: string; samples: readonly number[]; color: string }[];
  unit: string;
}): string {
  const rows = input.rows.filter((row) => row.samples.some((value) => value > 0));
  const width = 1040;
  const rowHeight = 30;
  const margin = { top: 30, right: 30, bottom: 36, left: 300 };
  const height = margin.top + margin.bottom + rows.length * rowHeight;
  const plotWidth = width - margin.left - margin.right;
  const positive = rows.flatMap((row) => row.samples.filter((value) => value > 0));
  const low = 10 ** Math.floor(Math.log10(Math.min(...positive)));
  const high = 10 ** Math.ceil(Math.log10(Math.max(...positive)));
  const x = (value: number) =>
    margin.left +
    ((Math.log10(Math.max(value, low)) - Math.log10(low)) / (Math.log10(high) - Math.log10(low))) * plotWidth;
  const parts: string[] = [
    `<text x="10" y="18" font-size="13" font-weight="600" fill="${palette.text}">${escapeHtml(input.title)}</text>`,
  ];
  for (let decade = low; decade <= high * 1.0001; decade *= 10) {
    for (const multiple of [1, 2, 5]) {
      const tick = decade * multiple;
      if (tick > high * 1.0001) break;
      const tx = x(tick);
      parts.push(
        `<line x1="${tx.toFixed(1)}" y1="${margin.top}" x2="${tx.toFixed(1)}" y2="${height - margin.bottom}" stroke="${palette.grid}"/>`,
        `<text x="${tx.toFixed(1)}" y="${height - margin.bottom + 14}" font-size="10" text-anchor="middle" fill="${palette.axis}">${Number(tick.toPrecision(6))}</text>`,
      );
    }
  }
  rows.forEach((row, index) => {
    const sorted = sortedCopy(row.samples.filter((value) => value > 0));
    const [p5, p25, p50, p75, p95, p99] = [0.05, 0.25, 0.5, 0.75, 0.95, 0.99].map((p) =>
      quantile(sorted, p),
    ) as [number, number, number, number, number, number];
    const cy = margin.top + index * rowHeight + rowHeight / 2;
    parts.push(
      `<text x="${margin.left - 8}" y="${cy + 4}" font-size="11" text-anchor="end" fill="${palette.text}">${escapeHtml(row.label)}</text>`,
      `<line x1="${x(p5).toFixed(1)}" y1="${cy}" x2="${x(p95).toFixed(1)}" y2="${cy}" stroke="${row.color}"/>`,
      `<rect x="${x(p25).toFixed(1)}" y="${cy - 8}" width="${Math.max(1, x(p75) - x(p25)).toFixed(1)}" height="16" fill="${row.color}" opacity="0.35" stroke="${row.color}"><title>p25 ${fixed(p25)} · p50 ${fixed(p50)} · p75 ${fixed(p75)} · p95 ${fixed(p95)} · p99 ${fixed(p99)} ${input.unit}</title></rect>`,
      `<line x1="${x(p50).toFixed(1)}" y1="${cy - 9}" x2="${x(p50).toFixed(1)}" y2="${cy + 9}" stroke="${row.color}" stroke-width="2.5"/>`,
      `<circle cx="${x(p99).toFixed(1)}" cy="${cy}" r="3" fill="${row.color}"/>`,
      `<text x="${(x(p99) + 6).toFixed(1)}" y="${cy + 4}" font-size="10" fill="${palette.axis}">p50 ${fixed(p50)} · p99 ${fixed(p99)}</text>`,
    );
  });
  parts.push(
    `<text x="${margin.left + plotWidth / 2}" y="${height - 6}" font-size="10" text-anchor="middle" fill="${palette.axis}">${escapeHtml(input.unit)}, log scale (box p25–p75, bar p50, whiskers p5–p95, dot p99)</text>`,
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img">${parts.join('')}</svg>`;
}

/** Grouped bars: calls per second of governed and bare at each number of callers. */
function throughputBarsSvg(throughput: readonly ThroughputResult[]): string {
  const levels = [...new Set(throughput.map((t) => t.callers))].sort((a, b) => a - b);
  const width = 520;
  const height = 240;
  const margin = { top: 30, right: 20, bottom: 40, left: 50 };
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  const maxRate = Math.max(1, ...throughput.map((t) => t.callsPerSecond));
  const step = niceStep(maxRate, 5);
  const top = Math.ceil(maxRate / step) * step;
  const y = (rate: number) => margin.top + plotHeight - (rate / top) * plotHeight;
  const groupWidth = plotWidth / Math.max(1, levels.length);
  const parts: string[] = [
    `<text x="10" y="18" font-size="13" font-weight="600" fill="${palette.text}">Calls per second, closed loop</text>`,
  ];
  for (let tick = 0; tick <= top + 1e-9; tick += step) {
    parts.push(
      `<line x1="${margin.left}" y1="${y(tick).toFixed(1)}" x2="${width - margin.right}" y2="${y(tick).toFixed(1)}" stroke="${palette.grid}"/>`,
      `<text x="${margin.left - 6}" y="${(y(tick) + 3).toFixed(1)}" font-size="10" text-anchor="end" fill="${palette.axis}">${Number(tick.toPrecision(6))}</text>`,
    );
  }
  levels.forEach((callers, index) => {
    const left = margin.left + index * groupWidth;
    const bars: [ThroughputResult | undefined, string][] = [
      [throughput.find((t) => t.callers === callers && t.scenario === 'governed-read'), palette.governed],
      [throughput.find((t) => t.callers === callers && t.scenario === 'bare-activity'), palette.bare],
    ];
    bars.forEach(([result, color], barIndex) => {
      if (!result) return;
      const barWidth = groupWidth * 0.32;
      const bx = left + groupWidth * 0.16 + barIndex * barWidth;
      parts.push(
        `<rect x="${bx.toFixed(1)}" y="${y(result.callsPerSecond).toFixed(1)}" width="${(barWidth - 2).toFixed(1)}" height="${(margin.top + plotHeight - y(result.callsPerSecond)).toFixed(1)}" fill="${color}"><title>${escapeHtml(result.label)}, ${callers} callers: ${fixed(result.callsPerSecond)} calls/s</title></rect>`,
        `<text x="${(bx + barWidth / 2).toFixed(1)}" y="${(y(result.callsPerSecond) - 3).toFixed(1)}" font-size="10" text-anchor="middle" fill="${palette.text}">${fixed(result.callsPerSecond, 0)}</text>`,
      );
    });
    parts.push(
      `<text x="${(left + groupWidth / 2).toFixed(1)}" y="${margin.top + plotHeight + 16}" font-size="11" text-anchor="middle" fill="${palette.text}">${callers} caller${callers === 1 ? '' : 's'}</text>`,
    );
  });
  parts.push(
    `<rect x="${width - 200}" y="8" width="10" height="10" fill="${palette.governed}"/><text x="${width - 186}" y="17" font-size="11" fill="${palette.text}">governed read</text>`,
    `<rect x="${width - 100}" y="8" width="10" height="10" fill="${palette.bare}"/><text x="${width - 86}" y="17" font-size="11" fill="${palette.text}">bare activity</text>`,
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img">${parts.join('')}</svg>`;
}

/** report.html: the table, the latency distributions of governed and bare side by side, and throughput. */
export function renderHtml(input: {
  results: BenchResults;
  table: string;
  /** Latencies under load, per scenario and callers (not written to results.json). */
  loadSamples: {
    scenario: ThroughputResult['scenario'];
    label: string;
    callers: number;
    samples: number[];
  }[];
}): string {
  const { results } = input;
  const byId = new Map(results.latency.map((result) => [result.id, result]));
  const colorOf = (kind: LatencyResult['kind']) => palette[kind];
  const sideBySide = ['governed-read', 'bare-activity', 'bare-local', 'governed-reject']
    .map((id) => byId.get(id))
    .filter((result): result is LatencyResult => result !== undefined);
  // One x axis for all four, so that the shapes compare at a glance.
  const sharedMax =
    Math.max(...sideBySide.map((result) => result.summary.p99).filter(Number.isFinite), 1) * 1.15;
  const histograms = sideBySide
    .map((result) =>
      histogramSvg({
        title: result.label,
        samples: result.samples,
        xMax: sharedMax,
        color: colorOf(result.kind),
        bins: 30,
        unit: 'ms',
      }),
    )
    .join('\n');
  const approvalHistograms = results.latency
    .filter((result) => result.kind === 'approval' && result.samples.length > 0)
    .map((result) =>
      histogramSvg({
        title: result.label,
        samples: result.samples,
        xMax: Math.max(1, result.summary.p99 * 1.15),
        color: palette.approval,
        bins: 20,
        unit: 'ms',
      }),
    )
    .join('\n');
  const boxes = boxPlotSvg({
    title: 'Every latency scenario, one call at a time',
    rows: results.latency.map((result) => ({
      label: result.label,
      samples: result.samples,
      color: colorOf(result.kind),
    })),
    unit: 'ms',
  });
  const loadBoxes = boxPlotSvg({
    title: 'Latency under load (closed loop, per number of concurrent callers)',
    rows: [...input.loadSamples]
      .sort((a, b) => a.callers - b.callers || a.scenario.localeCompare(b.scenario))
      .map((entry) => ({
        label: `${entry.label}, ${entry.callers} caller${entry.callers === 1 ? '' : 's'}`,
        samples: entry.samples,
        color: entry.scenario === 'governed-read' ? palette.governed : palette.bare,
      })),
    unit: 'ms',
  });
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>toolgate bench: ${escapeHtml(results.commit.slice(0, 12))} (${results.mode})</title>
<style>
body { font-family: system-ui, sans-serif; margin: 24px; color: ${palette.text}; }
pre { background: #f9fafb; border: 1px solid ${palette.grid}; padding: 12px; overflow-x: auto; font-size: 12px; }
.row { display: flex; flex-wrap: wrap; gap: 12px; }
.note { color: ${palette.axis}; font-size: 13px; max-width: 1040px; }
</style>
</head>
<body>
<h1>toolgate bench</h1>
<p class="note">${escapeHtml(results.mode)} mode, ${escapeHtml(results.startedAt)}, commit ${escapeHtml(results.commit)}${results.workingTree.dirty ? ` with uncommitted changes (${escapeHtml(results.workingTree.changedFiles.join(', '))})` : ''}; ${results.machine.cores} cores. Orange: through toolgate; blue: the bare Temporal baseline; violet: the approval path.</p>
<h2>Governed and bare, side by side (same x axis)</h2>
<div class="row">
${histograms}
</div>
<h2>Approval: from proposal to effect</h2>
<div class="row">
${approvalHistograms}
</div>
<h2>All scenarios</h2>
${boxes}
<h2>Throughput</h2>
<div class="row">
${throughputBarsSvg(results.throughput)}
</div>
${loadBoxes}
<h2>Figures</h2>
<pre>${escapeHtml(input.table)}</pre>
</body>
</html>
`;
}
