// A TurboQuant cache side (format.ts): allocation, the appends that code new positions into it (turbo_append from
// [H, S, D] rows; turbo_rope_append from gqkv rows into two turbo sides at once) and the decoded view attention reads
// (turbo_dequant: the original domain, so any attention kernel takes it).
import { Kernel, grid } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { DTypeError, ShapeError } from '../../errors.ts';
import { roundCode, type Round } from '../common/codes.ts';
import { placeholder } from '../common/placeholder.ts';
import { decodeSpan } from '../plan/reach.ts';
import type { FullKV, TurboKV } from '../attention/types.ts';
import type { HeadsOptions } from '../attention/kvcache.ts';
import { TURBO_BITS, TURBO_GROUP, checkTurboHeadDim, turboBlockWords, turboPadded, type TurboType } from './format.ts';

const APPEND = new Kernel('turbo/turbo.wgsl', 'turbo_append');
const ROPE_APPEND = new Kernel('turbo/turbo_rope.wgsl', 'turbo_rope_append');
const DEQUANT = new Kernel('turbo/turbo.wgsl', 'turbo_dequant');

export interface TurboKVOptions { heads: number; capacity: number; headDim: number; type: TurboType; label?: string }

/** An empty turbo cache side: codes u32 [heads, capacity, groups * words], a block a 128-value group of a head. */
export function turboKV(gpu: Gpu, o: TurboKVOptions): TurboKV {
  checkTurboHeadDim('turboKV', o.headDim);
  const words = (turboPadded(o.headDim) / TURBO_GROUP) * turboBlockWords(o.type);
  const codes = Tensor.empty(gpu, [o.heads, o.capacity, words], 'u32', `${o.label ?? 'turboKV'}.codes`);
  return { kind: 'turbo', type: o.type, headDim: o.headDim, codes };
}

function geometry(side: TurboKV): { heads: number; cap: number; groups: number } {
  const [heads, cap] = side.codes.shape;
  return { heads, cap, groups: turboPadded(side.headDim) / TURBO_GROUP };
}

function overrides(side: TurboKV): Record<string, number> {
  return { TYPE: TURBO_BITS[side.type] };
}

/** cache[h, offset + s] = the fork's blocks of src[h, s, :] for src f32 [H, S, headDim]. */
export function appendTurbo(src: Tensor, side: TurboKV, { offset }: { offset: number }): void {
  const op = 'appendTurbo';
  if (src.dtype !== 'f32') throw new DTypeError(op, `src '${src.label}' is ${src.dtype}; expected f32`);
  const { heads, cap, groups } = geometry(side);
  if (src.rank !== 3 || src.shape[0] !== heads || src.shape[2] !== side.headDim) {
    const want = `[${heads}, S, ${side.headDim}]`;
    throw new ShapeError(op, `src '${src.label}' is [${src.shape.join(', ')}]; expected ${want}`);
  }
  const seq = src.shape[1];
  if (!(Number.isInteger(offset) && offset >= 0 && offset + seq <= cap)) {
    throw new ShapeError(op, `positions ${offset}..${offset + seq} do not fit the cache capacity ${cap}`);
  }
  if (seq === 0) return;
  APPEND.dispatch(src.gpu, {
    bindings: { src, codes: side.codes },
    uniforms: { heads, span: seq, cap, offset, dim: side.headDim, groups, len: 0 },
    overrides: overrides(side),
    workgroups: grid(src.gpu, heads * seq * groups, 1),
  });
}

/**
 * The S new rows of gqkv [S, 4 * H * D] into two turbo sides in one dispatch: K RoPE'd at positions offset + s,
 * both rounded per `round` (the activation dtype), then coded; equals ropeK / takeV then appendTurbo, bit for bit.
 */
export function turboRopeAppend(gqkv: Tensor, k: TurboKV, v: TurboKV, o: HeadsOptions): void {
  const op = 'turboRopeAppend';
  const { heads, headDim: dim, offset } = o;
  if (gqkv.dtype !== 'f32') throw new DTypeError(op, `gqkv '${gqkv.label}' is ${gqkv.dtype}; expected f32`);
  if (gqkv.rank !== 2 || gqkv.shape[1] !== 4 * heads * dim) {
    throw new ShapeError(op, `gqkv '${gqkv.label}' is [${gqkv.shape.join(', ')}]; expected [S, ${4 * heads * dim}]`);
  }
  const seq = gqkv.shape[0];
  const [kg, vg] = [geometry(k), geometry(v)];
  for (const [name, side, g] of [['k', k, kg], ['v', v, vg]] as const) {
    const fits = Number.isInteger(offset) && offset >= 0 && offset + seq <= g.cap;
    if (g.heads !== heads || side.headDim !== dim || !fits) {
      const shape = side.codes.shape.join(', ');
      throw new ShapeError(op, `${name} cache '${side.codes.label}' [${shape}] does not hold positions `
        + `${offset}..${offset + seq} of ${heads} heads of ${dim}`);
    }
  }
  if (seq === 0) return;
  ROPE_APPEND.dispatch(gqkv.gpu, {
    bindings: { src: gqkv, kc: k.codes, vc: v.codes },
    uniforms: { heads, seq, width: heads * dim, dim, groups: kg.groups, k_cap: kg.cap, v_cap: vg.cap, offset,
      log2_base: Math.log2(o.base) },
    overrides: { K_TYPE: TURBO_BITS[k.type], V_TYPE: TURBO_BITS[v.type], ROUND: roundCode(op, o.round) },
    workgroups: grid(gqkv.gpu, 2 * heads * seq * kg.groups, 1),
  });
}

/**
 * The side decoded ([heads, capacity, headDim] f32, rounded per `round`) for its first `len` positions; the rest
 * is left unwritten (attention reads no key past its kvLen). The grid spans `len` positions, or `reach` when given:
 * a captured decode step replays at every position of its reach (plan/reach.ts), so its dispatches must not follow
 * len. The tensor keeps the capacity, so attention reads it as it reads a full side of the cache (one path, one
 * sum order, beside a full side of that capacity). The caller disposes `data`.
 */
export function dequantizeTurbo(side: TurboKV, o: DecodeOptions): FullKV {
  return decode(side, null, o)[0];
}

/** Two turbo sides of one capacity decoded in one dispatch, as dequantizeTurbo decodes each. */
export function dequantizeTurboPair(k: TurboKV, v: TurboKV, o: DecodeOptions): [FullKV, FullKV] {
  const [a, b] = decode(k, v, o);
  return [a, b!];
}

type DecodeOptions = { len: number; round?: Round; reach?: number };

function decode(k: TurboKV, v: TurboKV | null, o: DecodeOptions): [FullKV, FullKV | null] {
  const { len, round = 'none' } = o;
  const op = v ? 'dequantizeTurboPair' : 'dequantizeTurbo';
  const { heads, cap, groups } = geometry(k);
  const span = decodeSpan(op, len, cap, o.reach);
  if (v && (v.headDim !== k.headDim || v.codes.shape[0] !== heads || v.codes.shape[1] !== cap)) {
    const [ks, vs] = [k.codes.shape.join(', '), v.codes.shape.join(', ')];
    throw new ShapeError(op, `V cache '${v.codes.label}' [${vs}] is not shaped as K's [${ks}]`);
  }
  const gpu = k.codes.gpu;
  const empty = (label: string) => Tensor.empty(gpu, [heads, cap, k.headDim], 'f32', label);
  const out = empty(`${op}.k`);
  const vout = v ? empty(`${op}.v`) : null;
  if (span === 0) return [{ kind: 'full', data: out }, vout && { kind: 'full', data: vout }];
  DEQUANT.dispatch(gpu, {
    bindings: {
      codes: k.codes, out,
      vcodes: v?.codes ?? placeholder(gpu, 'turbo.no_vcodes', 'u32'),
      vout: vout ?? placeholder(gpu, 'turbo.no_vout', 'f32'),
    },
    uniforms: { heads, span, cap, offset: 0, dim: k.headDim, groups, len },
    overrides: { TYPE: TURBO_BITS[k.type], V_TYPE: TURBO_BITS[(v ?? k).type], PAIR: v ? 1 : 0,
      ROUND: roundCode(op, round) },
    workgroups: grid(gpu, (v ? 2 : 1) * heads * span * groups, 1),
  });
  return [{ kind: 'full', data: out }, vout && { kind: 'full', data: vout }];
}
