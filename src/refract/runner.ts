// One REFRACT score run (the original `refract score`): optional noise floor, axes A and B, opt-in C and D,
// composite, report object. The CLI and the browser demo call runRefract and render the report.
import { DEFAULTS, RefractError, type Backend } from './backend.ts';
import { runKld, type KldAxisResult } from './axes/kld.ts';
import { runPlad, type PladAxisResult, type PladOptions } from './axes/plad.ts';
import { runRniah, type RniahAxisResult, type RniahOptions } from './axes/rniah.ts';
import { runTrajectory, type TrajectoryAxisResult } from './axes/trajectory.ts';
import { DEFAULT_CORPUS_LABEL, defaultCorpus, defaultHaystack } from './corpus.ts';
import { DEFAULT_REFERENCE_KV, parseKvConfig } from './kvconfig.ts';
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
    plad?: boolean | (Partial<Omit<PladOptions, 'model' | 'reference' | 'candidate' | 'prompts' | 'onProgress' | 'signal'>>);
  };
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

function runtimeInfo(): Record<string, unknown> {
  const g = globalThis as { Deno?: { version?: { deno?: string } }; process?: { versions?: { node?: string }; platform?: string }; navigator?: { userAgent?: string } };
  if (g.Deno?.version?.deno) return { runtime: 'deno', runtime_version: g.Deno.version.deno };
  if (g.process?.versions?.node) return { runtime: 'node', runtime_version: g.process.versions.node, platform: g.process.platform };
  return { runtime: 'browser', user_agent: g.navigator?.userAgent ?? 'unknown' };
}

function tracker(onProgress: ProgressFn | undefined, stage: Stage): (done: number, total: number) => void {
  const t0 = performance.now();
  return (done, total) => {
    const elapsed = (performance.now() - t0) / 1000;
    onProgress?.(stage, done, total, done > 0 ? (elapsed / done) * (total - done) : null);
  };
}

/** Run REFRACT and return the JSON report object (schema refract.report.v0.3.1). */
export async function runRefract(o: RunRefractOptions): Promise<RefractReport> {
  const reference = parseKvConfig(o.reference ?? DEFAULT_REFERENCE_KV).label;
  const candidate = parseKvConfig(o.candidate).label;
  const prompts = o.prompts ?? PROMPTS_V01;
  const ctx = o.ctx ?? DEFAULTS.ctx;
  const chunks = o.chunks ?? DEFAULTS.chunks;
  const nPredict = o.nPredict ?? DEFAULTS.nPredict;
  const seed = o.seed ?? DEFAULTS.seed;
  const corpus = o.corpus === undefined ? { text: await defaultCorpus(), label: DEFAULT_CORPUS_LABEL } : typeof o.corpus === 'string' ? { text: o.corpus, label: '(in-memory corpus)' } : o.corpus;
  const { backend, model, signal } = o;
  const traj = (ref: string, cand: string, stage: Stage): Promise<TrajectoryAxisResult> =>
    runTrajectory(backend, { model, reference: ref, candidate: cand, prompts, nPredict, ctx, seed, decodeTokens: o.decodeTokens ?? true, onProgress: tracker(o.onProgress, stage), signal });
  const kld = (ref: string, cand: string, stage: Stage): Promise<KldAxisResult> =>
    runKld(backend, { model, reference: ref, candidate: cand, corpus: corpus.text, corpusLabel: corpus.label, chunks, ctx, onProgress: tracker(o.onProgress, stage), signal });

  let floorScore: number | null = null;
  if (o.measureFloor) {
    const ft = await traj(reference, reference, 'floor-trajectory');
    const fk = await kld(reference, reference, 'floor-kld');
    floorScore = compositeScore({ gtm: ft.score, kld: fk.score }).composite;
    if (floorScore < MIN_FLOOR) {
      throw new RefractError('refract', `noise floor ${floorScore.toFixed(2)} < ${MIN_FLOOR} (trajectory ${ft.score.toFixed(2)}, KLD ${fk.mean_kld.toFixed(6)} nats): the reference is non-deterministic on this build`);
    }
    if (Math.abs(ft.full_match_rate - 1) > 1e-9) {
      throw new RefractError('refract', `reference-vs-reference trajectories are not token-identical (full_match_rate ${ft.full_match_rate.toFixed(6)})`);
    }
  }

  const gtm = await traj(reference, candidate, 'trajectory');
  const kldResult = await kld(reference, candidate, 'kld');

  let rniah: RniahAxisResult | null = null;
  if (o.axes?.rniah) {
    const extra = o.axes.rniah === true ? {} : o.axes.rniah;
    const haystack = extra.haystack ?? (await defaultHaystack());
    rniah = await runRniah(backend, { seed, ...extra, haystack, model, reference, candidate, onProgress: tracker(o.onProgress, 'rniah'), signal });
  }
  let plad: PladAxisResult | null = null;
  if (o.axes?.plad) {
    const extra = o.axes.plad === true ? {} : o.axes.plad;
    plad = await runPlad(backend, { nPredict, ctx, seed, ...extra, model, reference, candidate, prompts, onProgress: tracker(o.onProgress, 'plad'), signal });
  }

  const composite = compositeScore({ gtm: gtm.score, kld: kldResult.score, rniah: rniah?.score ?? null, plad: plad?.score ?? null }, floorScore);
  const environment = { backend: backend.name, ...(await backend.modelMetadata({ model })), implementation: 'hrm-webgpu (TypeScript)', ...runtimeInfo() };
  return buildReport({ model, reference, candidate, composite, gtm, kld: kldResult, rniah, plad, environment, reproCommand: o.reproCommand, extras: o.extras });
}
