import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { randn } from '../helpers/seeded.ts';
import { fixture } from '../helpers/fixtures.ts';
import { ulpStats } from '../helpers/half-ulp.ts';
import { expectBitExact } from '../helpers/quant-check.ts';
import { runs, sweep } from '../helpers/sweep.ts';
import { Tensor } from '../../src/gpu/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../src/errors.ts';
import { roundBf16, roundF16 } from '../../src/gpu/dtype.ts';
import { matmul, type MatmulOptions } from '../../src/kernels/matmul/matmul.ts';
import { uplFit, type GemvKernel } from '../../src/kernels/matmul/gemv.ts';
import { matmulAbsRef, matmulFusedRef, matmulRef } from '../../src/kernels/matmul/matmul.ref.ts';
import { rmsNorm } from '../../src/kernels/rmsnorm/rmsnorm.ts';
import { rmsNormRef } from '../../src/kernels/rmsnorm/rmsnorm.ref.ts';
import { add, siluMul } from '../../src/kernels/ops/ops.ts';
import { sigmoidRef } from '../../src/kernels/ops/ops.ref.ts';
import type { Round } from '../../src/kernels/common/codes.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';

type WDType = 'f32' | 'bf16' | 'f16';
const PATHS = ['gemv', 'tiled', 'rows'] as const;
const DTYPES = ['f32', 'bf16', 'f16'] as const;
const U = 2 ** -24; // f32 unit roundoff

/** Values as stored in `dtype` (what the GPU multiplies). */
function asDtype(dtype: WDType, v: Float32Array): Float32Array {
  return dtype === 'bf16' ? v.map(roundBf16) : dtype === 'f16' ? v.map(roundF16) : v;
}

/**
 * |got - want| <= bound: an f32 dot product of K terms summed in any order is within gamma_K = K*u of the exact
 * value times sum |x w| (Higham, Accuracy and Stability, 3.1); `factor` 2 when both sides are f32 (MLX vs ours).
 */
function expectDotBound(got: ArrayLike<number>, want: ArrayLike<number>, abs: ArrayLike<number>, K: number, factor: number, what: string): void {
  for (let i = 0; i < want.length; i++) {
    const bound = factor * (K + 1) * U * abs[i] + 1e-30;
    if (!(Math.abs(got[i] - want[i]) <= bound)) {
      throw new Error(`${what}: first mismatch at ${i}: got ${got[i]}, want ${want[i]} (|diff| ${Math.abs(got[i] - want[i])} > ${bound})`);
    }
  }
}

async function upload(gpu: Gpu, M: number, N: number, K: number, dtype: WDType, seed: number, wScale = 1) {
  const xv = randn(seed, M * K), wv = asDtype(dtype, randn(seed + 1, N * K, wScale));
  return { xv, wv, x: Tensor.from(gpu, xv, [M, K], 'f32', 'x'), w: Tensor.from(gpu, wv, [N, K], dtype, 'w') };
}

describe('matmul against MLX (ops.safetensors: a [7,320] @ b[192,320]^T)', async () => {
  const gpu = await getGpu();
  const f = await fixture('ops.safetensors');
  const load = async (dt: WDType) => {
    const a = await f.array(`matmul.${dt}.a`) as Float32Array;
    const b = await f.array(`matmul.${dt}.b`) as Float32Array;
    const want = await f.array(`matmul.${dt}.out`) as Float32Array;
    // Weights uploaded as their stored bits; activations as f32 holding the bf16 / f16 values.
    const w = Tensor.from(gpu, await f.bytes(`matmul.${dt}.b`), f.entry(`matmul.${dt}.b`).shape, dt, 'b');
    return { a, b, want, x: Tensor.from(gpu, a, [7, 320], 'f32', 'a'), w };
  };

  for (const path of PATHS) {
    it(`f32 within twice the f32 dot-product bound (${path})`, async () => {
      const { a, b, want, x, w } = await load('f32');
      const got = await matmul(x, w, { path }).read();
      // Two f32 sums in different orders: each within gamma_K * sum|ab| of the exact value.
      expectDotBound(got, want, matmulAbsRef(a, b, 7, 192, 320), 320, 2, `f32 ${path}`);
    });

    for (const dt of ['bf16', 'f16'] as const) {
      it(`${dt} within 1 ulp of MLX on >= 99.9 % (${path})`, async () => {
        const { want, x, w } = await load(dt);
        const got = await matmul(x, w, { round: dt, path }).read();
        const s = ulpStats(dt, got, want);
        // Every output is a value of the dtype (the rounding happened: unrounded f32 would also lie within 1 ulp).
        const roundDt = dt === 'bf16' ? roundBf16 : roundF16;
        expect(got.findIndex((v) => roundDt(v) !== v)).toBe(-1);
        // One rounding of an f32 accumulator: only a summation-order difference near a rounding midpoint can
        // move an element, and then by one ulp (measured: bf16 all identical, f16 2 of 1344 one ulp off on gemv).
        expect(s.within1, JSON.stringify(s)).toBeGreaterThanOrEqual(0.999);
        expect(s.worst, JSON.stringify(s)).toBeLessThanOrEqual(1);
      });
    }
  }
});

describe('matmul against the float64 reference (seeded, odd shapes)', async () => {
  const gpu = await getGpu();
  // [M, N, K]: word-by-word gemv (K odd / not 16-byte rows), vec4 gemv (K % 8 == 0), several tiles and partial
  // tiles for the tiled path (BM = BN = 64).
  const shapes: Array<[number, number, number]> = [[1, 31, 33], [3, 33, 257], [1, 65, 64], [3, 9, 520], [33, 257, 31], [70, 130, 260]];
  // Every shape on every path in one dtype (each dtype on two shapes a path; the fusions below run every dtype on
  // every kernel); HRM_EXHAUSTIVE=1 every dtype.
  const cases = DTYPES.flatMap((dtype, d) => shapes.flatMap((shape, s) =>
    PATHS.map((path, p) => ({ dtype, shape, path, d, s, p }))));
  for (const { dtype, shape: [M, N, K], path } of sweep(cases, (c) => (c.s + c.p) % 3 === c.d)) {
    it(`${dtype} [${M},${K}] @ [${N},${K}]^T (${path})`, async () => {
      const { xv, wv, x, w } = await upload(gpu, M, N, K, dtype, M * 1000 + N + K);
      const got = await matmul(x, w, { path }).read();
      // The f32 result against the exact sum of the same (already rounded) weights: gamma_K bound.
      expectDotBound(got, matmulRef(xv, wv, M, N, K), matmulAbsRef(xv, wv, M, N, K), K, 1, `${dtype} ${M}x${N}x${K} ${path}`);
    });
  }

  it('rounds the output once to bf16 / f16 (every element within 1 ulp, >= 99 % identical)', async () => {
    const [M, N, K] = [3, 67, 258];
    for (const round of ['bf16', 'f16'] as const) {
      const { xv, wv, x, w } = await upload(gpu, M, N, K, round, 77);
      for (const path of PATHS) {
        const got = await matmul(x, w, { round, path }).read();
        const s = ulpStats(round, got, matmulRef(xv, wv, M, N, K, round));
        // The f32 accumulator differs from the exact sum by ~1e-6 relative, which flips a rounding only when the
        // sum lies that close to a midpoint: rare, and then by one ulp.
        expect(s.worst, `${round} ${path} ${JSON.stringify(s)}`).toBeLessThanOrEqual(1);
        expect(s.exact, `${round} ${path} ${JSON.stringify(s)}`).toBeGreaterThanOrEqual(0.99);
      }
    }
  });

  it('keeps leading axes: [1, S, K] -> [1, S, N]', async () => {
    const { xv, wv, w } = await upload(gpu, 5, 12, 40, 'bf16', 5);
    const out = matmul(Tensor.from(gpu, xv, [1, 5, 40], 'f32', 'x3'), w);
    expect(out.shape).toEqual([1, 5, 12]);
    expectDotBound(await out.read(), matmulRef(xv, wv, 5, 12, 40), matmulAbsRef(xv, wv, 5, 12, 40), 40, 1, 'rank 3');
  });
});

describe('matmul over row-chunks of the weight', async () => {
  const gpu = await getGpu();
  // Each dtype on one shape (HRM_EXHAUSTIVE=1: on each).
  const shapes = [[1, 64], [3, 33], [33, 96]] as const;
  const cases = DTYPES.flatMap((dtype, d) => shapes.map(([M, K], s) => ({ dtype, M, K, d, s })));
  for (const { dtype, M, K } of sweep(cases, (c) => c.d === c.s)) {
    it(`${dtype} M=${M} K=${K}: chunks of 40, 33, 27 rows equal the whole weight bit for bit`, async () => {
      const N = 100;
      const { wv, x, w } = await upload(gpu, M, N, K, dtype, 900 + M + K);
      const chunks = [[0, 40], [40, 73], [73, 100]].map(([a, b], i) => Tensor.from(gpu, wv.subarray(a * K, b * K), [b - a, K], dtype, `w${i}`));
      for (const path of PATHS) {
        const whole = await matmul(x, w, { path, round: 'bf16' }).read();
        const split = matmul(x, chunks, { path, round: 'bf16' });
        expect(split.shape).toEqual([M, N]);
        // Each output element is computed by the same code from the same values whichever chunk holds its row.
        expect([...await split.read()]).toEqual([...whole]);
      }
    });
  }
});

describe('matmul errors', async () => {
  const gpu = await getGpu();
  const x = Tensor.from(gpu, new Float32Array(6 * 8), [6, 8], 'f32', 'x');
  it('names both shapes when K disagrees', () => {
    const w = Tensor.from(gpu, new Float32Array(4 * 9), [4, 9], 'bf16', 'w');
    expect(() => matmul(x, w)).toThrow(ShapeError);
    expect(() => matmul(x, w)).toThrow(/\[matmul\] x 'x' \[6, 8\] f32 @ weight 'w' \[4, 9\] bf16\^T/);
  });
  it('rejects non-f32 activations, integer weights and mixed chunk dtypes', () => {
    const wb = Tensor.from(gpu, new Float32Array(4 * 8), [4, 8], 'bf16', 'wb');
    const wf = Tensor.from(gpu, new Float32Array(4 * 8), [4, 8], 'f32', 'wf');
    const wu = Tensor.from(gpu, new Uint32Array(4 * 8), [4, 8], 'u32', 'wu');
    const xb = Tensor.from(gpu, new Float32Array(6 * 8), [6, 8], 'bf16', 'xb');
    expect(() => matmul(xb, wb)).toThrow(DTypeError);
    expect(() => matmul(x, wu)).toThrow(/\[matmul\] weight 'wu' \[4, 8\] u32 must be f32, bf16 or f16/);
    expect(() => matmul(x, [wb, wf])).toThrow(/weight chunk 1 'wf' \[4, 8\] f32 differs in dtype/);
    expect(() => matmul(x, [])).toThrow(ShapeError);
  });
  it('rejects fusion options that do not fit x and the weight, naming the tensors', () => {
    const w = Tensor.from(gpu, new Float32Array(4 * 8), [4, 8], 'bf16', 'w');
    const w3 = Tensor.from(gpu, new Float32Array(3 * 8), [3, 8], 'bf16', 'w3');
    const acc = Tensor.from(gpu, new Float32Array(6 * 4), [6, 4], 'f32', 'acc');
    const wide = Tensor.from(gpu, new Float32Array(6 * 5), [6, 5], 'f32', 'wide');
    const accb = Tensor.from(gpu, new Float32Array(6 * 4), [6, 4], 'bf16', 'accb');
    expect(() => matmul(x, w, { accumulate: wide })).toThrow(ShapeError);
    expect(() => matmul(x, w, { accumulate: wide })).toThrow(/accumulate 'wide' \[6, 5\] f32 must be \[6, 4\], the output of x 'x' \[6, 8\] f32 @ weight 'w' \[4, 8\] bf16\^T/);
    expect(() => matmul(x, w, { accumulate: accb })).toThrow(DTypeError);
    expect(() => matmul(x, w, { accumulate: accb })).toThrow(/accumulate 'accb' \[6, 4\] bf16 must be f32/);
    expect(() => matmul(x, w3, { swiglu: true })).toThrow(ShapeError);
    expect(() => matmul(x, w3, { swiglu: true })).toThrow(/swiglu: weight 'w3' \[3, 8\] bf16 has 3 rows; it must be \[2I, K\]/);
    expect(() => matmul(x, [w, w3], { swiglu: true })).toThrow(/swiglu: weight chunks 'w' \[4, 8\] bf16, 'w3' \[3, 8\] bf16 has 7 rows/);
    expect(() => matmul(x, w, { swiglu: true, accumulate: acc })).toThrow(InputError);
    expect(() => matmul(x, w, { norm: { eps: -1 } })).toThrow(/norm.eps -1 must be a finite number >= 0/);
    expect(() => matmul(x, w, { norm: { eps: NaN } })).toThrow(InputError);
    // Written while x is read: WebGPU would reject the dispatch, so say why first.
    const xy = Tensor.from(gpu, new Float32Array(6 * 8), [6, 8], 'f32', 'xy');
    expect(() => matmul(xy, Tensor.from(gpu, new Float32Array(8 * 8), [8, 8], 'f32', 'sq'), { accumulate: xy })).toThrow(/accumulate 'xy' \[6, 8\] f32 overlaps x 'xy'/);
  });
});

// ---- Fusions: norm (rmsNorm prologue), swiglu (gate/up pairs), accumulate (residual epilogue) ----

const EPS = 1e-6; // HRM's rms_norm_eps
// Weight dtype with the output rounding a model in that dtype uses.
const MODES = [['f32', 'none'], ['bf16', 'bf16'], ['f16', 'f16']] as const;
// Every kernel: on 'gemv' K % 8 == 0 takes gemv_vec4 and odd K gemv_word, on 'rows' gemv_rows4 / gemv_rows; M = 6
// is two gemv blocks of MB = 4 (the second with two rows). N is even for swiglu, with I = N / 2 odd.
// Each M is a gemv block size (MB) of its own, a pipeline each: the CPU driver takes an odd K (gemv_word, rows)
// and the two blocks (gemv_vec4, rows4).
const FUSED_SHAPES = sweep<[number, number, number]>([[1, 262, 264], [3, 262, 257], [6, 198, 96], [2, 202, 33]],
  (_, i) => i === 1 || i === 2);

async function uploadFused(gpu: Gpu, M: number, N: number, K: number, dtype: WDType, round: Round, seed: number, wScale = 1) {
  const base = await upload(gpu, M, N, K, dtype, seed, wScale);
  // x well away from unit RMS, so a missing norm shows; a residual holding values of the activation dtype.
  const xv = base.xv.map((v) => 3 * v);
  const accv = asRound(round, randn(seed + 2, M * N, 2));
  return { ...base, xv, x: Tensor.from(gpu, xv, [M, K], 'f32', 'x'), accv };
}

function asRound(round: Round, v: Float32Array): Float32Array {
  return round === 'none' ? v : asDtype(round, v);
}

/** |got - want| <= rel * scale (per element); names the first element outside. */
function expectRel(got: ArrayLike<number>, want: ArrayLike<number>, scale: ArrayLike<number>, rel: number, what: string): void {
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= rel * scale[i] + 1e-30)) throw new Error(`${what}: first mismatch at ${i}: got ${got[i]}, want ${want[i]} (|diff| ${d} > ${rel} * ${scale[i]})`);
  }
}

/**
 * Scale of an f32 swiglu output's error: g and u each off by up to `eg` and `eu` (f32 sums), silu'(g) is at most
 * 1.1 in magnitude, sigmoid's exp within (3 + 2|g|) ulp (WGSL) and four roundings of the products.
 */
function swigluTol(g: number, u: number, eg: number, eu: number): number {
  const silu = g * sigmoidRef(g);
  return 1.1 * Math.abs(u) * eg + Math.abs(silu) * eu + (8 + 2 * Math.abs(g)) * U * Math.abs(g * u) + 1e-30;
}

const FUSIONS = ['accumulate', 'swiglu', 'norm', 'norm + swiglu'] as const;
type Fusion = (typeof FUSIONS)[number];

/**
 * The mode (index in MODES) the CPU driver runs `fusion` in on path PATHS[p]: each fusion on each path once and each
 * mode on each path. Every fusion test takes the same mode for a (fusion, path), so they share its pipelines (a
 * gemv pipeline is seconds of LLVM under a cold cache); norm + swiglu takes norm's mode, as over row chunks it is
 * the norm kernel's. HRM_EXHAUSTIVE=1 runs every mode.
 */
function quickMode(fusion: Fusion, p: number): number {
  return (Math.min(FUSIONS.indexOf(fusion), 2) + p) % 3;
}

describe('matmul fusions against the composed ops', async () => {
  const gpu = await getGpu();
  for (const [m, [dtype, round]] of MODES.entries()) {
    for (const [p, path] of PATHS.entries()) {
      const on = (fusion: Fusion) => runs(quickMode(fusion, p) === m);
      if (on('accumulate')) it(`accumulate ${dtype} (${path}): in place, bit for bit add(acc, matmul(x, w))`, async () => {
        for (const [M, N, K] of FUSED_SHAPES) {
          const { x, w, accv } = await uploadFused(gpu, M, N, K, dtype, round, M * 31 + K);
          const acc = Tensor.from(gpu, accv, [M, N], 'f32', 'acc');
          const want = await add(Tensor.from(gpu, accv, [M, N], 'f32', 'acc0'), matmul(x, w, { round, path }), { round }).read();
          const got = matmul(x, w, { round, path, accumulate: acc });
          expect(got).toBe(acc);
          expectBitExact(await acc.read(), want, `${M}x${N}x${K}`);
        }
      });

      if (on('swiglu')) it(`swiglu ${dtype} (${path}): bit for bit siluMul(matmul(x, w))`, async () => {
        for (const [M, N, K] of FUSED_SHAPES) {
          const { x, w } = await uploadFused(gpu, M, N, K, dtype, round, M * 37 + K);
          const want = await siluMul(matmul(x, w, { round, path }), { round }).read();
          const got = matmul(x, w, { round, path, swiglu: true });
          expect(got.shape).toEqual([M, N / 2]);
          expectBitExact(await got.read(), want, `${M}x${N}x${K}`);
        }
      });

      for (const swiglu of [false, true]) {
        const what = swiglu ? 'norm + swiglu' : 'norm';
        const like = swiglu ? 'siluMul(matmul(rmsNorm(x), w))' : 'matmul(rmsNorm(x), w)';
        if (!on(what)) continue;
        it(`${what} ${dtype} (${path}): ${like} up to the order of the sum of squares`, async () => {
          let total = 0, same = 0;
          for (const [M, N, K] of FUSED_SHAPES) {
            const { x, w, xv, wv } = await uploadFused(gpu, M, N, K, dtype, round, M * 41 + K);
            const composed = matmul(rmsNorm(x, { eps: EPS, round }), w, { round, path });
            const want = await (swiglu ? siluMul(composed, { round }) : composed).read();
            const got = await matmul(x, w, { round, path, norm: { eps: EPS }, swiglu }).read();
            if (round === 'none') {
              // f32: the inverse RMS may differ by a few ulp; 1e-5 of each output's scale (sum |xn w|, through silu).
              const xn = rmsNormRef(xv, K, EPS);
              const abs = matmulAbsRef(xn, wv, M, N, K);
              const y = matmulRef(xn, wv, M, N, K);
              const scale = swiglu ? Float64Array.from({ length: M * N / 2 }, (_, j) => {
                const [m, i] = [Math.floor(j / (N / 2)), j % (N / 2)];
                return swigluTol(y[m * N + i], y[m * N + N / 2 + i], abs[m * N + i], abs[m * N + N / 2 + i]);
              }) : abs;
              expectRel(got, want, scale, 1e-5, `${what} ${M}x${N}x${K}`);
            } else {
              // A different sum order may flip the rounding of an xn value: rare, and then one ulp in the output.
              const s = ulpStats(round, got, want);
              expect(s.worst, `${M}x${N}x${K} ${JSON.stringify(s)}`).toBeLessThanOrEqual(1);
              total += want.length;
              same += Math.round(s.exact * want.length);
            }
          }
          if (round !== 'none') expect(same / total, `${same} of ${total} identical`).toBeGreaterThanOrEqual(0.999);
        });
      }
    }
  }
});

describe('matmul fusions over row-chunks of the weight', async () => {
  const gpu = await getGpu();
  for (const [m, [dtype, round]] of MODES.entries()) {
    for (const [p, path] of PATHS.entries()) {
      // Each fusion in its quickMode on each path (HRM_EXHAUSTIVE=1: all four in every mode).
      const fusions = FUSIONS.filter((f) => runs(quickMode(f, p) === m));
      if (!fusions.length) continue;
      const what = `${dtype} (${path}): ${fusions.join(', ')} over chunks of 40, 33, 27 rows`;
      it(`${what} give the whole weight's results, bit for bit`, async () => {
        const N = 100;
        for (const [M, K] of [[3, 33], [5, 96]] as const) {
          const { x, w, wv, accv } = await uploadFused(gpu, M, N, K, dtype, round, 700 + M + K);
          const chunks = [[0, 40], [40, 73], [73, 100]].map(([a, b], i) => Tensor.from(gpu, wv.subarray(a * K, b * K), [b - a, K], dtype, `w${i}`));
          if (fusions.includes('accumulate')) {
            // Each chunk adds into its own columns.
            const whole = Tensor.from(gpu, accv, [M, N], 'f32', 'acc.whole');
            const split = Tensor.from(gpu, accv, [M, N], 'f32', 'acc.split');
            matmul(x, w, { round, path, accumulate: whole });
            matmul(x, chunks, { round, path, accumulate: split });
            expectBitExact(await split.read(), await whole.read(), `accumulate M=${M} K=${K}`);
          }
          // swiglu over chunks is matmul then siluMul; every chunk's kernel finds the same inverse RMS.
          const norm = { eps: EPS };
          const options = { swiglu: { swiglu: true }, norm: { norm }, 'norm + swiglu': { norm, swiglu: true } };
          for (const f of fusions) {
            if (f === 'accumulate') continue;
            const o = options[f];
            const got = await matmul(x, chunks, { round, path, ...o }).read();
            expectBitExact(got, await matmul(x, w, { round, path, ...o }).read(), `${f} M=${M} K=${K}`);
          }
        }
      });
    }
  }
});

interface FusedCase { name: string; norm: boolean; swiglu: boolean; acc: boolean }
const FUSED_CASES: Array<FusedCase & { name: Fusion }> = [
  { name: 'norm', norm: true, swiglu: false, acc: false },
  { name: 'swiglu', norm: false, swiglu: true, acc: false },
  { name: 'accumulate', norm: false, swiglu: false, acc: true },
  { name: 'norm + swiglu', norm: true, swiglu: true, acc: false },
];

/**
 * matmul(x, w, fusions of `c`, `opts`) against matmulFusedRef: f32 within fusedTol, bf16 / f16 within 1 ulp (2
 * with swiglu). Adds the rounded outputs and how many of them equal the reference's to `tally`.
 */
async function expectFusedRef(gpu: Gpu, c: FusedCase, w: Tensor | Tensor[], u: Awaited<ReturnType<typeof uploadFused>>, shape: [number, number, number], round: Round, opts: MatmulOptions, tally: { total: number; same: number }): Promise<void> {
  const [M, N, K] = shape;
  const accumulate = c.acc ? Tensor.from(gpu, u.accv, [M, N], 'f32', 'acc') : undefined;
  const got = await matmul(u.x, w, { ...opts, round, norm: c.norm ? { eps: EPS } : undefined, swiglu: c.swiglu, accumulate }).read();
  const want = matmulFusedRef(u.xv, u.wv, M, N, K, { round, norm: c.norm ? EPS : undefined, swiglu: c.swiglu, accumulate: c.acc ? u.accv : undefined });
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

describe('matmul fusions against the float64 reference', async () => {
  const gpu = await getGpu();
  for (const [ci, c] of FUSED_CASES.entries()) {
    for (const [p, path] of PATHS.entries()) {
      // The fusion's quickMode on this path: f32 on one path, bf16 and f16 on the others (HRM_EXHAUSTIVE=1: all).
      const modes = MODES.filter((_, m) => runs(m === quickMode(c.name, p)));
      const names = modes.map(([dt]) => dt).join(', ');
      it(`${c.name} (${path}): ${names} within the f32 error bound or rounded as the reference rounds`, async () => {
        const tally = { total: 0, same: 0 };
        for (const [M, N, K] of [[3, 70, 257], [5, 38, 264]] as const) {
          for (const [dtype, round] of modes) {
            const u = await uploadFused(gpu, M, N, K, dtype, round, M + N + K);
            await expectFusedRef(gpu, c, u.w, u, [M, N, K], round, { path }, tally);
          }
        }
        if (tally.total) expect(tally.same / tally.total, `${tally.same} of ${tally.total} identical`).toBeGreaterThanOrEqual(c.swiglu ? 0.98 : 0.99);
      });
    }
  }
});

// Each workgroup shape and K is a pipeline of its own: on lavapipe with a cold Mesa shader cache (a fresh machine)
// LLVM compiles each for seconds, so the CPU driver takes a share of them by turns (HRM_EXHAUSTIVE=1: all).
describe('gemv_upl (every load up front) against the float64 reference', async () => {
  const gpu = await getGpu();
  // M = 1..4 (one block of MB rows) at the model's K and a short row (64: fewer units than lanes, the tail masked);
  // N odd, or for swiglu even with I = N / 2 odd. Shapes cycle through 8 rows, exact and masked units per lane, and
  // 16 lanes x 8 rows, which serve 2 x rows per block (M = 4: two blocks along z).
  const SIZES = [[1, 1536], [2, 64], [3, 4096], [4, 1536], [4, 64], [1, 4096]] as const;
  const SHAPES = [{ wg: 64, rows: 8 }, { wg: 128, rows: 4 }, { wg: 256, rows: 2 }, { wg: 32, rows: 2 }, { wg: 16, rows: 8 }];
  // gemv_upl_sg where the adapter has subgroups (lavapipe does).
  const kernels: GemvKernel[] = gpu.subgroups ? ['upl', 'upl-sg'] : ['upl'];
  let t = 0;
  for (const [ci, c] of [{ name: 'plain', norm: false, swiglu: false, acc: false }, ...FUSED_CASES].entries()) {
    for (const [d, [dtype, round]] of ([['f32', 'none'], ['bf16', 'bf16']] as const).entries()) {
      for (const [k, kernel] of kernels.entries()) {
        // Each case on each kernel, in one dtype by turns, one size a test by turns (HRM_EXHAUSTIVE=1: every
        // dtype and size): a pipeline a size.
        const quick = k === (ci + d) % kernels.length;
        if (!runs(quick)) continue;
        const sizes = [...SIZES.entries()].filter(([j]) => runs(j === t % SIZES.length));
        if (quick) t++;
        it(`${kernel} ${c.name} ${dtype}: within the gemv_vec4 tolerance, whole and in row chunks`, async () => {
          const tally = { total: 0, same: 0 };
          for (const [j, [M, K]] of sizes) {
            const N = c.swiglu ? 38 : 37;
            const gemv = { kernel, ...[...SHAPES.slice(j % SHAPES.length), ...SHAPES].find((g) => uplFit(K, dtype, g.wg, g.rows).fits)! };
            // Weights of a model's scale (1 / sqrt(K)): sums of O(1), so sigmoid stays out of f32's subnormals (the GPU
            // flushes them; the reference does not).
            const u = await uploadFused(gpu, M, N, K, dtype, round, 300 + M * K + N, 1 / Math.sqrt(K));
            await expectFusedRef(gpu, c, u.w, u, [M, N, K], round, { path: 'gemv', gemv }, tally);
            // Row chunks write their columns from col0 on (swiglu over chunks is matmul, then siluMul).
            const chunks = [[0, 16], [16, N]].map(([a, b], i) => Tensor.from(gpu, u.wv.subarray(a * K, b * K), [b - a, K], dtype, `w${i}`));
            await expectFusedRef(gpu, c, chunks, u, [M, N, K], round, { path: 'gemv', gemv }, tally);
          }
          if (round !== 'none') expect(tally.same / tally.total, `${tally.same} of ${tally.total} identical`).toBeGreaterThanOrEqual(c.swiglu ? 0.98 : 0.99);
        });
      }
    }
  }
});

describe('gemv_wide (row groups sharing one x read) against the float64 reference', async () => {
  const gpu = await getGpu();
  // One x row (decode) at the model's K and a short row; N odd (the last block's slots past N repeat the last row
  // and are not written), or for swiglu even with I = N / 2 odd. Shapes: 1..4 rows a group, 2..8 groups, 16..64
  // lanes, each K taking the next shape that splits it evenly (the model's K 1536 the default gate_up shape first).
  const SHAPES = [{ wg: 64, groups: 4, rows: 16 }, { wg: 32, groups: 8, rows: 16 }, { wg: 16, groups: 4, rows: 8 }, { wg: 64, groups: 4, rows: 4 }, { wg: 32, groups: 2, rows: 2 }];
  const KS = [1536, 256, 4096];
  let t = 0;
  for (const c of [{ name: 'plain', norm: false, swiglu: false, acc: false }, ...FUSED_CASES]) {
    for (const [dtype, round] of [['f32', 'none'], ['bf16', 'bf16']] as const) {
      // One K a test by turns (HRM_EXHAUSTIVE=1: all three): a pipeline a K.
      const ks = [...KS.entries()].filter(([j]) => runs(j === t % 3));
      t++;
      it(`${c.name} ${dtype}: within the gemv_vec4 tolerance, whole and in row chunks`, async () => {
        const tally = { total: 0, same: 0 };
        for (const [j, K] of ks) {
          const N = c.swiglu ? 38 : 37;
          const fit = (g: (typeof SHAPES)[number]) => { const f = uplFit(K, dtype, g.wg, g.rows / g.groups); return f.exact && f.fits; };
          const gemv = { kernel: 'wide' as const, ...[...SHAPES.slice(j % SHAPES.length), ...SHAPES].find(fit)! };
          const u = await uploadFused(gpu, 1, N, K, dtype, round, 900 + K + N, 1 / Math.sqrt(K));
          await expectFusedRef(gpu, c, u.w, u, [1, N, K], round, { path: 'gemv', gemv }, tally);
          const chunks = [[0, 16], [16, N]].map(([a, b], i) => Tensor.from(gpu, u.wv.subarray(a * K, b * K), [b - a, K], dtype, `w${i}`));
          await expectFusedRef(gpu, c, chunks, u, [1, N, K], round, { path: 'gemv', gemv }, tally);
        }
        if (round !== 'none') expect(tally.same / tally.total, `${tally.same} of ${tally.total} identical`).toBeGreaterThanOrEqual(c.swiglu ? 0.98 : 0.99);
      });
    }
  }

  it('is what one x row takes by default where it fits, and refuses what it cannot take', async () => {
    const K = 256, N = 37;
    const u = await uploadFused(gpu, 1, N, K, 'bf16', 'bf16', 77, 1 / Math.sqrt(K));
    const byDefault = await matmul(u.x, u.w, { round: 'bf16', path: 'gemv' }).read();
    const wide = await matmul(u.x, u.w, { round: 'bf16', path: 'gemv', gemv: { kernel: 'wide', wg: 32, groups: 8, rows: 8 } }).read();
    expect(byDefault).toEqual(wide);
    const x2 = Tensor.empty(gpu, [2, K], 'f32', 'x2');
    expect(() => matmul(x2, u.w, { path: 'gemv', gemv: { kernel: 'wide', wg: 32, groups: 8, rows: 8 } })).toThrow(/'wide' cannot take it \(it takes one x row, not 2\)/);
    expect(() => matmul(u.x, u.w, { path: 'gemv', gemv: { kernel: 'wide', wg: 64, groups: 2, rows: 4 } })).toThrow(/32 units a row do not split over 64 lanes/);
    expect(() => matmul(u.x, u.w, { path: 'gemv', gemv: { kernel: 'wide', wg: 32, groups: 16, rows: 16 } })).toThrow(/wg x groups <= 256/);
    expect(() => matmul(u.x, u.w, { path: 'gemv', gemv: { kernel: 'wide', wg: 32, groups: 4, rows: 6 } })).toThrow(/even multiple of groups/);
    // 32 KB of partial sums: past WebGPU's default 16 KB of workgroup memory (a device may grant more).
    const big = () => matmul(u.x, u.w, { path: 'gemv', gemv: { kernel: 'wide', wg: 32, groups: 8, rows: 256 } }).dispose();
    if (gpu.device.limits.maxComputeWorkgroupStorageSize < 4 * 32 * 256) expect(big).toThrow(/32 x 256 partial sums exceed the \d+ bytes of workgroup memory/);
    else expect(big).not.toThrow();
    expect(() => matmul(u.x, u.w, { path: 'gemv', gemv: { kernel: 'wide', wg: 32, rows: 8 } })).toThrow(/groups a power of two/);
    // A thread adds and stores each row: 32 rows over 16 threads would leave half unwritten.
    expect(() => matmul(u.x, u.w, { path: 'gemv', gemv: { kernel: 'wide', wg: 16, groups: 1, rows: 32 } })).toThrow(/at most wg a group/);
    expect(() => matmul(u.x, u.w, { path: 'gemv', gemv: { kernel: 'vec4', wg: 32, rows: 2, groups: 2 } })).toThrow(/groups is for kernel 'wide' only/);
  });
});

/**
 * Error bound of a fused f32 result: each sum within (K + 1) u sum |xn w| of the exact one (Higham 3.1); with norm
 * xn itself within (K / 2 + 9) u relative (the sum of squares' error halved by the square root, the division,
 * eps, inverseSqrt's 2 ulp and the product); swiglu through swigluTol; with `sum` (the result of a residual add)
 * one more rounding of it.
 */
function fusedTol(xv: Float32Array, wv: Float32Array, M: number, N: number, K: number, norm: boolean, swiglu: boolean, sum: ArrayLike<number> | null): Float64Array {
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

describe('matmul fusions as HRM uses them', async () => {
  const gpu = await getGpu();
  it('one MLP block in place on [1, S, H] (auto path): x += down(swiglu(gate_up(rmsNorm(x)))), bf16', async () => {
    const [S, H, I] = [3, 96, 70];
    const xv = asDtype('bf16', randn(11, S * H, 3));
    const gu = Tensor.from(gpu, asDtype('bf16', randn(12, 2 * I * H)), [2 * I, H], 'bf16', 'gate_up');
    const down = Tensor.from(gpu, asDtype('bf16', randn(13, H * I)), [H, I], 'bf16', 'down');
    const round = 'bf16';
    const x = Tensor.from(gpu, xv, [1, S, H], 'f32', 'x');
    const a = matmul(x, gu, { round, norm: { eps: EPS }, swiglu: true });
    expect(a.shape).toEqual([1, S, I]);
    expect(matmul(a, down, { round, accumulate: x })).toBe(x);
    const x0 = Tensor.from(gpu, xv, [1, S, H], 'f32', 'x0');
    const want = add(x0, matmul(siluMul(matmul(rmsNorm(x0, { eps: EPS, round }), gu, { round }), { round }), down, { round }), { round });
    // As the norm test: only the sum of squares' order differs, which rarely flips an xn rounding.
    expect(ulpStats(round, await x.read(), await want.read()).exact).toBeGreaterThanOrEqual(0.999);
  });
});

describe('matmul matrix-vector workgroup shapes (the gemv option)', async () => {
  const gpu = await getGpu();
  it('every lane count and row count gives the bits of the default shape, fused or not', async () => {
    const K = 200, N = 38;
    const x = Tensor.from(gpu, randn(401, 3 * K), [3, K], 'f32', 'x');
    const w = Tensor.from(gpu, randn(402, N * K), [N, K], 'bf16', 'w');
    const fusions = [{}, { norm: { eps: 1e-5 } }, { norm: { eps: 1e-5 }, swiglu: true }];
    const shapes = [32, 64, 128, 256].flatMap((wg) => [2, 4].map((rows) => ({ wg, rows })));
    for (const [f, fused] of fusions.entries()) {
      const want = await matmul(x, w, { ...fused, round: 'bf16', path: 'gemv' }).read();
      // Each lane count once and each row count (32x2, 64x4, 128x2, 256x4) over the three fusions by turns
      // (HRM_EXHAUSTIVE=1: every shape with each): a pipeline a shape.
      for (const { wg, rows } of sweep(shapes, (_, i) => [0, 3, 4, 7].indexOf(i) % 3 === f)) {
        // Lanes split K differently, so f32 sums may differ in the last bit: compare after the bf16 rounding,
        // which a last-bit difference flips only at a rounding boundary.
        const got = await matmul(x, w, { ...fused, round: 'bf16', path: 'gemv', gemv: { wg, rows } }).read();
        const same = got.filter((v, i) => v === want[i]).length;
        expect(same / got.length, `${JSON.stringify(fused)} ${wg}x${rows}`).toBeGreaterThanOrEqual(0.97);
      }
    }
  });

  it('rejects a shape the kernel cannot take', () => {
    const x = Tensor.empty(gpu, [1, 64], 'f32', 'x');
    const w = Tensor.empty(gpu, [8, 64], 'bf16', 'w');
    expect(() => matmul(x, w, { path: 'gemv', gemv: { wg: 48, rows: 2 } })).toThrow(InputError);
    expect(() => matmul(x, w, { path: 'gemv', gemv: { wg: 64, rows: 3 } })).toThrow(/rows 2 or 4/);
    expect(() => matmul(x, w, { path: 'gemv', gemv: { wg: 8, rows: 2 } })).toThrow(/from 16 to 256/);
    expect(() => matmul(x, w, { path: 'gemv', gemv: { wg: 64, rows: 8 } })).toThrow(/8 with the upl kernels/);
    expect(() => matmul(x, w, { path: 'gemv', gemv: { wg: 64, rows: 2, kernel: 'upl2' as GemvKernel } })).toThrow(/kernel must be 'vec4' or 'upl' or 'upl-sg'/);
    // gemv_upl reads whole 16-byte units and holds at most 32 of them per lane.
    const odd = Tensor.empty(gpu, [8, 63], 'bf16', 'w.odd');
    expect(() => matmul(Tensor.empty(gpu, [1, 63], 'f32', 'x.odd'), odd, { path: 'gemv', gemv: { wg: 64, rows: 2, kernel: 'upl' } })).toThrow(/'w.odd' .*not 16-byte/);
    const long = Tensor.empty(gpu, [8, 4096], 'f32', 'w.long');
    expect(() => matmul(Tensor.empty(gpu, [1, 4096], 'f32', 'x.long'), long, { path: 'gemv', gemv: { wg: 16, rows: 2, kernel: 'upl' } })).toThrow(/64 units per lane x 2 rows exceed 32/);
  });
});
