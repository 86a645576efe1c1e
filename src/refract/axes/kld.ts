// Axis B: KLD@D (REFRACT axes/kld.py + the MLX backend's native KLD). Chunk i of the corpus is tokens
// [i*ctx, (i+1)*ctx), n_chunks = min(chunks, floor(len/ctx)); each chunk runs once per KV config from a fresh
// cache with a causal mask; per position KL(P_ref || P_cand) = sum_v p_ref(v) (log p_ref(v) - log p_cand(v));
// non-finite positions are dropped; mean over the kept positions of all chunks; score = 100 * exp(-mean_kld).
// Every position of a chunk is scored ("full chunk, causal"); llama.cpp's backend scores only the second half.
// The plain helpers below (chunking, per-row KL, accumulation) are what a backend's runKld is built from.
import { BackendCapabilityError, DEFAULTS, RefractError, type Backend } from '../backend.ts';
import { parseKvConfig } from '../kvconfig.ts';

export const KLD_CONVENTION = 'full chunk, causal';
const CORPUS_HASH_BYTES = 1024 * 1024;

/** The chunks KLD@D scores: throws if the corpus has fewer than ctx tokens. */
export function kldChunks(tokens: ArrayLike<number>, chunks: number, ctx: number): number[][] {
  if (tokens.length < ctx) throw new BackendCapabilityError('kld', `Corpus too short for KLD: ${tokens.length} tokens, need ≥ ${ctx}.`);
  const n = Math.min(chunks, Math.floor(tokens.length / ctx));
  if (n < 1) throw new BackendCapabilityError('kld', `Corpus yields zero chunks at ctx=${ctx}.`);
  return Array.from({ length: n }, (_, i) => Array.from({ length: ctx }, (_, j) => tokens[i * ctx + j]));
}

function logSoftmax(row: ArrayLike<number>, off: number, n: number): Float64Array {
  let max = -Infinity;
  for (let v = 0; v < n; v++) max = Math.max(max, row[off + v]);
  let sum = 0;
  for (let v = 0; v < n; v++) sum += Math.exp(row[off + v] - max);
  const lse = max + Math.log(sum);
  const out = new Float64Array(n);
  for (let v = 0; v < n; v++) out[v] = row[off + v] - lse;
  return out;
}

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
}

/** Compare logits rows ref[off..off+vocab) and cand[off..off+vocab), in float64 via log-softmax. */
export function comparePosition(ref: ArrayLike<number>, cand: ArrayLike<number>, vocab: number, off = 0, nextToken?: number): PositionStats {
  const lr = logSoftmax(ref, off, vocab);
  const lc = logSoftmax(cand, off, vocab);
  let kl = 0;
  let tr = 0;
  let tc = 0;
  for (let v = 0; v < vocab; v++) {
    const p = Math.exp(lr[v]);
    if (p > 0) kl += p * (lr[v] - lc[v]);
    else if (Number.isNaN(lr[v])) kl = Number.NaN;
    if (lr[v] > lr[tr]) tr = v;
    if (lc[v] > lc[tc]) tc = v;
  }
  const s: PositionStats = { kl, sameTop: tr === tc };
  if (nextToken !== undefined && nextToken >= 0 && nextToken < vocab) {
    s.dp = Math.exp(lc[nextToken]) - Math.exp(lr[nextToken]);
    s.nllCand = -lc[nextToken];
  }
  return s;
}

/** Mean KL over kept (finite) positions, plus PPL / RMS Δp / same-top when positions carry them. */
export class KldAccumulator {
  private klSum = 0;
  private kept = 0;
  private dropped = 0;
  private same = 0;
  private dp2 = 0;
  private nll = 0;
  private nNext = 0;
  private nStats = 0;
  readonly perPosition: number[] = [];

  add(s: PositionStats | number): void {
    const st = typeof s === 'number' ? { kl: s, sameTop: false } : s;
    this.perPosition.push(st.kl);
    if (!Number.isFinite(st.kl)) {
      this.dropped++;
      return;
    }
    this.klSum += st.kl;
    this.kept++;
    if (typeof s !== 'number') {
      this.nStats++;
      if (st.sameTop) this.same++;
    }
    if (st.dp !== undefined && st.nllCand !== undefined && Number.isFinite(st.nllCand)) {
      this.dp2 += st.dp * st.dp;
      this.nll += st.nllCand;
      this.nNext++;
    }
  }

  /** Mean KL (throws if every position was non-finite, like the MLX backend) and the side statistics. */
  result(): { meanKld: number; kept: number; dropped: number; ppl: number | null; rmsDpPct: number | null; sameToppPct: number | null } {
    if (this.kept === 0) {
      throw new BackendCapabilityError('kld', 'every position produced non-finite KL; the logits may be underflowing on this KV config');
    }
    return {
      meanKld: this.klSum / this.kept,
      kept: this.kept,
      dropped: this.dropped,
      ppl: this.nNext ? Math.exp(this.nll / this.nNext) : null,
      rmsDpPct: this.nNext ? 100 * Math.sqrt(this.dp2 / this.nNext) : null,
      sameToppPct: this.nStats ? (100 * this.same) / this.nStats : null,
    };
  }
}

/** REFRACT's corpus identity block: size in UTF-8 bytes and SHA-256 of the first MiB (null without WebCrypto). */
export async function corpusIdentity(text: string, path: string): Promise<{ path: string; size_bytes: number; sha256_head: string | null; sha256_head_bytes: number }> {
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

export interface KldAxisResult {
  score: number;
  mean_kld: number;
  ppl: number | null;
  rms_dp_pct: number | null;
  same_topp_pct: number | null;
  /** llama.cpp's KLD base file; this port keeps reference logits in memory, so null. */
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

/** 100 * exp(-kld), negative KLD clamped to 0. */
export function kldToScore(kld: number): number {
  return 100 * Math.exp(-Math.max(kld, 0));
}

/** Run KLD@D through backend.runKld. */
export async function runKld(backend: Backend, o: KldAxisOptions): Promise<KldAxisResult> {
  const r = await backend.runKld({
    model: o.model, corpus: o.corpus, refKv: o.reference, candKv: o.candidate, chunks: o.chunks ?? DEFAULTS.chunks,
    ctx: o.ctx ?? DEFAULTS.ctx, perPosition: o.perPosition ?? true, onChunk: o.onProgress, signal: o.signal,
  });
  if (!Number.isFinite(r.meanKld)) throw new RefractError('kld', `backend ${backend.name} returned mean KLD ${r.meanKld}`);
  const out: KldAxisResult = {
    score: kldToScore(r.meanKld),
    mean_kld: r.meanKld,
    ppl: r.ppl ?? null,
    rms_dp_pct: r.rmsDpPct ?? null,
    same_topp_pct: r.sameToppPct ?? null,
    base_path: null,
    chunks: r.chunks,
    ctx: r.ctx,
    is_self_reference: parseKvConfig(o.reference).label === parseKvConfig(o.candidate).label,
    corpus: await corpusIdentity(o.corpus, o.corpusLabel ?? '(in-memory corpus)'),
    convention: typeof r.metadata.convention === 'string' ? r.metadata.convention : KLD_CONVENTION,
  };
  // Six significant digits: the values only feed plots, and 16k full doubles would dominate the JSON.
  if (r.perPosition) out.per_position_kld = Array.from(r.perPosition, (x) => (Number.isFinite(x) ? Number(x.toPrecision(6)) : null));
  return out;
}
