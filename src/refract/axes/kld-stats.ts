// Per-position comparison of two next-token distributions and the statistics llama.cpp's
// `llama-perplexity --kl-divergence` reports over them (tools/perplexity/perplexity.cpp): KL percentiles, same
// top-1 (here with a Wilson interval), Δp of the observed next token, PPL of both sides and their ratio with
// uncertainties. Positions with non-finite KL are dropped from every statistic; Δp and PPL need a next token.
import { BackendCapabilityError } from '../backend.ts';
import { argmaxRow, logSoftmaxRow } from '../../math/f64.ts';

/** Comparison of one position's two next-token distributions. */
export interface PositionStats {
  /** KL(P_ref || P_cand) in nats (NaN/Inf if the logits were). */
  kl: number;
  /** Both argmaxes agree. */
  sameTop: boolean;
  /** p_cand(next) - p_ref(next), when the next token is known. */
  dp?: number;
  /** -log p_cand(next), when the next token is known. */
  nllCand?: number;
  /** -log p_ref(next), when the next token is known. */
  nllRef?: number;
}

/** Compare logits rows ref[off..off+vocab) and cand[off..off+vocab), in float64 via log-softmax. */
export function comparePosition(ref: ArrayLike<number>, cand: ArrayLike<number>, vocab: number, off = 0,
  nextToken?: number): PositionStats {
  const lr = logSoftmaxRow(ref, off, vocab);
  const lc = logSoftmaxRow(cand, off, vocab);
  let kl = 0;
  for (let v = 0; v < vocab; v++) {
    const p = Math.exp(lr[v]);
    if (p > 0) kl += p * (lr[v] - lc[v]);
    else if (Number.isNaN(lr[v])) kl = Number.NaN;
  }
  // Of the log-probabilities, as before: subtracting the log-sum-exp can merge near-ties of the logits.
  const s: PositionStats = { kl, sameTop: argmaxRow(lr, 0, vocab) === argmaxRow(lc, 0, vocab) };
  if (nextToken !== undefined && nextToken >= 0 && nextToken < vocab) {
    s.dp = Math.exp(lc[nextToken]) - Math.exp(lr[nextToken]);
    s.nllCand = -lc[nextToken];
    s.nllRef = -lr[nextToken];
  }
  return s;
}

/** The percentile keys of `kld_percentiles`, as llama.cpp prints them (fractions in percent). */
export const KLD_PERCENTILES = ['min', '0.1', '1', '5', '10', '50', '90', '95', '99', '99.9', 'max'] as const;
/** Δp adds llama.cpp's quartiles. */
export const DELTA_P_PERCENTILES = ['min', '0.1', '1', '5', '10', '25', '50', '75', '90', '95', '99', '99.9',
  'max'] as const;

/** llama.cpp's percentile of sorted values: linear interpolation at fraction * (n - 1); 50 is the median. */
export function percentile(sorted: ArrayLike<number>, fraction: number): number {
  if (fraction <= 0) return sorted[0];
  if (fraction >= 1) return sorted[sorted.length - 1];
  const x = fraction * (sorted.length - 1);
  const i = Math.floor(x);
  const f = x - i;
  return (1 - f) * sorted[i] + f * sorted[Math.min(i + 1, sorted.length - 1)];
}

/** The named percentiles of unsorted values. */
export function percentiles<K extends string>(values: readonly number[], keys: readonly K[]): Record<K, number> {
  const s = Float64Array.from(values).sort();
  return Object.fromEntries(keys.map((k) => [k,
    percentile(s, k === 'min' ? 0 : k === 'max' ? 1 : Number(k) / 100)])) as Record<K, number>;
}

/** Mean and its standard error sqrt(var / (n - 1)) (llama.cpp mean_and_uncertainty); error 0 for n < 2. */
export function meanAndUncertainty(values: readonly number[]): [number, number] {
  const n = values.length;
  const mean = values.reduce((s, v) => s + v, 0) / n;
  if (n < 2) return [mean, 0];
  const v = values.reduce((s, x) => s + (x - mean) ** 2, 0) / n;
  return [mean, Math.sqrt(v / (n - 1))];
}

/** Wilson score interval for k successes out of n at z (95 %: 1.959964). */
export function wilsonInterval(k: number, n: number, z = 1.959963984540054): [number, number] {
  if (n === 0) return [0, 1];
  const p = k / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // At k = 0 or k = n the bound is exactly 0 or 1; floating point would leave it an ulp away.
  return [k === 0 ? 0 : Math.max(0, centre - half), k === n ? 1 : Math.min(1, centre + half)];
}

type Pct<K extends readonly string[]> = Record<K[number], number>;

/** Everything `axes.kld` reports beyond the mean (JSON field names). */
export interface KldStatistics {
  /** Positions kept (finite KL). */
  n_positions: number;
  mean_kld_unc: number;
  kld_percentiles: Pct<typeof KLD_PERCENTILES>;
  /** Fraction of kept positions whose argmax agrees, and its 95 % Wilson interval. */
  same_top1: number;
  same_top1_ci95: [number, number];
  /** Kept positions with an observed next token (Δp and PPL use these). */
  n_next: number;
  /** p_cand(next) - p_ref(next): mean ± error, RMS ± error, percentiles; fractions, not percent. */
  delta_p: {
    mean: number; mean_unc: number; rms: number; rms_unc: number; percentiles: Pct<typeof DELTA_P_PERCENTILES>;
  } | null;
  ppl_ref: number | null;
  ppl_ref_unc: number | null;
  ppl_cand: number | null;
  ppl_cand_unc: number | null;
  /** exp(mean(nll_cand - nll_ref)) ± its error (llama.cpp's PPL(Q)/PPL(base) with the covariance). */
  ppl_ratio: number | null;
  ppl_ratio_unc: number | null;
}

/** Per-position values of a KLD pass; result() gives the mean (as before) and the full statistics. */
export class KldAccumulator {
  private readonly kls: number[] = [];
  private same = 0;
  private dropped = 0;
  private readonly dps: number[] = [];
  private readonly nllCand: number[] = [];
  private readonly nllRef: number[] = [];
  /** KL per position in order, non-finite ones included. */
  readonly perPosition: number[] = [];

  add(st: PositionStats): void {
    this.perPosition.push(st.kl);
    if (!Number.isFinite(st.kl)) {
      this.dropped++;
      return;
    }
    this.kls.push(st.kl);
    if (st.sameTop) this.same++;
    if (st.dp !== undefined && st.nllCand !== undefined && st.nllRef !== undefined && Number.isFinite(st.nllCand) &&
      Number.isFinite(st.nllRef)) {
      this.dps.push(st.dp);
      this.nllCand.push(st.nllCand);
      this.nllRef.push(st.nllRef);
    }
  }

  /** Mean KL (throws if every position was non-finite, like the MLX backend) and the side statistics. */
  result(): {
    meanKld: number; kept: number; dropped: number; ppl: number | null; rmsDpPct: number | null; sameToppPct: number;
    stats: KldStatistics;
  } {
    const n = this.kls.length;
    if (n === 0) throw new BackendCapabilityError('kld',
      'every position produced non-finite KL; the logits may be underflowing on this KV config');
    const [meanKld, meanKldUnc] = meanAndUncertainty(this.kls);
    const m = this.dps.length;
    let dp: KldStatistics['delta_p'] = null;
    type Ppl = 'ppl_ref' | 'ppl_ref_unc' | 'ppl_cand' | 'ppl_cand_unc' | 'ppl_ratio' | 'ppl_ratio_unc';
    let ppl: Pick<KldStatistics, Ppl> =
      { ppl_ref: null, ppl_ref_unc: null, ppl_cand: null, ppl_cand_unc: null, ppl_ratio: null, ppl_ratio_unc: null };
    if (m > 0) {
      const [mean, meanUnc] = meanAndUncertainty(this.dps);
      const [mse, mseUnc] = meanAndUncertainty(this.dps.map((x) => x * x));
      const rms = Math.sqrt(mse);
      dp = { mean, mean_unc: meanUnc, rms, rms_unc: rms > 0 ? (0.5 / rms) * mseUnc : 0,
        percentiles: percentiles(this.dps, DELTA_P_PERCENTILES) };
      const [lc, lcUnc] = meanAndUncertainty(this.nllCand);
      const [lr, lrUnc] = meanAndUncertainty(this.nllRef);
      // var(a - b) = var a + var b - 2 cov(a, b): the per-position difference carries the covariance.
      const [, ratioUnc] = meanAndUncertainty(this.nllCand.map((x, i) => x - this.nllRef[i]));
      const ratio = Math.exp(lc - lr);
      ppl = { ppl_ref: Math.exp(lr), ppl_ref_unc: Math.exp(lr) * lrUnc, ppl_cand: Math.exp(lc),
        ppl_cand_unc: Math.exp(lc) * lcUnc, ppl_ratio: ratio, ppl_ratio_unc: ratio * ratioUnc };
    }
    const stats: KldStatistics = {
      n_positions: n, mean_kld_unc: meanKldUnc, kld_percentiles: percentiles(this.kls, KLD_PERCENTILES),
      same_top1: this.same / n, same_top1_ci95: wilsonInterval(this.same, n), n_next: m, delta_p: dp, ...ppl,
    };
    return { meanKld, kept: n, dropped: this.dropped, ppl: ppl.ppl_cand, rmsDpPct: dp ? 100 * dp.rms : null,
      sameToppPct: 100 * stats.same_top1, stats };
  }
}

/**
 * A KLD pass in progress: the chunks finished and what they accumulated. A backend that resumes (`KldOptions.resume`)
 * gets back the one it made; its accumulator is the backend's own, not API.
 */
export interface KldProgress {
  acc: KldAccumulator;
  done: number;
}

export function newKldProgress(): KldProgress {
  return { acc: new KldAccumulator(), done: 0 };
}
