// Decode attention that reads two TurboQuant sides itself (turbo_one.wgsl): the step's key and value coded into
// the cache and the query's attention over every cached position, in one dispatch. The general path (turboRopeAppend,
// ropeQ, dequantizeTurboPair, sdpa) is its reference and the fallback for every other step (kernels/
// policy_attention.ts, planStep).
import { Kernel, padTo } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../errors.ts';
import { roundCode } from '../common/codes.ts';
import { counters } from '../common/counters.ts';
import { reachFor } from '../plan/reach.ts';
import type { TurboKV } from '../attention/types.ts';
import type { HeadsOptions } from '../attention/kvcache.ts';
import { TURBO_BITS, TURBO_GROUP, turboPadded } from './format.ts';

const ONE = new Kernel('turbo/turbo_one.wgsl', 'turbo_one');
/** Keys a workgroup takes (the shader's CK). */
const CHUNK = 32;
/** A head's chunk results start a multiple of this many slots apart (256 bytes of (m, l), as sdpa_one's). */
const SLOT_ALIGN = 32;

/** Head dims turbo_one takes: one or two 128-value groups a head (its workgroup memory holds a chunk's blocks). */
export function turboOneFits(headDim: number): boolean {
  return turboPadded(headDim) <= 2 * TURBO_GROUP;
}

/**
 * Position `offset` of gqkv [1, 4*H*D] appended into the turbo sides k and v (RoPE'd key, value: bit for bit
 * turboRopeAppend) and its RoPE'd query's attention over the offset + 1 cached positions, gated by gqkv's gate
 * block: [1, H*D]. Equals turboRopeAppend, ropeQ, dequantizeTurboPair and sdpa up to float order (the scores are
 * taken from the codes with the query rotated, the values summed in the rotated domain). Null when the sides do not
 * suit it (the caller composes). The chunks cover the keys' reach (plan/reach.ts; `reach` fixed over a captured
 * step's positions, else from the keys); chunks past them return at once and the merge's order depends on the keys
 * alone (`slots` only places each head's results), so every reach gives the same bits.
 */
export function turboAppendAttend(
  gqkv: Tensor, k: TurboKV, v: TurboKV, o: HeadsOptions & { scale: number; reach?: number },
): Tensor | null {
  const op = 'turboAppendAttend';
  const { heads, headDim: dim, offset } = o;
  if (gqkv.dtype !== 'f32') throw new DTypeError(op, `gqkv '${gqkv.label}' is ${gqkv.dtype}; expected f32`);
  if (gqkv.rank !== 2 || gqkv.shape[1] !== 4 * heads * dim) {
    throw new ShapeError(op, `gqkv '${gqkv.label}' is [${gqkv.shape.join(', ')}]; expected [S, ${4 * heads * dim}]`);
  }
  if (!Number.isFinite(o.scale)) throw new InputError(op, `scale ${o.scale} must be finite`);
  const [kh, cap] = k.codes.shape;
  const [vh, vcap] = v.codes.shape;
  if (gqkv.shape[0] !== 1 || !turboOneFits(dim) || vcap !== cap) return null;
  if (kh !== heads || vh !== heads || k.headDim !== dim || v.headDim !== dim || !(offset >= 0 && offset < cap)) {
    throw new ShapeError(op, `caches '${k.codes.label}' [${k.codes.shape.join(', ')}] and '${v.codes.label}' do not `
      + `hold position ${offset} of ${heads} heads of ${dim}`);
  }
  const gpu = gqkv.gpu;
  const groups = turboPadded(dim) / TURBO_GROUP;
  const nChunks = Math.ceil(reachFor('turbo_one', offset + 1, cap, o.reach) / CHUNK);
  const slots = padTo(nChunks, SLOT_ALIGN);
  const partO = Tensor.empty(gpu, [heads, slots, groups * TURBO_GROUP], 'f32', 'turbo_one.part_o');
  const partMl = Tensor.empty(gpu, [heads, slots, 2], 'f32', 'turbo_one.part_ml');
  const out = Tensor.empty(gpu, [1, heads * dim], 'f32', 'turbo_one.out');
  ONE.dispatch(gpu, {
    bindings: { src: gqkv, gate: gqkv, kc: k.codes, vc: v.codes, part_o: partO, part_ml: partMl, out,
      done: counters(gpu, heads) },
    uniforms: { kv_len: offset + 1, cap, dim, groups, slots, width: heads * dim, log2_base: Math.log2(o.base),
      scale: o.scale, gate_stride: gqkv.shape[1] },
    overrides: { K_TYPE: TURBO_BITS[k.type], V_TYPE: TURBO_BITS[v.type], ROUND: roundCode(op, o.round ?? 'none'),
      GATE: 1 },
    workgroups: [nChunks, heads],
  });
  // Recorded dispatches keep reading them in order; the pool may hand them out again.
  partO.dispose();
  partMl.dispose();
  return out;
}
