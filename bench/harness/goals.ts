// Issue 30's "Done when", held against one run's figures: the ratios its required goals ask for and the targets it
// reports, each computed from what the run's JSON records (the caches, the `weights` list, PyTorch's anchors stored
// verbatim under `anchors`, the stream read and the read probe), so that a script can check a `bench/h200.sh` run
// (bench/runners/goals.ts) and the run's Markdown can show where it stands (markdown-goals.ts). Pure, and loads no
// GPU code: the checker reads a recorded file without starting one.
import type { BenchResult } from './result.ts';
import { against, TOLERANCE } from './ceiling.ts';
import { pct } from './format.ts';

export interface Goal {
  name: string;
  /** The run's figure: a ratio of two of its figures, or tok/s; null when the run lacks one of them. */
  value: number | null;
  /** What the issue asks of the figure, e.g. ">= 1.25x". */
  bound: string;
  /** A "Done when" requirement; false for the issue's targets, which are reported, not required. */
  required: boolean;
  /** Whether the figure meets the bound; null when the run lacks it. */
  passed: boolean | null;
  /** Where the figures the run lacks would be in its JSON (only when `passed` is null). */
  missing?: string;
}

/** The prompt length of the issue's prefill goals. */
const PREFILL = 512;

/** A figure and the JSON paths of the figures it lacks (none when it has a value). */
interface Figure { value: number | null; missing: string[] }

/**
 * `v` if a positive, finite number, else null: an error's null, a zero from a failed timing and a non-number alike
 * cannot be held to a bound.
 */
const positive = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : null);

/** The figure at `path` of the JSON. */
function at(path: string, v: unknown): Figure {
  const value = positive(v);
  return { value, missing: value === null ? [path] : [] };
}

/** x / ref, missing what either lacks. */
function over(x: Figure, ref: Figure): Figure {
  const value = x.value !== null && ref.value !== null ? x.value / ref.value : null;
  return { value, missing: [...x.missing, ...ref.missing] };
}

function goal(name: string, x: Figure, bound: string, required: boolean, ok: (v: number) => boolean): Goal {
  return x.value === null
    ? { name, value: null, bound, required, passed: null, missing: x.missing.join(', ') }
    : { name, value: x.value, bound, required, passed: ok(x.value) };
}

const atLeast = (name: string, x: Figure, min: number, unit: string, required = true): Goal =>
  goal(name, x, `>= ${min}${unit}`, required, (v) => v >= min);

/** The run's figures the goals are made of, each with its JSON path. */
function figures(r: BenchResult) {
  const cache = (n: string) => r.caches.find((c) => c.name === n);
  // `weights` is absent in results from before 20261204.
  const weights = (n: string) => (r.weights ?? []).find((w) => w.name === n);
  const anchors = r.anchors && typeof r.anchors === 'object' ? r.anchors as Record<string, unknown> : {};
  return {
    cacheDecode: (n: string) => at(`caches[${n}].decode.tokPerS.median`, cache(n)?.decode?.tokPerS.median),
    cachePrefill: (n: string) => at(`caches[${n}].prefill[${PREFILL}].tokPerS.median`,
      cache(n)?.prefill.find((p) => p.tokens === PREFILL)?.tokPerS.median),
    weightsDecode: (n: string) => at(`weights[${n}].decode.tokPerS.median`, weights(n)?.decode?.tokPerS.median),
    weightsPrefill: (n: string) => at(`weights[${n}].prefill[${PREFILL}].tokPerS.median`,
      weights(n)?.prefill.find((p) => p.tokens === PREFILL)?.tokPerS.median),
    anchor: (key: string) => at(`anchors.${key}`, anchors[key]),
  };
}

/**
 * The highest kernel bandwidth figure as a fraction of the ceiling ceiling.ts holds them to (the highest of the
 * stream read at the start and end of the run and the read probe): the GEMVs by wall and timestamps, the sweep's
 * shapes, the decode MLP's forms and the streaming floor. The stream reads are the ceiling, so not among them.
 */
function kernelPeak(r: BenchResult): Figure {
  const k = r.kernels;
  const ceiling = Math.max(0, ...[k.stream?.GBps.median, k.streamEnd?.GBps.median, k.readProbe?.GBps]
    .map((v) => positive(v) ?? 0));
  const peak = Math.max(0, ...[
    ...k.gemv.flatMap((b) => [b.GBps?.median, b.kernelGBps?.median]),
    // The sweep, the MLP forms and the floor run with --sweep-gemv only (and are absent in older results).
    ...(k.sweep ?? []).map((p) => p.GBps), ...(k.mlp ?? []).map((p) => p.GBps),
    ...(k.streamFloor ?? []).map((p) => p.GBps),
  ].map((v) => positive(v) ?? 0));
  return over(at('kernels.gemv', peak), at('kernels.stream.GBps.median', ceiling));
}

/** Issue 30's goals for run `r`, in the issue's order: the required ones, then the targets. */
export function issueGoals(r: BenchResult): Goal[] {
  const g = figures(r);
  const eager = over(g.cachePrefill('full'), g.anchor('transformers_eager_prefill512_tok_s'));
  // The probe's figure is stored where bench/h200.sh ran it (--read-probe): "under bench/h200.sh".
  const stream = over(at('kernels.stream.GBps.median', r.kernels.stream?.GBps.median),
    at('kernels.readProbe.GBps', r.kernels.readProbe?.GBps));
  return [
    atLeast("full-cache decode / torch.compile'd CUDA-graph decode", over(g.cacheDecode('full'),
      g.anchor('torch_cudagraph_compiled_decode_tok_s')), 1.25, 'x'),
    atLeast('q4-weight decode / bf16-weight decode', over(g.weightsDecode('q4'), g.weightsDecode('bf16')), 1.4, 'x'),
    ...['q8', 'q4'].map((w) => atLeast(`${w}-weight prefill ${PREFILL} / bf16-weight prefill ${PREFILL}`,
      over(g.weightsPrefill(w), g.weightsPrefill('bf16')), 0.7, 'x')),
    ...['q8', 'q4'].map((c) => atLeast(`${c}-cache decode / full-cache decode`,
      over(g.cacheDecode(c), g.cacheDecode('full')), 0.95, 'x')),
    atLeast(`prefill ${PREFILL} / transformers eager prefill ${PREFILL}`, eager, 2, 'x'),
    goal("bench's stream read / the read probe's", stream, `within ${pct(TOLERANCE)}`, true,
      (v) => !against(v, 1).apart),
    // Within ceiling.ts's tolerance, as its warnings: the ceiling is itself a measurement.
    goal('highest kernel GB/s / the ceiling', kernelPeak(r), `<= ${1 + TOLERANCE}x`, true,
      (v) => v <= 1 + TOLERANCE),
    atLeast('decode, bf16 weights (full cache)', g.cacheDecode('full'), 300, ' tok/s', false),
    atLeast('decode, q4 weights (full cache)', g.weightsDecode('q4'), 450, ' tok/s', false),
    atLeast(`prefill ${PREFILL} / transformers eager prefill ${PREFILL}`, eager, 3, 'x', false),
  ];
}

/** The required goals the run does not meet or lacks the figures of: a run is done when there are none. */
export const unmet = (goals: readonly Goal[]): Goal[] => goals.filter((g) => g.required && g.passed !== true);

/** `r` as its JSON is written: with its goals, computed from the figures it has so far (a partial run's too). */
export const withGoals = (r: BenchResult): BenchResult & { goals: Goal[] } => ({ ...r, goals: issueGoals(r) });
