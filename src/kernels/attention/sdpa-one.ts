// Decode attention over a full-precision cache (one query per head seeing every key): sdpa_one.wgsl's 32-key chunk
// split and merge, the merge folded into the split by default (one dispatch) or as a dispatch of its own (the
// reference form; the Gpu's policy says which, kernels/plan/options.ts); appendAttendOne also appends the new key and
// value first (sdpa_one_append.wgsl). sdpa() takes this path as 'one' and validates its inputs.
import { Kernel, padTo } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { InputError } from '../../errors.ts';
import { roundCode } from '../common/codes.ts';
import { counters } from '../common/counters.ts';
import type { AppendedRow, FullKV } from './types.ts';
import { checkFullAppend, type HeadsOptions } from './kvcache.ts';
import { mergeFor, type DecodeMerge } from '../plan/options.ts';
import { reachFor } from '../plan/reach.ts';

export type { DecodeMerge };

const SPLIT = new Kernel('attention/sdpa_one.wgsl', 'one_split');
const MERGE = new Kernel('attention/sdpa_one.wgsl', 'one_merge');
const FOLD = new Kernel('attention/sdpa_one.wgsl', 'one_split_fold');
const SPLIT_APPEND = new Kernel('attention/sdpa_one_append.wgsl', 'one_split_append');
const FOLD_APPEND = new Kernel('attention/sdpa_one_append.wgsl', 'one_split_append_fold');
/** Threads of sdpa_one's workgroups and keys per chunk (constants of the shader). */
export const ONE_WG = 256;
const ONE_CHUNK = 32;
/** A head's chunk results start a multiple of this many slots apart (256 bytes of (m, l); see one_split.inc). */
const SLOT_ALIGN = 32;

/**
 * sdpa_one reads rows as 16-byte units (8 bf16 or 4 f32); a row's units must divide its workgroup of 256, and a
 * head is at most 256 dims (a thread holds at most 8 units of a chunk; the merge needs a row of threads per dim
 * group).
 */
export function oneShape(dim: number, bf16: boolean): boolean {
  const per = bf16 ? 8 : 4;
  const units = dim / per;
  return dim <= 256 && Number.isInteger(units) && ONE_WG % units === 0;
}

/**
 * Decode's cache append and attention in one split + merge (sdpa_one_append.wgsl): the new position `offset`
 * of gqkv [1, 4*H*D] is RoPE'd and written into the full-precision sides k and v, and its RoPE'd query attends over
 * the offset + 1 cached keys, gated by gqkv's gate block: bit for bit ropeAppend then sdpa(path 'one', gate gqkv),
 * one dispatch fewer (with `merge: 'fold'`, the default unless the Gpu's policy says otherwise: one dispatch in
 * all). Null when sdpa_one cannot take the slot (the caller composes the two).
 */
export function appendAttendOne(gqkv: Tensor, k: FullKV, v: FullKV,
  o: HeadsOptions & { scale: number; merge?: DecodeMerge; reach?: number }): Tensor | null {
  const { heads, dim } = checkFullAppend('appendAttendOne', gqkv, k, v, o);
  const kd = k.data, vd = v.data, bf16 = kd.dtype === 'bf16';
  if (gqkv.shape[0] !== 1 || !oneShape(dim, bf16) || kd.dtype !== vd.dtype || kd.shape[1] !== vd.shape[1] ||
    kd.offset % 16 || vd.offset % 16) return null;
  if (!Number.isFinite(o.scale)) throw new InputError('appendAttendOne', `scale ${o.scale} must be finite`);
  const merge = mergeFor(gqkv.gpu, 'appendAttendOne', o.merge);
  const out = Tensor.empty(gqkv.gpu, [1, heads * dim], 'f32', 'sdpa.out');
  const store = { ROUND: roundCode('sdpa', o.round), GATE: 1 };
  dispatchOne({ src: gqkv, width: heads * dim, log2Base: Math.log2(o.base) }, kd, vd, out, gqkv,
    { kvLen: o.offset + 1, reach: o.reach, scale: o.scale, gateStride: gqkv.shape[1], store, merge });
  return out;
}

interface OneArgs {
  kvLen: number;
  /** Keys the chunks cover (plan/reach.ts): fixed over a captured step's positions, else from kvLen. */
  reach?: number;
  scale: number;
  gateStride: number;
  store: { ROUND: number; GATE: number };
  merge: DecodeMerge;
}

/**
 * sdpa_one's split and merge over the first kvLen keys, of q or of an appended gqkv row (appendAttendOne). The
 * workgroups cover the reach (plan/reach.ts) and the counters are the device's, so a captured step replays at any kvLen
 * within its reach; the merge's order over the chunks holding keys depends on kvLen alone (one_merge.inc.wgsl),
 * and `slots` only places each head's results, so every reach gives the same bits.
 */
export function dispatchOne(from: { q: Tensor } | AppendedRow, kd: Tensor, vd: Tensor, out: Tensor, gate: Tensor,
  a: OneArgs): void {
  const append = 'src' in from ? from : null;
  const gpu = kd.gpu;
  const [heads, cap, dim] = kd.shape;
  const nChunks = Math.ceil(reachFor('sdpa_one', a.kvLen, cap, a.reach) / ONE_CHUNK);
  const slots = padTo(nChunks, SLOT_ALIGN);
  const partO = Tensor.empty(gpu, [heads, slots, dim], 'f32', 'sdpa.part_o');
  const partMl = Tensor.empty(gpu, [heads, slots, 2], 'f32', 'sdpa.part_ml');
  const uniforms = { kv_len: a.kvLen, cap, scale: a.scale, slots, gate_stride: a.gateStride, width: append?.width ?? 0,
    log2_base: append?.log2Base ?? 0 };
  const bf16 = kd.dtype === 'bf16';
  // The split's 16-byte units per thread (one_split.inc.wgsl's UPT): a row's units over 8 threads a key.
  const overrides = { HD: dim, KV_BF16: bf16 ? 1 : 0, UPT: Math.max(1, dim / (bf16 ? 8 : 4) / 8), ...a.store };
  const parts = { k4: kd, v4: vd, part_o: partO, part_ml: partMl };
  const query: Record<string, Tensor> = append ? { src: append.src } : { q: (from as { q: Tensor }).q };
  if (a.merge === 'fold') {
    const bindings = { ...parts, ...query, out, gate, done: counters(gpu, heads) };
    (append ? FOLD_APPEND : FOLD).dispatch(gpu, { bindings, uniforms, overrides, workgroups: [nChunks, heads] });
  } else {
    (append ? SPLIT_APPEND : SPLIT).dispatch(gpu,
      { bindings: { ...parts, ...query }, uniforms, overrides, workgroups: [nChunks, heads] });
    MERGE.dispatch(gpu,
      { bindings: { part_o: partO, part_ml: partMl, out, gate }, uniforms, overrides, workgroups: heads });
  }
  partO.dispose();
  partMl.dispose();
}
