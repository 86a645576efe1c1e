// matmul against MLX and the float64 reference on every path and weight dtype, over row-chunked weights, and its
// errors. Fusions: matmul-fusions.test.ts; the matrix-vector kernels' shapes: gemv.test.ts.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { fixture } from '../../../testkit/helpers/fixtures.ts';
import { ulpStats } from '../../../testkit/helpers/half-ulp.ts';
import { sweep } from '../../helpers/sweep.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../../src/errors.ts';
import { roundBf16, roundF16 } from '../../../src/tensor/dtype.ts';
import { matmul } from '../../../src/kernels/matmul/matmul.ts';
import { matmulAbsRef, matmulRef } from '../../../src/kernels/matmul/matmul.ref.ts';
import { DTYPES, PATHS, type WDType, expectDotBound, upload } from '../../helpers/matmul-cases.ts';

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
  const shapes: Array<[number, number, number]> = [[1, 31, 33], [3, 33, 257], [1, 65, 64], [3, 9, 520], [33, 257, 31],
    [70, 130, 260]];
  // Every shape on every path in one dtype (each dtype on two shapes a path; the fusions below run every dtype on
  // every kernel); HRM_EXHAUSTIVE=1 every dtype.
  const cases = DTYPES.flatMap((dtype, d) => shapes.flatMap((shape, s) =>
    PATHS.map((path, p) => ({ dtype, shape, path, d, s, p }))));
  for (const { dtype, shape: [M, N, K], path } of sweep(cases, (c) => (c.s + c.p) % 3 === c.d)) {
    it(`${dtype} [${M},${K}] @ [${N},${K}]^T (${path})`, async () => {
      const { xv, wv, x, w } = await upload(gpu, M, N, K, dtype, M * 1000 + N + K);
      const got = await matmul(x, w, { path }).read();
      // The f32 result against the exact sum of the same (already rounded) weights: gamma_K bound.
      expectDotBound(got, matmulRef(xv, wv, M, N, K), matmulAbsRef(xv, wv, M, N, K), K, 1,
        `${dtype} ${M}x${N}x${K} ${path}`);
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
      const chunks = [[0, 40], [40, 73],
        [73, 100]].map(([a, b], i) => Tensor.from(gpu, wv.subarray(a * K, b * K), [b - a, K], dtype, `w${i}`));
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
    expect(() => matmul(x, w, { accumulate: wide })).toThrow(new RegExp("accumulate 'wide' \\[6, 5\\] f32 must be " +
      "\\[6, 4\\], the output of x 'x' \\[6, 8\\] f32 @ weight 'w' \\[4, 8\\] bf16\\^T"));
    expect(() => matmul(x, w, { accumulate: accb })).toThrow(DTypeError);
    expect(() => matmul(x, w, { accumulate: accb })).toThrow(/accumulate 'accb' \[6, 4\] bf16 must be f32/);
    expect(() => matmul(x, w3, { swiglu: true })).toThrow(ShapeError);
    expect(() => matmul(x, w3,
      { swiglu: true })).toThrow(/swiglu: weight 'w3' \[3, 8\] bf16 has 3 rows; it must be \[2I, K\]/);
    expect(() => matmul(x, [w, w3],
      { swiglu: true })).toThrow(/swiglu: weight chunks 'w' \[4, 8\] bf16, 'w3' \[3, 8\] bf16 has 7 rows/);
    expect(() => matmul(x, w, { swiglu: true, accumulate: acc })).toThrow(InputError);
    expect(() => matmul(x, w, { norm: { eps: -1 } })).toThrow(/norm.eps -1 must be a finite number >= 0/);
    expect(() => matmul(x, w, { norm: { eps: NaN } })).toThrow(InputError);
    // Written while x is read: WebGPU would reject the dispatch, so say why first.
    const xy = Tensor.from(gpu, new Float32Array(6 * 8), [6, 8], 'f32', 'xy');
    expect(() => matmul(xy, Tensor.from(gpu, new Float32Array(8 * 8), [8, 8], 'f32', 'sq'),
      { accumulate: xy })).toThrow(/accumulate 'xy' \[6, 8\] f32 overlaps x 'xy'/);
  });
});
