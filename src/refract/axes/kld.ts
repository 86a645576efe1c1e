// Axis B: KLD@D (REFRACT axes/kld.py + the MLX backend's native KLD). Chunk i of the corpus is tokens
// [i*ctx, (i+1)*ctx), n_chunks = min(chunks, floor(len/ctx)); each chunk runs once per KV config from a fresh
// cache with a causal mask; per position KL(P_ref || P_cand) = sum_v p_ref(v) (log p_ref(v) - log p_cand(v));
// non-finite positions are dropped; mean over the kept positions of all chunks; score = 100 * exp(-mean_kld).
// Every position of a chunk is scored ("full chunk, causal"); llama.cpp's backend scores only the second half.
// The plain helpers (chunking here, per-row KL and accumulation in kld-stats.ts) are what a backend's runKld is
// built from; the llama.cpp-style statistics (percentiles, same top-1, Δp, PPL ratio) come with the mean.
import { BackendCapabilityError, DEFAULTS, RefractError, type Backend } from '../backend.ts';
import { parseKvConfig } from '../../hrm/kv-spec.ts';
import type { KldStatistics } from './kld-stats.ts';

export * from './kld-stats.ts';

export const KLD_CONVENTION = 'full chunk, causal';
const CORPUS_HASH_BYTES = 1024 * 1024;

/** The chunks KLD@D scores: throws if the corpus has fewer than ctx tokens. */
export function kldChunks(tokens: ArrayLike<number>, chunks: number, ctx: number): number[][] {
  if (tokens.length < ctx) throw new BackendCapabilityError('kld',
    `Corpus too short for KLD: ${tokens.length} tokens, need ≥ ${ctx}.`);
  const n = Math.min(chunks, Math.floor(tokens.length / ctx));
  if (n < 1) throw new BackendCapabilityError('kld', `Corpus yields zero chunks at ctx=${ctx}.`);
  return Array.from({ length: n }, (_, i) => Array.from({ length: ctx }, (_, j) => tokens[i * ctx + j]));
}

/** REFRACT's corpus identity block: size in UTF-8 bytes and SHA-256 of the first MiB (null without WebCrypto). */
export async function corpusIdentity(text: string,
  path: string): Promise<{ path: string; size_bytes: number; sha256_head: string | null; sha256_head_bytes: number }> {
  const bytes = new TextEncoder().encode(text);
  const head = bytes.subarray(0, CORPUS_HASH_BYTES);
  let hex: string | null = null;
  const subtle = globalThis.crypto?.subtle;
  if (subtle) {
    const digest = new Uint8Array(await subtle.digest('SHA-256', head));
    hex = Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
  }
  return { path, size_bytes: bytes.length, sha256_head: hex, sha256_head_bytes: head.length };
}

/** Axis B's report block: REFRACT's fields, then the llama.cpp statistics (null where the backend gave none). */
export interface KldAxisResult extends NullableStats {
  score: number;
  mean_kld: number;
  ppl: number | null;
  rms_dp_pct: number | null;
  same_topp_pct: number | null;
  /**
   * llama.cpp's KLD base file; from the backend's metadata (`base_path`), null when reference logits stay in
   * memory.
   */
  base_path: string | null;
  chunks: number;
  ctx: number;
  is_self_reference: boolean;
  corpus: { path: string; size_bytes: number; sha256_head: string | null; sha256_head_bytes: number };
  /** Which positions were scored. */
  convention: string;
  /** Per-position KL in corpus order (6 significant digits), null where dropped; absent if not reported. */
  per_position_kld?: (number | null)[];
}

export interface KldAxisOptions {
  model: string;
  reference: string;
  candidate: string;
  corpus: string;
  /** Shown as corpus.path in the report. */
  corpusLabel?: string;
  chunks?: number;
  ctx?: number;
  perPosition?: boolean; // default true
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

export type NullableStats = { [K in keyof KldStatistics]: KldStatistics[K] | null };

/** The llama.cpp statistics of a KLD result that has none (a backend without them, a skipped axis). */
export const NO_STATS: NullableStats = {
  n_positions: null, mean_kld_unc: null, kld_percentiles: null, same_top1: null, same_top1_ci95: null, n_next: null,
  delta_p: null,
  ppl_ref: null, ppl_ref_unc: null, ppl_cand: null, ppl_cand_unc: null, ppl_ratio: null, ppl_ratio_unc: null,
};

/** 100 * exp(-kld), negative KLD clamped to 0. */
export function kldToScore(kld: number): number {
  return 100 * Math.exp(-Math.max(kld, 0));
}

/** Run KLD@D through backend.runKld. */
export async function runKld(backend: Backend, o: KldAxisOptions): Promise<KldAxisResult> {
  o.signal?.throwIfAborted();
  const r = await backend.runKld({
    model: o.model, corpus: o.corpus, refKv: o.reference, candKv: o.candidate, chunks: o.chunks ?? DEFAULTS.chunks,
    ctx: o.ctx ?? DEFAULTS.ctx, perPosition: o.perPosition ?? true, onChunk: o.onProgress, signal: o.signal,
  });
  // A backend that ignores the signal still ends the axis here: a stopped run reports no KLD.
  o.signal?.throwIfAborted();
  if (!Number.isFinite(r.meanKld)) throw new RefractError('kld',
    `backend ${backend.name} returned mean KLD ${r.meanKld}`);
  const out: KldAxisResult = {
    score: kldToScore(r.meanKld),
    mean_kld: r.meanKld,
    ppl: r.ppl ?? null,
    rms_dp_pct: r.rmsDpPct ?? null,
    same_topp_pct: r.sameToppPct ?? null,
    base_path: typeof r.metadata.base_path === 'string' ? r.metadata.base_path : null,
    chunks: r.chunks,
    ctx: r.ctx,
    is_self_reference: parseKvConfig(o.reference).label === parseKvConfig(o.candidate).label,
    corpus: await corpusIdentity(o.corpus, o.corpusLabel ?? '(in-memory corpus)'),
    convention: typeof r.metadata.convention === 'string' ? r.metadata.convention : KLD_CONVENTION,
    ...NO_STATS,
    ...(r.stats ?? {}),
  };
  // Six significant digits: the values only feed plots, and 16k full doubles would dominate the JSON.
  if (r.perPosition) out.per_position_kld = Array.from(r.perPosition,
    (x) => (Number.isFinite(x) ? Number(x.toPrecision(6)) : null));
  return out;
}
