// Text of REFRACT's `compare` (side-by-side table of reports) and `repeatability` (spread over N runs)
// subcommands, as pure functions: the CLI reads the files and prints these.
import { repeatabilityStats, type ReportScores, type SpreadStats } from '../score.ts';

export interface CompareRow {
  /** Shown in the first column (the CLI uses the file name without extension). */
  label: string;
  report: ReportScores & { band?: string };
}

function axisCell(axes: ReportScores['axes'], key: string): string {
  const ax = axes[key];
  if (ax === undefined) return '—';
  if (ax.score === null || ax.score === undefined || (ax as { skipped?: boolean }).skipped) return 'skip';
  return ax.score.toFixed(2);
}

/** The compare table: Report, Comp, Band, Traj, KLD, R-NIAH, PLAD. */
export function renderCompareTable(rows: readonly CompareRow[]): string {
  const L = ['',
    `${'Report'.padEnd(32)} ${'Comp'.padStart(7)} ${'Band'.padEnd(10)} ${'Traj'.padStart(7)} ` +
    `${'KLD'.padStart(7)} ${'R-NIAH'.padStart(7)} ${'PLAD'.padStart(7)}`, '-'.repeat(80)];
  for (const { label, report: r } of rows) {
    const comp = typeof r.composite === 'number' ? r.composite.toFixed(2).padStart(7) : '—'.padStart(7);
    const b = typeof r.band === 'string' ? r.band : '—';
    const a = r.axes ?? {};
    const cells = (['gtm', 'kld', 'rniah', 'plad'] as const).map((axis) => axisCell(a, axis).padStart(7));
    L.push(`${label.slice(0, 32).padEnd(32)} ${comp} ${b.padEnd(10)} ${cells.join(' ')}`);
  }
  L.push('');
  return L.join('\n');
}

/** One file given to `compare`: its path and its text, or why it could not be read. */
export interface CompareInput {
  path: string;
  text: string | Error;
}

/** The file name without folder and extension (the original's Path.stem). */
export function fileStem(path: string): string {
  const base = path.replace(/^.*[\\/]/, '');
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(0, dot) : base;
}

/**
 * Rows for `compare`, as the original: an unreadable or non-JSON file is skipped with a line naming it; a JSON
 * file that is not a REFRACT report (no "axes" object) is skipped, named; a report with a missing or null
 * composite keeps its row (a dash) and gets a line saying why.
 */
export function compareRows(inputs: readonly CompareInput[]): { rows: CompareRow[]; notes: string[] } {
  const rows: CompareRow[] = [];
  const notes: string[] = [];
  for (const { path, text } of inputs) {
    if (text instanceof Error) { notes.push(`skip ${path}: ${text.message}`); continue; }
    let d: unknown;
    try {
      d = JSON.parse(text.replace(/([:[,]\s*)-?(?:NaN|Infinity)\b/g, '$1null'));
    } catch (e) {
      notes.push(`skip ${path}: not JSON (${(e as Error).message})`);
      continue;
    }
    const r = d as Partial<ReportScores & { band: unknown }> | null;
    if (typeof r !== 'object' || r === null || Array.isArray(r) || typeof r.axes !== 'object' || r.axes === null) {
      notes.push(`skip ${path}: not a REFRACT report (no "axes" object)`);
      continue;
    }
    if (typeof r.composite !== 'number') {
      const got = r.composite === undefined ? 'missing' : JSON.stringify(r.composite);
      notes.push(`${path}: composite is ${got}; shown as —`);
    }
    rows.push({ label: fileStem(path), report: r as CompareRow['report'] });
  }
  return { rows, notes };
}

function spreadText(s: SpreadStats | null): string {
  if (s === null) return 'no data';
  if (s.n === 1) return `single run: ${s.min.toFixed(2)}`;
  return `min=${s.min.toFixed(2)}  med=${s.median.toFixed(2)}  max=${s.max.toFixed(2)}  ` +
    `stdev=${s.stdev!.toFixed(2)}  range=${s.range.toFixed(2)}`;
}

/** The repeatability summary with its health verdict (HEALTHY <= 1.0 < NOISY <= 3.0 < UNSTABLE). */
export function renderRepeatability(reports: readonly ReportScores[]): string {
  const st = repeatabilityStats(reports);
  const L = ['', '='.repeat(72), `REPEATABILITY (${st.runs} runs)`, '='.repeat(72),
    `composite  : ${spreadText(st.composite)}`];
  for (const [axis, s] of Object.entries(st.axes)) L.push(`  ${axis.padEnd(10)}: ${spreadText(s)}`);
  L.push('');
  const sd = st.composite?.stdev;
  if (st.band === 'HEALTHY') L.push(`✓ HEALTHY  composite stdev ${sd!.toFixed(2)} ≤ 1.0`);
  else if (st.band === 'NOISY') {
    L.push(`⚠ NOISY    composite stdev ${sd!.toFixed(2)} (1.0-3.0): results stable but with some run-to-run jitter`);
  } else if (st.band === 'UNSTABLE') {
    L.push(`✗ UNSTABLE composite stdev ${sd!.toFixed(2)} > 3.0: framework or engine is non-deterministic. ` +
      'Investigate.');
  }
  return L.join('\n');
}
