// One REFRACT score run (the original `refract score`): optional noise floor, axes A and B, opt-in C and D,
// composite, report object. The CLI and the browser demo call runRefract and render the report.
import { contextLengthOf, DEFAULTS, RefractError, type Backend } from './backend.ts';
import { checkOptions, InputError } from '../errors.ts';
import { runtimeInfo } from '../gpu/device.ts';
import { runKld, type KldAxisResult } from './axes/kld.ts';
import { runPlad, type PladAxisResult, type PladOptions } from './axes/plad.ts';
import { runRniah, type RniahAxisResult, type RniahOptions } from './axes/rniah.ts';
import { runTrajectory, type TrajectoryAxisResult } from './axes/trajectory.ts';
import { DEFAULT_CORPUS_LABEL, defaultCorpus, defaultHaystack } from './corpus.ts';
import { DEFAULT_REFERENCE_KV, parseKvConfig } from '../hrm/kv-spec.ts';
import { PROMPTS_V01, type Prompt } from './prompts.ts';
import { buildReport, type RefractReport } from './report/json.ts';
import { compositeScore, MIN_FLOOR } from './score.ts';

export type Stage = 'floor-trajectory' | 'floor-kld' | 'trajectory' | 'kld' | 'rniah' | 'plad';

/** Progress of one stage; etaSeconds is the stage's remaining time at its average pace so far (null at 0). */
export type ProgressFn = (stage: Stage, done: number, total: number, etaSeconds: number | null) => void;

export interface RunRefractOptions {
  backend: Backend;
  model: string;
  /** Reference KV config (default `ctk=f16,ctv=f16`). */
  reference?: string;
  candidate: string;
  /** Default: the 30 REFRACT prompts. */
  prompts?: readonly Prompt[];
  /** KLD corpus text, or text with the label shown in the report. Default: defaultCorpus(). */
  corpus?: string | { text: string; label: string };
  chunks?: number; // 32
  ctx?: number; // 512
  nPredict?: number; // 128
  seed?: number; // 42
  /** Opt-in axes C and D; `true` runs them with defaults (R-NIAH haystack: defaultHaystack()). */
  axes?: {
    rniah?: boolean | (Partial<Omit<RniahOptions, 'model' | 'reference' | 'candidate' | 'onProgress' | 'signal'>>);
    plad?: boolean | (Partial<Omit<PladOptions,
      'model' | 'reference' | 'candidate' | 'prompts' | 'onProgress' | 'signal'>>);
  };
  /** Leave out axis A or B (the composite drops it; the report marks it skipped), as the original's --skip-*. */
  skipGtm?: boolean;
  skipKld?: boolean;
  /** Measure REFRACT(ref, ref) first and stop unless it reaches MIN_FLOOR with identical trajectories. */
  measureFloor?: boolean;
  /** Store per-token strings in trajectory records when the backend can decode (default true). */
  decodeTokens?: boolean;
  onProgress?: ProgressFn;
  /** Shell-escaped command line that produced this run (shown in reports). */
  reproCommand?: string;
  extras?: Record<string, unknown>;
  signal?: AbortSignal;
}

/** runRefract's keys (a Record, so that a new option must be named here to be accepted). */
const REFRACT_KEYS: Record<keyof RunRefractOptions, true> = {
  backend: true, model: true, reference: true, candidate: true, prompts: true, corpus: true, chunks: true, ctx: true,
  nPredict: true, seed: true, axes: true, skipGtm: true, skipKld: true, measureFloor: true, decodeTokens: true,
  onProgress: true, reproCommand: true, extras: true, signal: true,
};
/** The original's flag names, as a script might spell them. */
const REFRACT_MOVED: Record<string, string> = {
  ref: 'it is reference', cand: 'it is candidate', n_predict: 'it is nPredict', skip_gtm: 'it is skipGtm',
  skip_kld: 'it is skipKld', measure_floor: 'it is measureFloor', rniah: 'it is axes.rniah', plad: 'it is axes.plad',
  kvConfig: 'it is candidate', kv: 'it is candidate',
};

/** Refuse keys runRefract does not know (at the top and in `axes`): it would run without them. */
export function checkRefractOptions(o: object): void {
  checkOptions('refract', 'the options', o, Object.keys(REFRACT_KEYS), REFRACT_MOVED);
  checkOptions('refract', 'axes', (o as RunRefractOptions).axes, ['rniah', 'plad']);
}

/** The report's environment fields of this runtime (named as the original's JSON names them). */
function runtimeFields(): Record<string, unknown> {
  const r = runtimeInfo();
  if (r.runtime === 'deno') return { runtime: 'deno', runtime_version: r.version };
  if (r.runtime === 'node') return { runtime: 'node', runtime_version: r.version, platform: r.platform };
  return { runtime: 'browser', user_agent: r.userAgent };
}

function tracker(onProgress: ProgressFn | undefined, stage: Stage): (done: number, total: number) => void {
  const t0 = performance.now();
  return (done, total) => {
    const elapsed = (performance.now() - t0) / 1000;
    onProgress?.(stage, done, total, done > 0 ? (elapsed / done) * (total - done) : null);
  };
}

/** Names of the axes a run with these options would run, in order. */
function plannedAxes(o: RunRefractOptions): string[] {
  return [...(o.skipGtm ? [] : ['gtm']), ...(o.skipKld ? [] : ['kld']), ...(o.axes?.rniah ? ['rniah'] : []),
    ...(o.axes?.plad ? ['plad'] : [])];
}

/** Before any axis: ctx within the model's context_length, and a corpus of at least ctx tokens (when KLD runs). */
async function preflight(o: RunRefractOptions, ctx: number, corpus: string): Promise<void> {
  const limit = await contextLengthOf(o.backend, o.model);
  if (ctx > limit) throw new InputError('refract',
    `ctx ${ctx} exceeds the model's context_length ${limit}; pass -c/--ctx ${limit} or less`);
  if (o.skipKld) return;
  const n = (await o.backend.tokenizeToIds({ model: o.model, text: corpus })).length;
  if (n < ctx) throw new InputError('refract',
    `the KLD corpus has ${n} tokens, fewer than ctx ${ctx}; give a longer --corpus or a smaller -c/--ctx`);
}

/** Environment metadata for the report; a failure there keeps the report (empty environment plus a note). */
async function environmentOf(o: RunRefractOptions): Promise<{ env: Record<string, unknown>; note: string | null }> {
  try {
    return { env: { backend: o.backend.name, ...(await o.backend.modelMetadata({ model: o.model })),
      implementation: 'hrm-webgpu (TypeScript)', ...runtimeFields() }, note: null };
  } catch (e) {
    return { env: {}, note: `environment metadata unavailable: ${(e as Error).message}` };
  }
}

/**
 * Run REFRACT and return the JSON report object (schema refract.report.v0.3.1). When the run is aborted (signal)
 * or an axis fails after others finished, the report of the finished axes comes back with `partial` set (the
 * composite over those axes); an error before any axis finished is thrown.
 */
export async function runRefract(o: RunRefractOptions): Promise<RefractReport> {
  checkRefractOptions(o);
  const reference = parseKvConfig(o.reference ?? DEFAULT_REFERENCE_KV, 'reference').label;
  const candidate = parseKvConfig(o.candidate, 'candidate').label;
  const prompts = o.prompts ?? PROMPTS_V01;
  const ctx = o.ctx ?? DEFAULTS.ctx;
  const chunks = o.chunks ?? DEFAULTS.chunks;
  const nPredict = o.nPredict ?? DEFAULTS.nPredict;
  const seed = o.seed ?? DEFAULTS.seed;
  const corpus = o.corpus === undefined ? { text: await defaultCorpus(),
    label: DEFAULT_CORPUS_LABEL } : typeof o.corpus === 'string' ?
    { text: o.corpus, label: '(in-memory corpus)' } : o.corpus;
  const { backend, model, signal } = o;
  const planned = plannedAxes(o);
  if (planned.length === 0) throw new InputError('refract',
    'no axis to run: --skip-gtm and --skip-kld leave nothing unless --axis-rniah or --axis-plad is given');
  await preflight(o, ctx, corpus.text);
  const traj = (ref: string, cand: string, stage: Stage): Promise<TrajectoryAxisResult> =>
    runTrajectory(backend,
      { model, reference: ref, candidate: cand, prompts, nPredict, ctx, seed, decodeTokens: o.decodeTokens ?? true,
      onProgress: tracker(o.onProgress, stage), signal });
  const kld = (ref: string, cand: string, stage: Stage): Promise<KldAxisResult> =>
    runKld(backend,
      { model, reference: ref, candidate: cand, corpus: corpus.text, corpusLabel: corpus.label, chunks, ctx,
      onProgress: tracker(o.onProgress, stage), signal });

  let floorScore: number | null = null;
  if (o.measureFloor) {
    const ft = o.skipGtm ? null : await traj(reference, reference, 'floor-trajectory');
    signal?.throwIfAborted();
    const fk = o.skipKld ? null : await kld(reference, reference, 'floor-kld');
    floorScore = compositeScore({ gtm: ft?.score ?? null, kld: fk?.score ?? null }).composite;
    if (floorScore < MIN_FLOOR) {
      throw new RefractError('refract',
        `noise floor ${floorScore.toFixed(2)} < ${MIN_FLOOR} (trajectory ${ft?.score.toFixed(2) ?? 'skipped'}, ` +
        `KLD ${fk?.mean_kld.toFixed(6) ?? 'skipped'} nats): the reference is non-deterministic on this build`);
    }
    if (ft && Math.abs(ft.full_match_rate - 1) > 1e-9) {
      throw new RefractError('refract',
        'reference-vs-reference trajectories are not token-identical ' +
        `(full_match_rate ${ft.full_match_rate.toFixed(6)})`);
    }
  }

  const done: {
    gtm: TrajectoryAxisResult | null; kld: KldAxisResult | null; rniah: RniahAxisResult | null;
    plad: PladAxisResult | null;
  } = { gtm: null, kld: null, rniah: null, plad: null };
  let stopped: string | null = null;
  const axisRuns: Record<string, () => Promise<void>> = {
    gtm: async () => { done.gtm = await traj(reference, candidate, 'trajectory'); },
    kld: async () => { done.kld = await kld(reference, candidate, 'kld'); },
    rniah: async () => {
      const extra = o.axes?.rniah === true || !o.axes?.rniah ? {} : o.axes.rniah;
      const haystack = extra.haystack ?? (await defaultHaystack());
      done.rniah = await runRniah(backend,
        { seed, ...extra, haystack, model, reference, candidate, onProgress: tracker(o.onProgress, 'rniah'), signal });
    },
    plad: async () => {
      const extra = o.axes?.plad === true || !o.axes?.plad ? {} : o.axes.plad;
      done.plad = await runPlad(backend,
        { nPredict, ctx, seed, ...extra, model, reference, candidate, prompts,
        onProgress: tracker(o.onProgress, 'plad'), signal });
    },
  };
  const finished: string[] = [];
  for (const axis of planned) {
    try {
      // A stop between axes starts no more GPU work.
      signal?.throwIfAborted();
      await axisRuns[axis]();
      finished.push(axis);
    } catch (e) {
      // Nothing finished yet: nothing to keep, the caller gets the error itself.
      if (finished.length === 0) throw e;
      stopped = signal?.aborted ? 'interrupted' : `${axis} failed: ${(e as Error).message}`;
      break;
    }
  }

  const composite = compositeScore({ gtm: done.gtm?.score ?? null, kld: done.kld?.score ?? null,
    rniah: done.rniah?.score ?? null, plad: done.plad?.score ?? null }, floorScore);
  const { env, note } = await environmentOf(o);
  if (note) composite.notes.push(note);
  const unfinished = planned.filter((a) => !finished.includes(a));
  if (stopped) {
    composite.notes.push(`Partial report (${stopped}): ${unfinished.join(', ')} did not finish; ` +
      `the composite covers ${finished.join(', ')} only.`);
  }
  return buildReport({
    model, reference, candidate, composite, ...done, environment: env, reproCommand: o.reproCommand, extras: o.extras,
    chunks, ctx,
    partial: stopped ? { reason: stopped, unfinished } : undefined,
  });
}
