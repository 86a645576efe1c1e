// Composite score, bands and repeatability (REFRACT score.py and the `repeatability` subcommand).

export type Band = 'EXCELLENT' | 'PASS' | 'DEGRADED' | 'FAIL';

/** REFRACT(ref, ref) must reach this, or the reference itself is non-deterministic. */
export const MIN_FLOOR = 99.5;

/** Harmonic mean n / sum(1/v) of the values clipped at 0, clamped to [0, 100]; 0 if empty or any value <= 0. */
export function harmonicMean(values: readonly number[]): number {
  const clean = values.map((v) => Math.max(v, 0));
  if (clean.length === 0 || clean.some((v) => !(v > 0))) return 0;
  const h = clean.length / clean.reduce((s, v) => s + 1 / v, 0);
  return Math.min(Math.max(h, 0), 100);
}

/** [90, 100] EXCELLENT, [80, 90) PASS, [60, 80) DEGRADED, else FAIL (lower bounds inclusive). */
export function band(score: number): Band {
  if (score >= 90) return 'EXCELLENT';
  if (score >= 80) return 'PASS';
  if (score >= 60) return 'DEGRADED';
  return 'FAIL';
}

/** REFRACT's CompositeScore (JSON `composite_detail` plus the flattened composite and band). */
export interface CompositeScore {
  composite: number;
  band: Band;
  gtm_score: number | null;
  kld_score: number | null;
  rniah_score: number | null;
  plad_score: number | null;
  floor_score: number | null;
  floor_ok: boolean | null;
  floor_min: number;
  notes: string[];
}

export interface AxisScores {
  gtm?: number | null;
  kld?: number | null;
  rniah?: number | null;
  plad?: number | null;
}

/** Composite = harmonic mean of the axes that ran (null/undefined axes are left out); 0 when none ran. */
export function compositeScore(axes: AxisScores, floorScore: number | null = null): CompositeScore {
  const ran = [axes.gtm, axes.kld, axes.rniah, axes.plad].filter((v): v is number => v !== null && v !== undefined);
  const composite = ran.length ? harmonicMean(ran) : 0;
  const notes: string[] = [];
  let floorOk: boolean | null = null;
  if (floorScore !== null) {
    floorOk = floorScore >= MIN_FLOOR;
    if (!floorOk) {
      notes.push(`Floor failed: REFRACT(ref, ref) = ${floorScore.toFixed(2)} < ${MIN_FLOOR}. ` +
        'Reference is non-deterministic on this build; KLD deltas are unreliable.');
    }
  }
  return {
    composite, band: band(composite),
    gtm_score: axes.gtm ?? null, kld_score: axes.kld ?? null, rniah_score: axes.rniah ??
      null, plad_score: axes.plad ?? null,
    floor_score: floorScore, floor_ok: floorOk, floor_min: MIN_FLOOR, notes,
  };
}

export type RepeatabilityBand = 'HEALTHY' | 'NOISY' | 'UNSTABLE';

/** Spread of N runs of one score. stdev is the sample standard deviation (Python statistics.stdev). */
export interface SpreadStats {
  n: number;
  mean: number;
  median: number;
  min: number;
  max: number;
  stdev: number | null;
  range: number;
}

export function spread(values: readonly number[]): SpreadStats | null {
  if (values.length === 0) return null;
  const n = values.length;
  const mean = values.reduce((s, v) => s + v, 0) / n;
  const s = [...values].sort((a, b) => a - b);
  const median = n % 2 ? s[n >> 1] : (s[n / 2 - 1] + s[n / 2]) / 2;
  const stdev = n > 1 ? Math.sqrt(values.reduce((acc, v) => acc + (v - mean) ** 2, 0) / (n - 1)) : null;
  return { n, mean, median, min: s[0], max: s[n - 1], stdev, range: s[n - 1] - s[0] };
}

/** Composite stdev <= 1 HEALTHY, <= 3 NOISY, else UNSTABLE (null for fewer than two runs). */
export function repeatabilityBand(compositeStdev: number | null): RepeatabilityBand | null {
  if (compositeStdev === null) return null;
  if (compositeStdev <= 1) return 'HEALTHY';
  if (compositeStdev <= 3) return 'NOISY';
  return 'UNSTABLE';
}

/** Minimal shape read from a report (or a parsed report JSON file) for repeatability and compare. */
export interface ReportScores {
  composite: number;
  axes: { [axis: string]: { score?: number | null } | undefined };
}

export interface RepeatabilityStats {
  runs: number;
  composite: SpreadStats | null;
  axes: {
    trajectory: SpreadStats | null; kld: SpreadStats | null; rniah: SpreadStats | null; plad: SpreadStats | null;
  };
  band: RepeatabilityBand | null;
}

/** Spread of the composite and of each axis over repeated runs of the same configuration. */
export function repeatabilityStats(reports: readonly ReportScores[]): RepeatabilityStats {
  const axis = (key: string) =>
    spread(reports.map((r) => r.axes[key]?.score).filter((v): v is number => typeof v === 'number' &&
      Number.isFinite(v)));
  const composite = spread(reports.map((r) => r.composite));
  return {
    runs: reports.length,
    composite,
    axes: { trajectory: axis('gtm'), kld: axis('kld'), rniah: axis('rniah'), plad: axis('plad') },
    band: repeatabilityBand(composite?.stdev ?? null),
  };
}
