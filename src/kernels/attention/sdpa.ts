// Scaled dot-product attention over a full-precision KV cache slot (f32 or packed bf16), by the path the Gpu's
// planner gives (kernels/plan/attention.ts).
import { Kernel } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../errors.ts';
import { checkIndex } from '../common/args.ts';
import { MASK_CODE, roundCode } from '../common/codes.ts';
import { placeholder } from '../common/placeholder.ts';
import { maskBinding } from './mask.ts';
import type { AttnMask, FullKV, KVSide } from './types.ts';
import { dispatchOne, type DecodeMerge } from './sdpa-one.ts';
import { sdpaMm } from './sdpa-mm.ts';
import type { Round } from '../common/codes.ts';
import { planAttention, type AttentionPath } from '../plan/attention.ts';

const PREFILL = new Kernel('attention/sdpa_prefill.wgsl', 'sdpa_prefill');
const SPLIT = new Kernel('attention/sdpa_decode.wgsl', 'sdpa_split');
const COMBINE = new Kernel('attention/sdpa_decode.wgsl', 'sdpa_combine');

const DECODE_WG = 64;

export interface SdpaOptions {
  /** Keys to attend over: cache positions [0, kvLen). */
  kvLen: number;
  /** Path 'one': keys its chunks cover (reach.ts; a captured decode step fixes it), default from kvLen. */
  reach?: number;
  /** Absolute position of query 0 (the cache offset before these S tokens were appended). */
  offset: number;
  mask: AttnMask;
  scale: number;
  round?: Round;
  /** Force a path (tests, benchmarks); by default the planner's (planAttention). */
  path?: AttentionPath;
  /** Path 'one': the merge folded into the split (one dispatch) or a dispatch of its own; default the Gpu's. */
  merge?: DecodeMerge;
  /**
   * Decode: chunks the key axis is split into (one workgroup each per head and query); by default enough for ~256
   * workgroups over the cache capacity, at least 64 keys each. Each chunk takes ceil(kvLen / chunks) keys rounded
   * up to a multiple of 64; chunks past kvLen are empty.
   */
  chunks?: number;
  /** Decode: threads per key in the score step (1, 2, 4 or 8, dividing the head dim); default the largest. */
  parts?: number;
  /**
   * Gate the output as ops' sigmoidGate(gate, out) would, bit for bit, inside the kernel that writes it: out[s, i] =
   * r(r(sigmoid(gate[s, i])) * out[s, i]) for i < H*D (HRM's gqkv [S, 4*H*D], whose first H*D columns are the gate).
   */
  gate?: Tensor;
}

/**
 * out[s, h*D:(h+1)*D] = softmax(scale * q[h,s] k[h,:kvLen]^T + mask) v[h,:kvLen]; f32 inside, rounded once (then
 * gated when `gate` is given).
 * The decode path's dispatches (pipelines, workgroup counts, temporaries) depend only on the shapes and the cache
 * capacity: kvLen and offset are uniform values, so a recorded decode step replays at any position.
 */
export function sdpa(q: Tensor, k: KVSide, v: KVSide, opts: SdpaOptions): Tensor {
  const { heads, seq, dim, kvBf16, gateStride } = validate(q, k, v, opts);
  const kd = (k as FullKV).data, vd = (v as FullKV).data;
  const gpu = q.gpu;
  const out = Tensor.empty(gpu, [seq, heads * dim], 'f32', 'sdpa.out');
  if (seq === 0) return out;
  const m = opts.mask;
  const mask = maskBinding('sdpa', gpu, m, { seq, kvLen: opts.kvLen, offset: opts.offset });
  const gate = opts.gate ?? placeholder(gpu, 'no_gate', 'f32');
  const cap = kd.shape[1];
  const common = { HD: dim, KV_BF16: kvBf16 ? 1 : 0, MASK: MASK_CODE[opts.mask.kind] };
  const base = { seq, heads, kv_len: opts.kvLen, cap, offset: opts.offset, scale: opts.scale, gate_stride: gateStride };
  const store = { ROUND: roundCode('sdpa', opts.round), GATE: opts.gate ? 1 : 0 };   // of the kernel writing out
  const aligned = kd.offset % 16 === 0 && vd.offset % 16 === 0;
  const call = { heads, seq, dim, kvLen: opts.kvLen, kvBf16, mask: m.kind, round: opts.round, aligned };
  const { path, merge, tensorCores } = planAttention(gpu, call, opts);
  if (path === 'matmul') {
    const shape = { heads, seq, dim, kvLen: opts.kvLen, offset: opts.offset, scale: opts.scale, kvBf16 };
    sdpaMm(q, kd, vd, out, { ...shape, mask: m, maskBuf: mask, gate, gateStride, store, tensorCores });
    return out;
  }

  if (path === 'one') {
    // A causal single query at position offset sees keys 0..offset = all kvLen of them, as with no mask.
    dispatchOne({ q }, kd, vd, out, gate,
      { kvLen: opts.kvLen, reach: opts.reach, scale: opts.scale, gateStride, store, merge });
    return out;
  }

  if (path === 'prefill') {
    // Shared memory (BQ + BK) * (D + 1) + BQ * BK floats stays under 16 KiB, WebGPU's default limit.
    const [bq, tpq, bk] = dim <= 128 ? [8, 8, 16] : [4, 16, 8];
    PREFILL.dispatch(gpu, {
      bindings: { q, k: kd, v: vd, mask, out, gate },
      uniforms: base,
      overrides: { ...common, ...store, WGS: bq * tpq, BQ: bq, BK: bk },
      workgroups: [Math.ceil(seq / bq), heads],
    });
    return out;
  }
  const nChunks = opts.chunks ?? defaultChunks(cap, heads * seq);
  if (!(Number.isInteger(nChunks) && nChunks > 0)) throw new InputError('sdpa',
    `decode chunks ${nChunks} must be a positive integer`);
  const partO = Tensor.empty(gpu, [seq, heads, nChunks, dim], 'f32', 'sdpa.part_o');
  const partMl = Tensor.empty(gpu, [seq, heads, nChunks, 2], 'f32', 'sdpa.part_ml');
  const uniforms = { ...base, n_chunks: nChunks };
  SPLIT.dispatch(gpu, {
    bindings: { q, k: kd, v: vd, mask, part_o: partO, part_ml: partMl },
    uniforms, overrides: { ...common, WG: DECODE_WG,
      PARTS: opts.parts ?? [8, 4, 2, 1].find((n) => dim % n === 0)! }, workgroups: [nChunks, heads, seq],
  });
  COMBINE.dispatch(gpu, {
    bindings: { part_o: partO, part_ml: partMl, out, gate },
    uniforms, overrides: { HD: dim, WG: DECODE_WG, ...store }, workgroups: [heads, seq],
  });
  // Recorded dispatches keep reading them in order; the pool may hand them out again.
  partO.dispose();
  partMl.dispose();
  return out;
}

/**
 * Decode chunks for a cache of `cap` positions: enough for ~256 workgroups in all, at least 64 keys each. From the
 * capacity, not kvLen, so the dispatches of a decode step are the same at every position.
 */
function defaultChunks(cap: number, pairs: number): number {
  const splits = Math.max(1, Math.ceil(256 / pairs));
  const chunk = Math.max(DECODE_WG, Math.ceil(cap / splits / DECODE_WG) * DECODE_WG);
  return Math.max(1, Math.ceil(cap / chunk));
}

function validate(q: Tensor, k: KVSide, v: KVSide,
  o: SdpaOptions): { heads: number; seq: number; dim: number; kvBf16: boolean; gateStride: number } {
  const op = 'sdpa';
  if (q.dtype !== 'f32') throw new DTypeError(op, `q '${q.label}' is ${q.dtype}; expected f32`);
  if (q.rank !== 3) throw new ShapeError(op, `q '${q.label}' is [${q.shape.join(', ')}]; expected [heads, S, headDim]`);
  const [heads, seq, dim] = q.shape;
  if (k.kind !== 'full' || v.kind !== 'full') throw new DTypeError(op,
    `K/V are ${k.kind}/${v.kind}; sdpa reads full-precision caches (quantized caches have their own kernel)`);
  const kd = k.data, vd = v.data;
  for (const [name, t] of [['k', kd], ['v', vd]] as const) {
    if (t.dtype !== 'f32' && t.dtype !== 'bf16') throw new DTypeError(op,
      `${name} '${t.label}' is ${t.dtype}; expected f32 or bf16`);
    if (t.rank !== 3 || t.shape[0] !== heads || t.shape[2] !== dim) {
      throw new ShapeError(op,
        `${name} '${t.label}' is [${t.shape.join(', ')}]; ` +
        `q [${q.shape.join(', ')}] needs [${heads}, capacity, ${dim}]`);
    }
  }
  if (kd.dtype !== vd.dtype || kd.shape[1] !== vd.shape[1]) {
    throw new DTypeError(op,
      `k [${kd.shape.join(', ')}] ${kd.dtype} and v [${vd.shape.join(', ')}] ${vd.dtype} ` +
      `must share dtype and capacity`);
  }
  if (dim === 0 || dim > 256) throw new ShapeError(op, `headDim ${dim} must be in 1..256`);
  if (!Number.isInteger(o.kvLen) || o.kvLen < 0 || o.kvLen > kd.shape[1]) {
    throw new ShapeError(op, `kvLen ${o.kvLen} must be an integer in [0, capacity ${kd.shape[1]}]`);
  }
  checkIndex(op, 'offset', o.offset);
  if (!Number.isFinite(o.scale)) throw new InputError(op, `scale ${o.scale} must be finite`);
  return { heads, seq, dim, kvBf16: kd.dtype === 'bf16',
    gateStride: o.gate ? checkGate(op, o.gate, seq, heads * dim) : 0 };
}

/** Validates an attention gate (f32 rows of S, the gate block in the first `width` columns); returns its row stride. */
export function checkGate(op: string, gate: Tensor, seq: number, width: number): number {
  if (gate.dtype !== 'f32') throw new DTypeError(op, `gate '${gate.label}' is ${gate.dtype}; expected f32`);
  const stride = gate.rank ? gate.shape[gate.rank - 1] : 0;
  if (gate.rank !== 2 || gate.shape[0] !== seq || stride < width) {
    throw new ShapeError(op,
      `gate '${gate.label}' is [${gate.shape.join(', ')}]; expected [${seq}, >= ${width}] ` +
      `(S rows holding the H*D gate columns first)`);
  }
  return stride;
}
