// Summaries of repeated measurements: median with min/max and the interquartile range, plus the raw samples
// (a handful per figure) so a reader can judge the spread without re-running anything.

export interface Stats {
  median: number;
  min: number;
  max: number;
  /** First and third quartiles (linear interpolation between order statistics). */
  q1: number;
  q3: number;
  n: number;
  samples: number[];
}

/** The q-quantile (0..1) of sorted values, linearly interpolated. */
function quantile(sorted: number[], q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos), hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** median, min, max, quartiles of a non-empty list. */
export function stats(values: number[]): Stats {
  if (values.length === 0) throw new Error('[stats] no samples');
  const s = [...values].sort((a, b) => a - b);
  return {
    median: quantile(s, 0.5), min: s[0], max: s[s.length - 1], q1: quantile(s, 0.25), q3: quantile(s, 0.75),
    n: s.length, samples: values.map(round4),
  };
}

/** 4 significant digits: keeps the JSON readable without losing anything a benchmark can resolve. */
export function round4(v: number): number {
  return Number.isFinite(v) && v !== 0 ? Number(v.toPrecision(4)) : v;
}

export const now = (): number => (globalThis.performance ?? Date).now();

const sum = (a: number[]) => a.reduce((t, x) => t + x, 0);

/** Garbage-collection pauses seen while a watch ran (Node's `gc` performance entries). */
export interface GcFigure {
  count: number;
  ms: number;
  maxMs: number;
  /** Of them, full mark-compact collections (Node's kind NODE_PERFORMANCE_GC_MAJOR) and their time. */
  major?: { count: number; ms: number };
}

/**
 * Watch the JavaScript engine's garbage-collection pauses until `stop()`; null where the runtime does not report
 * them (browsers, Deno). Dawn's Node binding polls the GPU by allocating a callback per event-loop turn while any
 * of its promises is pending, so a GPU-bound loop of awaits makes garbage of its own.
 */
export function gcWatch(): { stop(): GcFigure } | null {
  const PO = (globalThis as { PerformanceObserver?: typeof PerformanceObserver }).PerformanceObserver;
  if (!PO?.supportedEntryTypes?.includes('gc')) return null;
  const MAJOR = 4;
  const pauses: number[] = [];
  const major: number[] = [];
  const take = (list: PerformanceEntry[]) => {
    for (const e of list) {
      pauses.push(e.duration);
      if ((e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === MAJOR) major.push(e.duration);
    }
  };
  const obs = new PO((list) => take(list.getEntries()));
  obs.observe({ entryTypes: ['gc'] });
  return {
    stop: () => {
      take(obs.takeRecords());
      obs.disconnect();
      return {
        count: pauses.length, ms: sum(pauses), maxMs: Math.max(0, ...pauses),
        major: { count: major.length, ms: sum(major) },
      };
    },
  };
}

/** The pauses of several watches (a decode's repetitions) as one figure. */
export function addGc(figs: GcFigure[]): GcFigure {
  return {
    count: sum(figs.map((g) => g.count)), ms: sum(figs.map((g) => g.ms)),
    maxMs: Math.max(0, ...figs.map((g) => g.maxMs)),
    major: { count: sum(figs.map((g) => g.major?.count ?? 0)), ms: sum(figs.map((g) => g.major?.ms ?? 0)) },
  };
}
