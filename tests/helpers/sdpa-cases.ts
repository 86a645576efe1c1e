// The sdpa tests' shared cases (sdpa.test.ts, sdpa-one.test.ts): a case's tensors on the device, its mask, and the
// float64 reference it is checked against.
import { gateLogits, randn } from '../../testkit/helpers/seeded.ts';
import { expectBitExact } from './quant-check.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { roundBf16 } from '../../src/tensor/dtype.ts';
import { sdpa, type SdpaOptions } from '../../src/kernels/attention/sdpa.ts';
import { sdpaRef, type MaskRef } from '../../src/kernels/attention/sdpa.ref.ts';
import type { AttnMask, FullKV } from '../../src/kernels/attention/types.ts';

export const PATHS = ['prefill', 'decode', 'matmul'] as const;

export function full(gpu: Gpu, values: Float32Array, shape: number[], dtype: 'f32' | 'bf16', label: string): FullKV {
  return { kind: 'full', data: Tensor.from(gpu, values, shape, dtype, label) };
}

/** The device mask for a host mask. */
export function deviceMask(gpu: Gpu, m: MaskRef, seq: number, kvLen: number): AttnMask {
  if (m.kind === 'prefix') return { kind: 'prefix',
    tokenTypes: Tensor.from(gpu, Uint32Array.from(m.tokenTypes), [m.tokenTypes.length], 'u32', 'tt') };
  if (m.kind === 'explicit') return { kind: 'explicit',
    mask: Tensor.from(gpu, Uint32Array.from(m.mask), [seq, kvLen], 'u32', 'mask') };
  return m;
}

/** [1, H, L, D] (MLX layout) -> [L, H*D] (sdpa's output layout). */
export function toRows(x: ArrayLike<number>, H: number, L: number, D: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let h = 0; h < H; h++) for (let l = 0; l < L; l++) for (let d = 0; d < D; d++) out[(l * H + h) * D +
    d] = x[(h * L + l) * D + d];
  return out;
}

export interface Case {
  heads: number; seq: number; dim: number; cap: number; kvLen: number; offset: number; mask: MaskRef; seed: number;
  qScale?: number;
}

/**
 * Runs sdpa on random data for one case and returns the output with its f64 reference. kv: 'f32' cache of f32 values,
 * 'bf16' packed cache, 'bf16-values' f32 cache holding the same bf16 values.
 */
export async function run(gpu: Gpu, c: Case, extra: Partial<SdpaOptions> = {},
  kv: 'f32' | 'bf16' | 'bf16-values' = 'f32'): Promise<{ got: Float32Array; ref: Float64Array }> {
  const { heads: H, seq: S, dim: D, cap } = c;
  const q = randn(c.seed, H * S * D, c.qScale ?? 2);
  let k = randn(c.seed + 1, H * cap * D), v = randn(c.seed + 2, H * cap * D);
  if (kv !== 'f32') { k = k.map(roundBf16); v = v.map(roundBf16); }
  const kvDtype = kv === 'bf16' ? 'bf16' : 'f32';
  // Positions past kvLen are never read: NaN there would show in the output if they were.
  for (let h = 0; h < H; h++) { k.fill(NaN, (h * cap + c.kvLen) * D, (h + 1) * cap * D); v.fill(NaN,
    (h * cap + c.kvLen) * D, (h + 1) * cap * D); }
  const scale = 1 / Math.sqrt(D);
  const qt = Tensor.from(gpu, q, [H, S, D], 'f32', 'q'), kt = full(gpu, k, [H, cap, D], kvDtype, 'k'), vt = full(gpu,
    v, [H, cap, D], kvDtype, 'v');
  const o: SdpaOptions = { kvLen: c.kvLen, offset: c.offset, mask: deviceMask(gpu, c.mask, S, c.kvLen), scale,
    ...extra };
  const got = await sdpa(qt, kt, vt, o).read() as Float32Array;
  // Path 'one' runs both forms of its merge: folded into the split (the default) and as a dispatch of its own.
  if (o.path === 'one' && !o.merge) expectBitExact(got, await sdpa(qt, kt, vt, { ...o, merge: 'separate' }).read(),
    `kvLen ${c.kvLen}: folded vs separate merge`);
  return { got,
    ref: sdpaRef(q, k, v, { heads: H, seq: S, dim: D, cap, kvLen: c.kvLen, offset: c.offset, mask: c.mask, scale }) };
}

// f32 vs f64: scores are D-term f32 dot products (error ~ D * 2^-24 * |q||k| ~ 1e-6 here), softmax weights and the
// weighted sum of |v| <= 1 add a few 2^-24 relative: outputs (|out| <= 1) within 4e-6 absolute.
export const F32_TOL = 4e-6;

/** The gqkv rows a fused gate reads its logits from ([S, 4 * width], seeded). */
export const gateSource = (gpu: Gpu, S: number, width: number, seed: number) => Tensor.from(gpu,
  gateLogits(seed, S * 4 * width), [S, 4 * width], 'f32', 'gqkv');
