// Axis A: Trajectory (REFRACT axes/trajectory.py, reported under the key `gtm`). Greedy-decode every prompt
// under both KV configs and compare the decode-time token ids:
// score = 100 * mean(prefix_agreement_length) / mean(len(cand)), clamped to [0, 100] (0 if no candidate tokens).
import { DEFAULTS, RefractError, type Backend } from '../backend.ts';
import { InputError } from '../../errors.ts';
import type { Prompt } from '../prompts.ts';

/** First index where the sequences differ (null when identical) and the shared-prefix length. A strict
 *  prefix diverges at the shorter length; identical sequences agree over their full length. */
export function diffTrajectories(ref: ArrayLike<number>,
  cand: ArrayLike<number>): { firstDivergence: number | null; prefixLength: number } {
  const n = Math.min(ref.length, cand.length);
  for (let i = 0; i < n; i++) if (ref[i] !== cand[i]) return { firstDivergence: i, prefixLength: i };
  return { firstDivergence: ref.length === cand.length ? null : n, prefixLength: n };
}

/** Python's statistics.median (mean of the two middle values for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export interface TrajectoryPromptRecord {
  id: string;
  category: string | null;
  prompt: string;
  ref_token_ids: number[];
  cand_token_ids: number[];
  first_divergence: number | null;
  prefix_agreement_length: number;
  cand_length: number;
  ref_length: number;
  matched: boolean;
  /** Per-token display strings, when the backend can decode them (for the HTML diff). */
  ref_tokens?: string[];
  cand_tokens?: string[];
}

export interface TrajectoryAxisResult {
  score: number;
  full_match_rate: number;
  median_first_divergence: number | null;
  mean_prefix_agreement_length: number;
  mean_cand_length: number;
  mean_ref_length: number;
  n_prompts: number;
  n_tokens_each: number;
  per_prompt: TrajectoryPromptRecord[];
  notes: string[];
}

export interface TrajectoryAxisOptions {
  model: string;
  reference: string;
  candidate: string;
  prompts: readonly Prompt[];
  nPredict?: number;
  ctx?: number;
  seed?: number;
  /** Also store per-token strings (backend.decodeTokens) in each record. */
  decodeTokens?: boolean;
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

/** Run the trajectory axis: all reference decodes first, then all candidate decodes. */
export async function runTrajectory(backend: Backend, o: TrajectoryAxisOptions): Promise<TrajectoryAxisResult> {
  if (o.prompts.length === 0) throw new InputError('trajectory', 'no prompts');
  const nPredict = o.nPredict ?? DEFAULTS.nPredict;
  const total = o.prompts.length * 2;
  let done = 0;
  const decodeAll = async (kv: string): Promise<number[][]> => {
    const out: number[][] = [];
    for (const p of o.prompts) {
      o.signal?.throwIfAborted();
      const r = await backend.runCompletionTrajectory({
        model: o.model, prompt: p.prompt, kvConfig: kv, nPredict, ctx: o.ctx ?? DEFAULTS.ctx, seed: o.seed ??
          DEFAULTS.seed, signal: o.signal,
      });
      // A stopped completion ends early: its tokens are not a trajectory to score.
      o.signal?.throwIfAborted();
      out.push([...r.tokenIds]);
      o.onProgress?.(++done, total);
    }
    return out;
  };
  const refs = await decodeAll(o.reference);
  const cands = await decodeAll(o.candidate);
  const decode = o.decodeTokens && backend.decodeTokens ? backend.decodeTokens.bind(backend) : null;

  const perPrompt: TrajectoryPromptRecord[] = [];
  const firstDivs: number[] = [];
  let matches = 0;
  for (let i = 0; i < o.prompts.length; i++) {
    const p = o.prompts[i];
    const [ref, cand] = [refs[i], cands[i]];
    if (ref.length === 0 && cand.length === 0) {
      throw new RefractError('trajectory',
        `both reference and candidate trajectories are empty for prompt ${JSON.stringify(p.id)}`);
    }
    const { firstDivergence, prefixLength } = diffTrajectories(ref, cand);
    if (firstDivergence === null) matches++;
    else firstDivs.push(firstDivergence);
    const rec: TrajectoryPromptRecord = {
      id: p.id, category: p.category ?? null, prompt: p.prompt, ref_token_ids: ref, cand_token_ids: cand,
      first_divergence: firstDivergence, prefix_agreement_length: prefixLength, cand_length: cand.length,
      ref_length: ref.length, matched: firstDivergence === null,
    };
    if (decode) {
      rec.ref_tokens = await decode({ model: o.model, ids: ref });
      rec.cand_tokens = await decode({ model: o.model, ids: cand });
    }
    perPrompt.push(rec);
  }
  return summarizeTrajectories(perPrompt, nPredict, matches, firstDivs);
}

function summarizeTrajectories(perPrompt: TrajectoryPromptRecord[], nPredict: number, matches: number,
  firstDivs: number[]): TrajectoryAxisResult {
  const n = perPrompt.length;
  const mean = (f: (r: TrajectoryPromptRecord) => number) => perPrompt.reduce((s, r) => s + f(r), 0) / n;
  const meanPrefix = mean((r) => r.prefix_agreement_length);
  const meanCand = mean((r) => r.cand_length);
  const score = meanCand > 0 ? Math.max(0, Math.min(100, (100 * meanPrefix) / meanCand)) : 0;
  const notes: string[] = [];
  const short = perPrompt.filter((r) => r.cand_length < nPredict).length;
  if (short > 0) {
    notes.push(`${short}/${n} candidates stopped before n_predict=${nPredict} (EOS or other stop condition). ` +
      'Per-prompt cand_length records the actual decoded length.');
  }
  return {
    score,
    full_match_rate: matches / n,
    median_first_divergence: firstDivs.length ? median(firstDivs) : null,
    mean_prefix_agreement_length: meanPrefix,
    mean_cand_length: meanCand,
    mean_ref_length: mean((r) => r.ref_length),
    n_prompts: n,
    n_tokens_each: nPredict,
    per_prompt: perPrompt,
    notes,
  };
}
