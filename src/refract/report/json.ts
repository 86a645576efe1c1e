// The JSON report, schema refract.report.v0.3.1 (REFRACT report.json_report), as a plain object.
import { NO_STATS, type KldAxisResult } from '../axes/kld.ts';
import type { PladAxisResult } from '../axes/plad.ts';
import type { RniahAxisResult } from '../axes/rniah.ts';
import type { TrajectoryAxisResult } from '../axes/trajectory.ts';
import { AXIS_PROSE, interpretPattern, summaryProse } from '../diagnosis.ts';
import { band, type Band, type CompositeScore } from '../score.ts';
import { InputError } from '../../errors.ts';

export const REPORT_SCHEMA = 'refract.report.v0.3.1';
/** The REFRACT version whose definitions this port follows. */
export const REFRACT_VERSION = '0.3.2';

interface AxisTail {
  band: Band;
  description: string;
}

/** Axes A and B always have a block; one that did not run (--skip-gtm, --skip-kld, an interrupted run) has
 *  score null, band "skipped" and skipped true, as the original writes them. */
interface AbTail {
  score: number | null;
  band: Band | 'skipped';
  skipped: boolean;
  description: string;
}

/** full_match_rate is null when the axis did not run: a skipped axis claims no rate (the original writes 1). */
export type GtmBlock = Omit<TrajectoryAxisResult, 'score' | 'full_match_rate'> & AbTail & {
  full_match_rate: number | null;
};
/** mean_kld is null where the axis was skipped: a skipped axis claims no figure. */
export type KldBlock = Omit<KldAxisResult, 'score' | 'mean_kld'> & { mean_kld: number | null } & AbTail;
/** R-NIAH's band is 'n/a' when it ran but has no score (no cell ran, or the reference never found the needle). */
export type RniahBlock = RniahAxisResult & Omit<AxisTail, 'band'> & {
  band: Band | 'n/a';
  confidence: 'ok' | 'low';
  base_acc_avg: number;
};
export type PladBlock = PladAxisResult & AxisTail & { skipped_perturbations: string[]; confidence: 'ok' | 'partial' };

export interface RefractReport {
  schema: typeof REPORT_SCHEMA;
  framework_version: string;
  environment: Record<string, unknown>;
  repro_command: string;
  timestamp: string;
  score_direction: 'higher_is_better';
  score_range: [number, number];
  model: string;
  reference: string;
  candidate: string;
  composite: number;
  band: Band;
  summary: string;
  diagnosis: string[];
  composite_detail: Omit<CompositeScore, 'composite' | 'band'>;
  axes: { gtm: GtmBlock; kld: KldBlock; rniah?: RniahBlock; plad?: PladBlock };
  extras: Record<string, unknown>;
  /** Present when the run stopped early (Ctrl-C, an error): the axes that did not finish, and why. */
  partial?: { reason: string; unfinished: string[] };
}

export interface BuildReportInput {
  model: string;
  reference: string;
  candidate: string;
  composite: CompositeScore;
  /** null: the axis did not run. */
  gtm: TrajectoryAxisResult | null;
  kld: KldAxisResult | null;
  rniah?: RniahAxisResult | null;
  plad?: PladAxisResult | null;
  environment?: Record<string, unknown>;
  reproCommand?: string;
  extras?: Record<string, unknown>;
  /** Default: now, local time, seconds (Python isoformat(timespec='seconds')). */
  timestamp?: string;
  partial?: RefractReport['partial'];
  /** KLD chunks x ctx for a skipped KLD block (the original's stub keeps them). */
  chunks?: number;
  ctx?: number;
}

const SKIPPED_GTM: Omit<GtmBlock, keyof AbTail> = {
  full_match_rate: null, median_first_divergence: null, mean_prefix_agreement_length: 0, mean_cand_length: 0,
  mean_ref_length: 0,
  n_prompts: 0, n_tokens_each: 0, per_prompt: [], notes: [],
};

function skippedKld(chunks: number, ctx: number): Omit<KldBlock, keyof AbTail> {
  return {
    mean_kld: null, ppl: null, rms_dp_pct: null, same_topp_pct: null, base_path: '', chunks, ctx,
    is_self_reference: false,
    corpus: { path: '', size_bytes: 0, sha256_head: null, sha256_head_bytes: 0 }, convention: '', ...NO_STATS,
  };
}

function abBlock<T extends { score: number }, S>(result: T | null, stub: S, score: number | null, description: string):
  (Omit<T, 'score'> | S) & AbTail {
  if (result === null || score === null) return { ...stub, ...(result ?? {}), score: null, band: 'skipped',
    skipped: true, description };
  return { ...result, band: band(score), skipped: false, description };
}

/** Local time as `YYYY-MM-DDTHH:MM:SS`. */
export function isoSeconds(d = new Date()): string {
  const p = (n: number) => String(n).padStart(2, '0');
  const date = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
  return `${date}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** Assemble the report; axis bands use the composite's per-axis scores, as the original does. */
export function buildReport(i: BuildReportInput): RefractReport {
  const c = i.composite;
  const { composite, band: compositeBand, ...detail } = c;
  const axes: RefractReport['axes'] = {
    gtm: abBlock(i.gtm, SKIPPED_GTM, c.gtm_score, AXIS_PROSE.gtm),
    kld: abBlock(i.kld, skippedKld(i.chunks ?? 0, i.ctx ?? 0), c.kld_score, AXIS_PROSE.kld),
  };
  if (i.rniah) {
    const cells = i.rniah.cells;
    const baseAvg = cells.length ? cells.reduce((s, x) => s + x.base_acc, 0) / cells.length : 0;
    const b = c.rniah_score === null ? 'n/a' : band(c.rniah_score);
    const confidence = baseAvg < 0.2 ? 'low' : 'ok';
    axes.rniah = { ...i.rniah, confidence, base_acc_avg: baseAvg, band: b, description: AXIS_PROSE.rniah };
  }
  if (i.plad && c.plad_score !== null) {
    const skipped = Object.entries(i.plad.per_perturbation_score).filter(([,
      v]) => !Number.isFinite(v)).map(([k]) => k);
    axes.plad = { ...i.plad, skipped_perturbations: skipped, confidence: skipped.length ? 'partial' : 'ok',
      band: band(c.plad_score), description: AXIS_PROSE.plad };
  }
  return {
    schema: REPORT_SCHEMA,
    framework_version: REFRACT_VERSION,
    environment: i.environment ?? {},
    repro_command: i.reproCommand ?? '',
    timestamp: i.timestamp ?? isoSeconds(),
    score_direction: 'higher_is_better',
    score_range: [0, 100],
    model: i.model,
    reference: i.reference,
    candidate: i.candidate,
    composite,
    band: compositeBand,
    summary: summaryProse(compositeBand, { gtm: c.gtm_score, kld: c.kld_score }),
    diagnosis: interpretPattern({ gtm: c.gtm_score, kld: c.kld_score, rniah: c.rniah_score, plad: c.plad_score }),
    composite_detail: detail,
    axes,
    extras: i.extras ?? {},
    ...(i.partial ? { partial: i.partial } : {}),
  };
}

/** JSON text (2-space indent, as the original). NaN and infinities become null (Python writes a bare NaN). */
export function toJsonString(report: RefractReport, indent = 2): string {
  return JSON.stringify(report, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v),
    indent || undefined);
}

/** Parse a report JSON file's text, checking the fields compare/repeatability rely on. */
export function parseReport(text: string): RefractReport {
  let d: unknown;
  try {
    d = JSON.parse(text.replace(/([:[,]\s*)-?(?:NaN|Infinity)\b/g, '$1null'));
  } catch (e) {
    throw new InputError('report', `not JSON: ${(e as Error).message}`);
  }
  const r = d as Partial<RefractReport>;
  if (typeof r !== 'object' || r === null || typeof r.composite !== 'number' || typeof r.axes !== 'object' ||
    r.axes === null) {
    throw new InputError('report', 'not a REFRACT report: needs a numeric "composite" and an "axes" object');
  }
  return r as RefractReport;
}
