// Model-side helpers between the fused gqkv projection and attention: RoPE'd queries and keys as head-major
// tensors, writes of new keys/values into a full-precision cache slot (f32 or packed bf16), and ropeAppend, which
// does a step's queries and cache writes (full or quantized sides) in one dispatch.
import { Kernel, grid } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../errors.ts';
import { checkIndex } from '../common/args.ts';
import { checkRopeArgs } from '../rope/rope.ts';
import { roundCode, type Round } from '../common/codes.ts';
import { placeholder } from '../common/placeholder.ts';
import { checkQuantKV } from './kvquant.ts';
import type { FullKV, KVSide, QuantKV } from './types.ts';

const HEADS_F32 = new Kernel('attention/kvcache.wgsl', 'heads_f32');
const HEADS_BF16 = new Kernel('attention/kvcache.wgsl', 'heads_bf16');
const ROPE_APPEND = new Kernel('attention/rope_append.wgsl', 'rope_append');

/** Which column block of gqkv [S, 4*H*D] holds what. */
const BLOCK = { gate: 0, q: 1, k: 2, v: 3 } as const;

export interface HeadsOptions {
  heads: number;
  headDim: number;
  /** RoPE base (theta). */
  base: number;
  /** Absolute position of the first of the S rows (the cache offset). */
  offset: number;
  round?: Round;
}

/** Where element (s, h, d) of a source lives: src[s * sStride + col0 + h * hStride + d]. */
export interface Layout { seq: number; heads: number; dim: number; sStride: number; hStride: number; col0: number }

/** q[h, s, :] = RoPE(gqkv[s, q block, head h], position offset + s); f32 [H, S, D], rounded once per `round`. */
export function ropeQ(gqkv: Tensor, opts: HeadsOptions): Tensor {
  return headsOf('ropeQ', gqkv, BLOCK.q, true, opts);
}

/** k[h, s, :] = RoPE(gqkv[s, k block, head h], position offset + s); f32 [H, S, D] (the quantized cache's input). */
export function ropeK(gqkv: Tensor, opts: HeadsOptions): Tensor {
  return headsOf('ropeK', gqkv, BLOCK.k, true, opts);
}

/** v[h, s, :] = gqkv[s, v block, head h]; f32 [H, S, D] (the quantized cache's input). */
export function takeV(gqkv: Tensor, opts: HeadsOptions): Tensor {
  return headsOf('takeV', gqkv, BLOCK.v, false, opts);
}

/**
 * cache[h, offset + s, :] = RoPE(k block) into `k` and the raw v block into `v`, for the S rows of gqkv. A bf16 cache
 * stores the bf16 rounding; an f32 cache stores f32 values rounded per `round` (bf16 mode keeps bf16 values).
 * The composed form ropeAppend is tested against (the model appends through ropeAppend, or appendAttendOne /
 * qsdpaOneAppend when decoding into a full-precision / quantized cache).
 */
export function appendKV(gqkv: Tensor, k: FullKV, v: FullKV, opts: HeadsOptions): void {
  const layout = checkFullAppend('appendKV', gqkv, k, v, opts);
  writeHeads('appendKV', gqkv, { ...layout, col0: BLOCK.k * layout.heads * layout.dim }, k.data, opts.offset,
    true, opts);
  writeHeads('appendKV', gqkv, { ...layout, col0: BLOCK.v * layout.heads * layout.dim }, v.data, opts.offset,
    false, opts);
}

/** Both sides of one cache slot. */
export interface KVSlot { k: KVSide; v: KVSide }

/**
 * One step's RoPE and cache append in one dispatch: returns ropeQ(gqkv, opts) and writes positions
 * offset..offset+S-1 of both sides exactly as the composed ops would, bit for bit: appendKV for full sides (f32 or
 * packed bf16), ropeK / takeV (rounded per `round`) then appendQuantized (Metal rules, scales/biases rounded per
 * `round`) for quantized sides; any mix of the two. Only the uniform `offset` changes from step to step.
 */
export function ropeAppend(gqkv: Tensor, slot: KVSlot, opts: HeadsOptions): Tensor {
  const op = 'ropeAppend';
  const l = gqkvLayout(op, gqkv, opts);
  const k = appendSide(op, 'k', slot.k, l, opts);
  const v = appendSide(op, 'v', slot.v, l, opts);
  const gpu = gqkv.gpu;
  const q = Tensor.empty(gpu, [l.heads, l.seq, l.dim], 'f32', `${op}.q`);
  const n = l.heads * l.seq * l.dim;
  const groups = (side: AppendSide) => (side.bits ? n / 64 : 0);
  // Distinct stand-ins for a full side's scales/biases: writable bindings of one dispatch must not alias.
  const none = (name: string) => placeholder(gpu, `ropeAppend.no_${name}`, 'f32');
  // Workgroups of 64: pairs of elements first, then one per quantized group.
  const workgroups = Math.ceil(n / 2 / 64) + groups(k) + groups(v);
  ROPE_APPEND.dispatch(gpu, {
    bindings: {
      src: gqkv, q_out: q,
      kd: k.data, ks: k.scales ?? none('ks'), kb: k.biases ?? none('kb'),
      vd: v.data, vs: v.scales ?? none('vs'), vb: v.biases ?? none('vb'),
    },
    uniforms: {
      n_pairs: n / 2, k_groups: groups(k), v_groups: groups(v), seq: l.seq, hd: l.dim, width: l.heads * l.dim,
      k_cap: k.cap, v_cap: v.cap, offset: opts.offset, log2_base: Math.log2(opts.base),
    },
    overrides: {
      ROUND: roundCode('kvcache', opts.round), KM: k.mode, VM: v.mode,
      ...(k.bits ? { K_BITS: k.bits } : {}), ...(v.bits ? { V_BITS: v.bits } : {}),
    },
    workgroups: grid(gpu, workgroups * 64, 64),
  });
  return q;
}

/** Checks an append of gqkv's rows into two full-precision sides (as appendKV does); returns gqkv's layout. */
export function checkFullAppend(op: string, gqkv: Tensor, k: FullKV, v: FullKV, opts: HeadsOptions): Layout {
  const l = gqkvLayout(op, gqkv, opts);
  checkCache(op, 'k', k, l, opts.offset, opts.round);
  checkCache(op, 'v', v, l, opts.offset, opts.round);
  return l;
}

/** Checks an append of gqkv's rows into two quantized sides (as ropeAppend does); returns gqkv's layout. */
export function checkQuantAppend(op: string, gqkv: Tensor, k: QuantKV, v: QuantKV, opts: HeadsOptions): Layout {
  const l = gqkvLayout(op, gqkv, opts);
  appendSide(op, 'k', k, l, opts);
  appendSide(op, 'v', v, l, opts);
  return l;
}

/** A cache side as rope_append.wgsl binds it: mode 0 f32, 1 packed bf16, 2 quantized (bits > 0). */
interface AppendSide { mode: number; data: Tensor; scales?: Tensor; biases?: Tensor; bits: number; cap: number }

function appendSide(op: string, name: 'k' | 'v', side: KVSide, l: Layout, o: HeadsOptions): AppendSide {
  if (side.kind === 'full') {
    checkCache(op, name, side, l, o.offset, o.round);
    return { mode: side.data.dtype === 'bf16' ? 1 : 0, data: side.data, bits: 0, cap: side.data.shape[1] };
  }
  if (side.kind !== 'quant') throw new ShapeError(op,
    `${name} cache side is '${(side as { kind: string }).kind}'; expected 'full' or 'quant'`);
  const cap = checkQuantKV(op, side, l.heads, l.dim);
  if (o.offset + l.seq > cap) {
    throw new ShapeError(op,
      `writing positions ${o.offset}..${o.offset + l.seq} overflows quantized ${name} cache ` +
      `'${side.q.label}' [${side.q.shape.join(', ')}]`);
  }
  return { mode: 2, data: side.q, scales: side.scales, biases: side.biases, bits: side.bits, cap };
}

/** cache[h, offset + s, :] = src[h, s, :] for src f32 [H, S, D] (stored as bf16 rounding in a bf16 cache). */
export function writeFull(src: Tensor, dst: FullKV,
  { offset, round = 'none' }: { offset: number; round?: Round }): void {
  const op = 'writeFull';
  if (src.dtype !== 'f32') throw new DTypeError(op, `src '${src.label}' is ${src.dtype}; expected f32`);
  if (src.rank !== 3) throw new ShapeError(op,
    `src '${src.label}' is [${src.shape.join(', ')}]; expected [heads, S, headDim]`);
  const [heads, seq, dim] = src.shape;
  const layout: Layout = { seq, heads, dim, sStride: dim, hStride: seq * dim, col0: 0 };
  checkIndex(op, 'offset', offset);
  checkCache(op, 'dst', dst, layout, offset, round);
  writeHeads(op, src, layout, dst.data, offset, false, { heads, headDim: dim, base: 2, offset, round });
}

function headsOf(op: string, gqkv: Tensor, block: number, rope: boolean, opts: HeadsOptions): Tensor {
  const layout = gqkvLayout(op, gqkv, opts);
  const out = Tensor.empty(gqkv.gpu, [layout.heads, layout.seq, layout.dim], 'f32', `${op}.out`);
  writeHeads(op, gqkv, { ...layout, col0: block * layout.heads * layout.dim }, out, 0, rope, opts);
  return out;
}

function gqkvLayout(op: string, gqkv: Tensor, { heads, headDim, base, offset }: HeadsOptions): Layout {
  if (gqkv.dtype !== 'f32') throw new DTypeError(op, `gqkv '${gqkv.label}' is ${gqkv.dtype}; expected f32`);
  if (!(Number.isInteger(heads) && heads > 0 && Number.isInteger(headDim) && headDim > 0 && headDim % 2 === 0)) {
    throw new InputError(op, `heads ${heads} and headDim ${headDim} must be positive integers, headDim even`);
  }
  if (gqkv.rank !== 2 || gqkv.shape[1] !== 4 * heads * headDim) {
    throw new ShapeError(op,
      `gqkv '${gqkv.label}' is [${gqkv.shape.join(', ')}]; expected [S, ${4 * heads * headDim}] ` +
      `(4 * ${heads} heads * ${headDim})`);
  }
  checkRopeArgs(op, base, 1, offset, offset + gqkv.shape[0]);
  return { seq: gqkv.shape[0], heads, dim: headDim, sStride: 4 * heads * headDim, hStride: headDim, col0: 0 };
}

function checkCache(op: string, name: string, side: FullKV, l: Layout, offset: number, round: Round | undefined): void {
  const t = side.data;
  if (t.dtype !== 'f32' && t.dtype !== 'bf16') throw new DTypeError(op,
    `${name} cache '${t.label}' is ${t.dtype}; expected f32 or bf16`);
  if (t.rank !== 3 || t.shape[0] !== l.heads || t.shape[2] !== l.dim) {
    throw new ShapeError(op,
      `${name} cache '${t.label}' is [${t.shape.join(', ')}]; expected [${l.heads}, capacity, ${l.dim}]`);
  }
  if (offset + l.seq > t.shape[1]) {
    throw new ShapeError(op,
      `writing positions ${offset}..${offset + l.seq} overflows ${name} cache '${t.label}' [${t.shape.join(', ')}]`);
  }
  // Packed words hold two values of one position only when D is even.
  if (t.dtype === 'bf16' && l.dim % 2 !== 0) throw new ShapeError(op,
    `a bf16 ${name} cache needs an even headDim, got ${l.dim}`);
  if (t.dtype === 'bf16' && round === 'f16') throw new DTypeError(op,
    `round 'f16' with a bf16 ${name} cache would round twice`);
}

function writeHeads(op: string, src: Tensor, l: Layout, dst: Tensor, pos0: number, rope: boolean,
  o: HeadsOptions): void {
  const bf16 = dst.dtype === 'bf16';
  const n = l.heads * l.seq * l.dim;
  (bf16 ? HEADS_BF16 : HEADS_F32).dispatch(src.gpu, {
    label: `${op}.${bf16 ? 'heads_bf16' : 'heads_f32'}`,
    bindings: { src, dst },
    uniforms: {
      n, seq: l.seq, hd: l.dim, col0: l.col0, s_stride: l.sStride, h_stride: l.hStride, cap: dst.shape[1], pos0,
      rope_off: o.offset, scale: 1, log2_base: Math.log2(o.base),
    },
    overrides: { ROPE: rope ? 1 : 0, ...(bf16 ? {} : { ROUND: roundCode('kvcache', o.round) }) },
    workgroups: grid(src.gpu, bf16 ? n / 2 : n, 64),
  });
}
