// Whether the bandwidth ceiling can be trusted (issue 30): bench's stream read, measured first on the fresh device,
// against the same read at the end of the run and against the plain WebGPU read probe (read-probe.ts). Under
// bench/h200.sh it once reported 1.94 TB/s where a direct run and the probe gave 4.2-4.7: every figure held against
// it is then off by as much, so the Markdown says so in a line of its own.
import type { BandwidthFigure } from '../suites/figures.ts';
import type { ReadProbe } from './read-probe.ts';
import { f, pct } from './format.ts';

/** How far two bandwidths may be apart before the summary warns (the "within 10 %"). */
export const TOLERANCE = 0.1;

/** `x` as a fraction of `ref`, and whether it is more than TOLERANCE away from it (either way). */
export function against(x: number, ref: number): { ratio: number; apart: boolean } {
  const ratio = x / ref;
  return { ratio, apart: !(Math.abs(ratio - 1) <= TOLERANCE) };
}

/**
 * Bandwidth figures (wall or timestamps) more than TOLERANCE above the ceiling, the highest of the stream read, its
 * end and the probe: a kernel cannot read faster than the memory, so such a figure was timed wrong (issue 30: a
 * 65536 x 1536 GEMV reported 5.8 TB/s once).
 */
export function aboveCeiling(figures: readonly BandwidthFigure[], ceiling: number): string[] {
  const L: string[] = [];
  for (const b of figures) {
    for (const [how, v] of [['wall', b.GBps?.median], ['timestamps', b.kernelGBps?.median]] as const) {
      if (v !== undefined && v > ceiling * (1 + TOLERANCE)) {
        L.push(`**Warning**: ${b.name} reports ${f(v)} GB/s by ${how}, more than ${pct(TOLERANCE)} above the ` +
          `ceiling of ${f(ceiling)} GB/s: it was timed wrong.`);
      }
    }
  }
  return L;
}

/**
 * The ceiling's lines: the stream read at the start and the end, and against the probe; a warning where apart, and
 * for each of `figures` above the ceiling.
 */
export function ceilingLines(
  stream: BandwidthFigure | null, end: BandwidthFigure | null | undefined, probe: ReadProbe | null | undefined,
  figures: readonly BandwidthFigure[] = [],
): string[] {
  const start = stream?.GBps.median;
  if (start === undefined) return [];
  const L: string[] = [];
  if (end) {
    const e = against(end.GBps.median, start);
    L.push(`Stream read at the start of the run (fresh device) ${f(start)} GB/s, at its end ${f(end.GBps.median)} ` +
      `GB/s (${pct(e.ratio)} of the start).`);
    if (e.apart) {
      L.push(`**Warning**: the stream read moved by more than ${pct(TOLERANCE)} during the run ` +
        `(${f(start)} → ${f(end.GBps.median)} GB/s): the figures held against it are as uncertain.`);
    }
  }
  if (probe) {
    const p = against(start, probe.GBps);
    L.push(`Stream read ${f(start)} GB/s is ${pct(p.ratio)} of the read probe's ${f(probe.GBps)} GB/s ` +
      '(bench/probes/read-probe.mjs, a plain WebGPU read run before the bench).');
    if (p.apart) {
      L.push(`**Warning**: bench's stream read is more than ${pct(TOLERANCE)} from the read probe's figure ` +
        `(${f(start)} against ${f(probe.GBps)} GB/s): the ceiling is not to be trusted.`);
    }
  }
  const ceiling = Math.max(start, end?.GBps.median ?? 0, probe?.GBps ?? 0);
  L.push(...aboveCeiling(figures, ceiling));
  return L.length ? [...L, ''] : [];
}
