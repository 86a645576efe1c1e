// Attention for one query that sees every key of a quantized cache (decode): scores over key chunks, then the values
// over the same chunks, merged by the last chunk of a head to finish; see qsdpa_one.wgsl. qsdpa() selects it and
// validates its inputs; qsdpa.wgsl's passes are the reference.
// qsdpaOneAppend also appends the step's key and value first (qsdpa_one_append.wgsl), in place of rope_append.
import { Kernel } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { InputError } from '../../errors.ts';
import { GROUP } from '../quant/quant.ts';
import type { AppendedRow, QuantKV } from './types.ts';
import { checkQuantAppend, type HeadsOptions } from './kvcache.ts';
import { roundCode, type Round } from '../common/codes.ts';
import { counters } from '../common/counters.ts';
import { reachFor } from '../plan/reach.ts';

const SCORES = new Kernel('attention/qsdpa_one.wgsl', 'qone_scores');
const SCORES_APPEND = new Kernel('attention/qsdpa_one_append.wgsl', 'qone_scores_append');
const OUT = new Kernel('attention/qsdpa_one.wgsl', 'qone_out');
/** Threads of every qsdpa_one workgroup (the shader's WG). */
const WG = 256;

/** Head dims qsdpa_one handles: a key's 32-value packs and a value row's dims must divide its 256 threads. */
export function qsdpaOneFits(dim: number): boolean {
  return dim === 64 || dim === 128 || dim === 256;
}

/** Threads of qsdpa_softmax (and of qsdpa_one's softmax sum, which mirrors its order) over `span` keys. */
export function softmaxThreads(span: number): number {
  return span >= 1024 ? 256 : 64;
}

export interface QsdpaOneArgs {
  heads: number;
  kvHeads: number;
  kvLen: number;
  /** Keys the chunks cover (plan/reach.ts): fixed over a captured step's positions, else from kvLen. */
  reach?: number;
  scale: number;
  round: Round;
  /** Gate source (see QsdpaOptions.gate), or a placeholder when `gated` is false. */
  gate: Tensor;
  gated: boolean;
}

/** out [1, heads * dim] from q [heads, 1, dim] over cache positions [0, kvLen) of k and v (validated by qsdpa). */
export function qsdpaOne(q: Tensor, k: QuantKV, v: QuantKV, out: Tensor, a: QsdpaOneArgs): void {
  dispatchOne({ q }, k, v, out, a);
}

/**
 * Decode's cache append and attention in two dispatches (qsdpa_one_append.wgsl's scores, then qone_out): position
 * `offset` of gqkv [1, 4*H*D] is RoPE'd and quantized into the sides k and v, and its RoPE'd query attends over
 * the offset + 1 cached keys, gated by gqkv's gate block: bit for bit ropeAppend then qsdpa (path 'one', gate
 * gqkv), one dispatch fewer. Null when qsdpa_one cannot take the slot (the caller composes the two).
 */
export function qsdpaOneAppend(gqkv: Tensor, k: QuantKV, v: QuantKV,
  o: HeadsOptions & { scale: number; reach?: number }): Tensor | null {
  const { heads, dim } = checkQuantAppend('qsdpaOneAppend', gqkv, k, v, o);
  if (gqkv.shape[0] !== 1 || !qsdpaOneFits(dim) || k.q.shape[1] !== v.q.shape[1]) return null;
  if (!Number.isFinite(o.scale)) throw new InputError('qsdpaOneAppend', `scale ${o.scale} must be finite`);
  const out = Tensor.empty(gqkv.gpu, [1, heads * dim], 'f32', 'qsdpa.out');
  const args = { heads, kvHeads: heads, kvLen: o.offset + 1, reach: o.reach, scale: o.scale, round: o.round ?? 'none',
    gate: gqkv, gated: true };
  dispatchOne({ src: gqkv, width: heads * dim, log2Base: Math.log2(o.base) }, k, v, out, args);
  return out;
}

/**
 * The scores (of q, or of an appended gqkv row) and the values over the first kvLen keys, in chunks over the
 * reach (plan/reach.ts). The scores keep rows of `cap` and the softmax's threads follow the capacity (as qsdpa's
 * passes, whose bits these are); chunks past kvLen return at once and the value sum's order depends on kvLen
 * alone, so every reach gives the same bits.
 */
function dispatchOne(from: { q: Tensor } | AppendedRow, k: QuantKV, v: QuantKV, out: Tensor, a: QsdpaOneArgs): void {
  const append = 'src' in from ? from : null;
  const gpu = k.q.gpu;
  const dim = k.scales.shape[2] * GROUP;
  const cap = k.q.shape[1];
  const chunk = (32 * WG) / dim;
  const nChunks = Math.ceil(reachFor('qsdpa_one', a.kvLen, cap, a.reach) / chunk);
  // The scores [heads, cap], then each chunk's largest [heads, nChunks] (one binding: see qsdpa_one.inc.wgsl).
  const scores = Tensor.empty(gpu, [a.heads * (cap + nChunks)], 'f32', 'qsdpa_one.scores');
  // Each chunk's value sums [heads, nChunks, dim], merged by the head's last chunk to finish (counted in `done`).
  const part = Tensor.empty(gpu, [a.heads * nChunks * dim], 'f32', 'qsdpa_one.part');
  const uniforms = {
    kv_len: a.kvLen, cap, heads: a.heads, kv_heads: a.kvHeads, scale: a.scale, n_chunks: nChunks, zero: 0,
    width: append?.width ?? 0, log2_base: append?.log2Base ?? 0, gate_stride: a.gate.shape.at(-1) ?? 0,
  };
  const round = roundCode('qsdpa', a.round);
  const keys = { cq: k.q, cs: k.scales, cb: k.biases, scores };
  const overrides = { HD: dim, BITS: k.bits, ROUND: round };
  const workgroups: [number, number] = [nChunks, a.heads];
  if (append) {
    SCORES_APPEND.dispatch(gpu,
      { bindings: { ...keys, src: append.src, vq: v.q, vs: v.scales, vb: v.biases }, uniforms,
      overrides: { ...overrides, V_BITS: v.bits }, workgroups });
  } else {
    SCORES.dispatch(gpu, { bindings: { ...keys, q: (from as { q: Tensor }).q }, uniforms, overrides, workgroups });
  }
  OUT.dispatch(gpu, {
    bindings: { cq: v.q, cs: v.scales, cb: v.biases, scores, part, out, gate: a.gate,
      done: counters(gpu, a.heads) }, uniforms,
    overrides: { HD: dim, BITS: v.bits, ROUND: round, SOFT: softmaxThreads(cap), GATE: a.gated ? 1 : 0 }, workgroups,
  });
  // Recorded dispatches keep reading them in order; the pool may hand them out again.
  scores.dispose();
  part.dispose();
}
