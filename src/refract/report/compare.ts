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
  const L = ['', `${'Report'.padEnd(32)} ${'Comp'.padStart(7)} ${'Band'.padEnd(10)} ${'Traj'.padStart(7)} ${'KLD'.padStart(7)} ${'R-NIAH'.padStart(7)} ${'PLAD'.padStart(7)}`, '-'.repeat(80)];
  for (const { label, report: r } of rows) {
    const comp = typeof r.composite === 'number' ? r.composite.toFixed(2).padStart(7) : '—'.padStart(7);
    const b = typeof r.band === 'string' ? r.band : '—';
    const a = r.axes ?? {};
    L.push(`${label.slice(0, 32).padEnd(32)} ${comp} ${b.padEnd(10)} ${axisCell(a, 'gtm').padStart(7)} ${axisCell(a, 'kld').padStart(7)} ${axisCell(a, 'rniah').padStart(7)} ${axisCell(a, 'plad').padStart(7)}`);
  }
  L.push('');
  return L.join('\n');
}

function spreadText(s: SpreadStats | null): string {
  if (s === null) return 'no data';
  if (s.n === 1) return `single run: ${s.min.toFixed(2)}`;
  return `min=${s.min.toFixed(2)}  med=${s.median.toFixed(2)}  max=${s.max.toFixed(2)}  stdev=${s.stdev!.toFixed(2)}  range=${s.range.toFixed(2)}`;
}

/** The repeatability summary with its health verdict (HEALTHY <= 1.0 < NOISY <= 3.0 < UNSTABLE). */
export function renderRepeatability(reports: readonly ReportScores[]): string {
  const st = repeatabilityStats(reports);
  const L = ['', '='.repeat(72), `REPEATABILITY (${st.runs} runs)`, '='.repeat(72), `composite  : ${spreadText(st.composite)}`];
  for (const [axis, s] of Object.entries(st.axes)) L.push(`  ${axis.padEnd(10)}: ${spreadText(s)}`);
  L.push('');
  const sd = st.composite?.stdev;
  if (st.band === 'HEALTHY') L.push(`✓ HEALTHY  composite stdev ${sd!.toFixed(2)} ≤ 1.0`);
  else if (st.band === 'NOISY') L.push(`⚠ NOISY    composite stdev ${sd!.toFixed(2)} (1.0-3.0): results stable but with some run-to-run jitter`);
  else if (st.band === 'UNSTABLE') L.push(`✗ UNSTABLE composite stdev ${sd!.toFixed(2)} > 3.0: framework or engine is non-deterministic. Investigate.`);
  return L.join('\n');
}
