// Attention for one query that sees every key of a quantized cache (decode): scores over key chunks, then the values
// per 32 dims; see qsdpa_one.wgsl. qsdpa() selects it and validates its inputs; qsdpa.wgsl's passes are the reference.
import { Kernel } from '../../tensor/kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import type { QuantKV } from './types.ts';
import { roundCode, type Round } from '../common/codes.ts';

const SCORES = new Kernel('attention/qsdpa_one.wgsl', 'qone_scores');
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
  scale: number;
  round: Round;
  /** Gate source (see QsdpaOptions.gate), or a placeholder when `gated` is false. */
  gate: Tensor;
  gated: boolean;
}

/** out [1, heads * dim] from q [heads, 1, dim] over cache positions [0, kvLen) of k and v (validated by qsdpa). */
export function qsdpaOne(q: Tensor, k: QuantKV, v: QuantKV, out: Tensor, a: QsdpaOneArgs): void {
  const gpu = q.gpu;
  const dim = q.shape[2];
  const cap = k.q.shape[1];
  const chunk = (32 * WG) / dim;
  const nChunks = Math.ceil(cap / chunk);
  const scores = Tensor.empty(gpu, [a.heads, cap], 'f32', 'qsdpa_one.scores');
  const cmax = Tensor.empty(gpu, [a.heads, nChunks], 'f32', 'qsdpa_one.cmax');
  const uniforms = { kv_len: a.kvLen, cap, heads: a.heads, kv_heads: a.kvHeads, scale: a.scale, n_chunks: nChunks, zero: 0 };
  const round = roundCode('qsdpa', a.round);
  SCORES.dispatch(gpu, {
    bindings: { q, cq: k.q, cs: k.scales, cb: k.biases, scores, cmax }, uniforms,
    overrides: { HD: dim, BITS: k.bits, ROUND: round }, workgroups: [nChunks, a.heads],
  });
  OUT.dispatch(gpu, {
    bindings: { cq: v.q, cs: v.scales, cb: v.biases, scores, cmax, out, gate: a.gate }, uniforms,
    overrides: { HD: dim, BITS: v.bits, ROUND: round, SOFT: softmaxThreads(cap), GATE: a.gated ? 1 : 0 }, workgroups: [dim / 32, a.heads],
  });
  // Recorded dispatches keep reading them in order; the pool may hand them out again.
  scores.dispose();
  cmax.dispose();
}
