// The matmul tests' shared cases and checks (matmul.test.ts, matmul-fusions.test.ts, gemv.test.ts): weight dtypes and
// paths, seeded operands, the f32 dot-product error bound, and the fusions' modes and shapes.
import { expect } from 'vitest';
import { randn } from '../../testkit/helpers/seeded.ts';
import { ulpStats } from '../../testkit/helpers/half-ulp.ts';
import { sweep } from './sweep.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { roundBf16, roundF16 } from '../../src/tensor/dtype.ts';
import { matmul, type MatmulOptions } from '../../src/kernels/matmul/matmul.ts';
import { matmulAbsRef, matmulFusedRef, matmulRef } from '../../src/kernels/matmul/matmul.ref.ts';
import { rmsNormRef } from '../../src/kernels/rmsnorm/rmsnorm.ref.ts';
import { sigmoidRef } from '../../src/kernels/ops/ops.ref.ts';
import type { Round } from '../../src/kernels/common/codes.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';

export type WDType = 'f32' | 'bf16' | 'f16';
export const PATHS = ['gemv', 'tiled', 'rows'] as const;
export const DTYPES = ['f32', 'bf16', 'f16'] as const;
export const U = 2 ** -24; // f32 unit roundoff

/** Values as stored in `dtype` (what the GPU multiplies). */
export function asDtype(dtype: WDType, v: Float32Array): Float32Array {
  return dtype === 'bf16' ? v.map(roundBf16) : dtype === 'f16' ? v.map(roundF16) : v;
}

/**
 * |got - want| <= bound: an f32 dot product of K terms summed in any order is within gamma_K = K*u of the exact
 * value times sum |x w| (Higham, Accuracy and Stability, 3.1); `factor` 2 when both sides are f32 (MLX vs ours).
 */
export function expectDotBound(got: ArrayLike<number>, want: ArrayLike<number>, abs: ArrayLike<number>, K: number,
  factor: number, what: string): void {
  for (let i = 0; i < want.length; i++) {
    const bound = factor * (K + 1) * U * abs[i] + 1e-30;
    if (!(Math.abs(got[i] - want[i]) <= bound)) {
      throw new Error(`${what}: first mismatch at ${i}: got ${got[i]}, want ${want[i]} ` +
        `(|diff| ${Math.abs(got[i] - want[i])} > ${bound})`);
    }
  }
}

export async function upload(gpu: Gpu, M: number, N: number, K: number, dtype: WDType, seed: number, wScale = 1) {
  const xv = randn(seed, M * K), wv = asDtype(dtype, randn(seed + 1, N * K, wScale));
  return { xv, wv, x: Tensor.from(gpu, xv, [M, K], 'f32', 'x'), w: Tensor.from(gpu, wv, [N, K], dtype, 'w') };
}


// ---- Fusions: norm (rmsNorm prologue), swiglu (gate/up pairs), accumulate (residual epilogue) ----

export const EPS = 1e-6; // HRM's rms_norm_eps
// Weight dtype with the output rounding a model in that dtype uses.
export const MODES = [['f32', 'none'], ['bf16', 'bf16'], ['f16', 'f16']] as const;
// Every kernel: on 'gemv' K % 8 == 0 takes gemv_vec4 and odd K gemv_word, on 'rows' gemv_rows4 / gemv_rows; M = 6
// is two gemv blocks of MB = 4 (the second with two rows). N is even for swiglu, with I = N / 2 odd.
// Each M is a gemv block size (MB) of its own, a pipeline each: the CPU driver takes an odd K (gemv_word, rows)
// and the two blocks (gemv_vec4, rows4).
export const FUSED_SHAPES = sweep<[number, number, number]>([[1, 262, 264], [3, 262, 257], [6, 198, 96], [2, 202, 33]],
  (_, i) => i === 1 || i === 2);

export async function uploadFused(gpu: Gpu, M: number, N: number, K: number, dtype: WDType, round: Round, seed: number,
  wScale = 1) {
  const base = await upload(gpu, M, N, K, dtype, seed, wScale);
  // x well away from unit RMS, so a missing norm shows; a residual holding values of the activation dtype.
  const xv = base.xv.map((v) => 3 * v);
  const accv = asRound(round, randn(seed + 2, M * N, 2));
  return { ...base, xv, x: Tensor.from(gpu, xv, [M, K], 'f32', 'x'), accv };
}

export function asRound(round: Round, v: Float32Array): Float32Array {
  return round === 'none' ? v : asDtype(round, v);
}

/** |got - want| <= rel * scale (per element); names the first element outside. */
export function expectRel(got: ArrayLike<number>, want: ArrayLike<number>, scale: ArrayLike<number>, rel: number,
  what: string): void {
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= rel * scale[i] + 1e-30)) {
      throw new Error(`${what}: first mismatch at ${i}: got ${got[i]}, want ${want[i]} ` +
        `(|diff| ${d} > ${rel} * ${scale[i]})`);
    }
  }
}

/**
 * Scale of an f32 swiglu output's error: g and u each off by up to `eg` and `eu` (f32 sums), silu'(g) is at most
 * 1.1 in magnitude, sigmoid's exp within (3 + 2|g|) ulp (WGSL) and four roundings of the products.
 */
export function swigluTol(g: number, u: number, eg: number, eu: number): number {
  const silu = g * sigmoidRef(g);
  return 1.1 * Math.abs(u) * eg + Math.abs(silu) * eu + (8 + 2 * Math.abs(g)) * U * Math.abs(g * u) + 1e-30;
}

export const FUSIONS = ['accumulate', 'swiglu', 'norm', 'norm + swiglu'] as const;
export type Fusion = (typeof FUSIONS)[number];

/**
 * The mode (index in MODES) the CPU driver runs `fusion` in on path PATHS[p]: each fusion on each path once and each
 * mode on each path. Every fusion test takes the same mode for a (fusion, path), so they share its pipelines (a
 * gemv pipeline is seconds of LLVM under a cold cache); norm + swiglu takes norm's mode, as over row chunks it is
 * the norm kernel's. HRM_EXHAUSTIVE=1 runs every mode.
 */
export function quickMode(fusion: Fusion, p: number): number {
  return (Math.min(FUSIONS.indexOf(fusion), 2) + p) % 3;
}

export interface FusedCase { name: string; norm: boolean; swiglu: boolean; acc: boolean }
export const FUSED_CASES: Array<FusedCase & { name: Fusion }> = [
  { name: 'norm', norm: true, swiglu: false, acc: false },
  { name: 'swiglu', norm: false, swiglu: true, acc: false },
  { name: 'accumulate', norm: false, swiglu: false, acc: true },
  { name: 'norm + swiglu', norm: true, swiglu: true, acc: false },
];

/**
 * matmul(x, w, fusions of `c`, `opts`) against matmulFusedRef: f32 within fusedTol, bf16 / f16 within 1 ulp (2
 * with swiglu). Adds the rounded outputs and how many of them equal the reference's to `tally`.
 */
export async function expectFusedRef(gpu: Gpu, c: FusedCase, w: Tensor | Tensor[],
  u: Awaited<ReturnType<typeof uploadFused>>, shape: [number, number,
  number], round: Round, opts: MatmulOptions, tally: { total: number; same: number }): Promise<void> {
  const [M, N, K] = shape;
  const accumulate = c.acc ? Tensor.from(gpu, u.accv, [M, N], 'f32', 'acc') : undefined;
  const got = await matmul(u.x, w,
    { ...opts, round, norm: c.norm ? { eps: EPS } : undefined, swiglu: c.swiglu, accumulate }).read();
  const want = matmulFusedRef(u.xv, u.wv, M, N, K,
    { round, norm: c.norm ? EPS : undefined, swiglu: c.swiglu, accumulate: c.acc ? u.accv : undefined });
  const what = `${c.name} ${round} ${M}x${N}x${K} ${JSON.stringify(opts)}`;
  if (round === 'none') {
    expectRel(got, want, fusedTol(u.xv, u.wv, M, N, K, c.norm, c.swiglu, c.acc ? want : null), 1, what);
    return;
  }
  // Only the f32 sums differ from the exact ones: a rounding flips near a midpoint, by one ulp, which the three
  // roundings of siluMul can stretch to two.
  const s = ulpStats(round, got, want);
  expect(s.worst, `${what} ${JSON.stringify(s)}`).toBeLessThanOrEqual(c.swiglu ? 2 : 1);
  tally.total += want.length;
  tally.same += Math.round(s.exact * want.length);
}

/**
 * Error bound of a fused f32 result: each sum within (K + 1) u sum |xn w| of the exact one (Higham 3.1); with norm
 * xn itself within (K / 2 + 9) u relative (the sum of squares' error halved by the square root, the division,
 * eps, inverseSqrt's 2 ulp and the product); swiglu through swigluTol; with `sum` (the result of a residual add)
 * one more rounding of it.
 */
export function fusedTol(xv: Float32Array, wv: Float32Array, M: number, N: number, K: number, norm: boolean,
  swiglu: boolean, sum: ArrayLike<number> | null): Float64Array {
  const xn = norm ? rmsNormRef(xv, K, EPS) : xv;
  const y = matmulRef(xn, wv, M, N, K);
  const e = matmulAbsRef(xn, wv, M, N, K).map((a) => (K + 1 + (norm ? K / 2 + 9 : 0)) * U * a);
  if (swiglu) {
    const I = N / 2;
    return Float64Array.from({ length: M * I }, (_, j) => {
      const g = Math.floor(j / I) * N + (j % I);
      return swigluTol(y[g], y[g + I], e[g], e[g + I]);
    });
  }
  return sum ? e.map((v, j) => v + U * Math.abs(sum[j])) : e;
}
