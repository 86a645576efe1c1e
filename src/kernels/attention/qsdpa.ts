// Attention over a quantized KV cache (mlx-lm's quantized_scaled_dot_product_attention), see qsdpa.wgsl.
import { Kernel, grid } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { ShapeError } from '../../errors.ts';
import { checkIndex } from '../common/args.ts';
import { MASK_CODE, roundCode } from '../common/codes.ts';
import { placeholder } from '../common/placeholder.ts';
import { requireDtype } from '../quant/quant.ts';
import { ACC_CODE, type Accumulate } from '../quant/qmm.ts';
import { checkQuantKV } from './kvquant.ts';
import { maskBinding } from './mask.ts';
import { checkGate } from './sdpa.ts';
import { DECODE_MAX_QUERIES } from '../plan/attention.ts';
import type { AttnMask, QuantKV } from './types.ts';
import type { Round } from '../common/codes.ts';
import { qsdpaOne, qsdpaOneFits, softmaxThreads } from './qsdpa-one.ts';

const SCORES = new Kernel('attention/qsdpa.wgsl', 'qsdpa_scores');
const SOFTMAX = new Kernel('attention/qsdpa.wgsl', 'qsdpa_softmax');
const PV = new Kernel('attention/qsdpa.wgsl', 'qsdpa_pv');
const COMBINE = new Kernel('attention/qsdpa.wgsl', 'qsdpa_combine');
/** Scores of one chunk of queries stay under this many bytes (and under the adapter's binding limit). */
const SCORE_BUDGET = 64 << 20;
/** Below this many pass-3 workgroups, long key ranges are split into chunks combined by a fourth pass. */
const SPLIT_BELOW = 512;

export interface QsdpaOptions {
  /** Keys to attend over: cache positions [0, kvLen). */
  kvLen: number;
  /** Path 'one': keys its chunks cover (reach.ts; a captured decode step fixes it), default from kvLen. */
  reach?: number;
  /** Absolute position of query 0 (the cache offset before these S tokens were appended). */
  offset: number;
  mask: AttnMask;
  /** Softmax scale (1/sqrt(D)); like MLX's `queries *= scale`, it is rounded to the dtype first. */
  scale: number;
  round?: Round;
  /** 'f32' (default): MLX's Metal quantized matmuls; 'dtype': MLX's CPU backend (every op rounded). */
  accumulate?: Accumulate;
  /** Queries per chunk of scores (tests); by default as many as the score budget allows. */
  chunkRows?: number;
  /**
   * Gate the output as ops' sigmoidGate(gate, out) would, bit for bit, in the pass that writes it: out[s, i] =
   * r(r(sigmoid(gate[s, i])) * out[s, i]) for i < H*D (HRM's gqkv [S, 4*H*D], whose first H*D columns are the gate).
   */
  gate?: Tensor;
  /**
   * Force a path (tests, benchmarks). By default 'one' (qsdpa_one.wgsl: two dispatches over many workgroups) for a
   * single query that sees every key, with Metal's accumulation (accumulate 'f32') and a head dim of 64, 128 or
   * 256; else 'passes' (this file's scores, softmax and values passes), the reference.
   */
  path?: 'one' | 'passes';
}

/**
 * out[s, h*D:(h+1)*D] = r(qmm(r(softmax(mask(r(qmm(r(q[h,s] * scale), K'^T))))), V')) over cache positions
 * [0, kvLen), K' and V' quantized (their own bits); f32 inside, rounded (r) where mlx-lm's ops round; then gated
 * when `gate` is given.
 * With few queries (S <= DECODE_MAX_QUERIES, decode) the dispatches (pipelines, workgroup counts, temporaries) depend
 * only on the shapes and the cache capacity: kvLen and offset are uniform values, so a recorded decode step replays
 * at any position. Many queries size the scores by kvLen.
 */
export function qsdpa(q: Tensor, k: QuantKV, v: QuantKV, opts: QsdpaOptions): Tensor {
  const op = 'qsdpa';
  requireDtype(op, q, 'f32');
  if (q.rank !== 3) throw new ShapeError(op, `q '${q.label}' is [${q.shape.join(', ')}]; expected [heads, S, headDim]`);
  const [heads, seq, dim] = q.shape;
  const kvHeads = k.q.rank === 3 ? k.q.shape[0] : 0;
  const cap = checkQuantKV(op, k, kvHeads, dim);
  if (checkQuantKV(op, v, kvHeads, dim) !== cap) throw new ShapeError(op,
    `K and V caches differ in capacity ([${k.q.shape.join(', ')}] vs [${v.q.shape.join(', ')}])`);
  if (dim > 1024) throw new ShapeError(op, `head dim ${dim} is above the 1024 this kernel stages per query`);
  if (!(kvHeads > 0 && heads % kvHeads === 0)) throw new ShapeError(op,
    `${heads} query heads is not a multiple of ${kvHeads} cache heads`);
  const { kvLen, offset, mask, scale, round = 'none', accumulate = 'f32' } = opts;
  if (!(Number.isInteger(kvLen) && kvLen > 0 && kvLen <= cap)) throw new ShapeError(op,
    `kvLen ${kvLen} must be in 1..${cap} (cache capacity)`);
  checkIndex(op, 'offset', offset);
  if (mask.kind !== 'none' && offset + seq > kvLen) throw new ShapeError(op,
    `queries at ${offset}..${offset + seq} reach past kvLen ${kvLen}`);
  const gateStride = opts.gate ? checkGate(op, opts.gate, seq, heads * dim) : 0;
  const gpu = q.gpu;
  const maskT = maskBinding(op, gpu, mask, { seq, kvLen, offset });
  const gate = opts.gate ?? placeholder(gpu, 'no_gate', 'f32');
  const out = Tensor.empty(gpu, [seq, heads * dim], 'f32', 'qsdpa.out');
  if (seq === 0) return out;
  // A causal single query at the last position sees every key, as with no mask.
  const seesAll = seq === 1 && (mask.kind === 'none' || (mask.kind === 'causal' && offset + 1 === kvLen));
  const oneFits = seesAll && accumulate === 'f32' && qsdpaOneFits(dim);
  if (opts.path === 'one' && !oneFits) {
    throw new ShapeError(op,
      `path 'one' needs one query seeing every key (S ${seq}, mask ${mask.kind}, offset ${offset}, kvLen ${kvLen}), ` +
      `accumulate 'f32' (got '${accumulate}') and head dim 64, 128 or 256 (got ${dim})`);
  }
  if ((opts.path ?? (oneFits ? 'one' : 'passes')) === 'one') {
    qsdpaOne(q, k, v, out, { heads, kvHeads, kvLen, reach: opts.reach, scale, round, gate, gated: !!opts.gate });
    return out;
  }

  const maxWg = gpu.device.limits.maxComputeWorkgroupsPerDimension;
  const budget = Math.min(SCORE_BUDGET, gpu.maxBinding);
  // Keys the structure is sized for: the capacity when decoding (position-independent), else kvLen.
  const span = seq <= DECODE_MAX_QUERIES ? cap : kvLen;
  const rows = Math.max(1, Math.min(seq, maxWg, opts.chunkRows ?? seq, Math.floor(budget / (heads * span * 4))));
  if (heads * rows * span * 4 > gpu.maxBinding) throw new ShapeError(op,
    `one query over ${span} keys and ${heads} heads needs more score memory than one binding holds`);
  const scores = Tensor.empty(gpu, [heads, rows, span], 'f32', 'qsdpa.scores');
  // Queries per thread: each key row (pass 1) and value column (pass 3) is decoded once for tq queries.
  const tq = seq === 1 ? 1 : Math.max(1, Math.min(8, Math.floor(1024 / dim)));
  // Few queries over a long cache (decode): split the keys into chunks so that pass 3 fills the GPU.
  // MLX's CPU order (accumulate 'dtype') is sequential: one chunk, one slice.
  const seqOrder = accumulate === 'dtype';
  const pvGroups = Math.ceil(dim / 64) * Math.ceil(rows / tq) * heads;
  const splits = seqOrder || pvGroups >= SPLIT_BELOW ? 1 : Math.max(1,
    Math.min(Math.ceil(span / 256), Math.ceil(SPLIT_BELOW / pvGroups)));
  const ks = seqOrder || Math.ceil(span / splits) < 256 ? 1 : 4;
  const part = splits > 1 ? Tensor.empty(gpu, [splits, rows, heads * dim], 'f32', 'qsdpa.part') : placeholder(gpu,
    'qsdpa.no_part', 'f32');
  const rc = roundCode('qsdpa', round);
  const gated = opts.gate ? 1 : 0;
  const common = { ROUND: rc, ACC: ACC_CODE[accumulate] };
  const softWg = softmaxThreads(span);
  for (let q0 = 0; q0 < seq; q0 += rows) {
    const n = Math.min(rows, seq - q0);
    const uniforms = { seq, heads, kv_heads: kvHeads, kv_len: kvLen, cap, offset, q0, rows: n, dim, scale, splits,
      stride: span, gate_stride: gateStride, zero: 0 };
    SCORES.dispatch(gpu, {
      bindings: { q, cq: k.q, cs: k.scales, cb: k.biases, mask: maskT, scores }, uniforms,
      overrides: { ...common, BITS: k.bits, MASK: MASK_CODE[mask.kind], TQ: tq, WG: 64 },
      workgroups: [Math.ceil(span / 64), heads, Math.ceil(n / tq)],
    });
    SOFTMAX.dispatch(gpu,
      { bindings: { scores }, uniforms, overrides: { ROUND: rc, WG: softWg }, workgroups: [n, heads] });
    PV.dispatch(gpu, {
      bindings: { cq: v.q, cs: v.scales, cb: v.biases, scores, out, part, gate }, uniforms,
      overrides: { ...common, BITS: v.bits, KS: ks, TQ: tq, GATE: gated },
      workgroups: [Math.ceil(dim / 64), Math.ceil(n / tq), heads * splits],
    });
    if (splits > 1) {
      COMBINE.dispatch(gpu,
        { bindings: { part, out, gate }, uniforms, overrides: { ROUND: rc, WG: 64, GATE: gated },
        workgroups: grid(gpu, n * heads * dim, 64) });
    }
  }
  if (splits > 1) part.dispose();
  scores.dispose();
  return out;
}
