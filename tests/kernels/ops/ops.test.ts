import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn, rng } from '../../../testkit/helpers/seeded.ts';
import { expectClose } from '../../helpers/close.ts';
import { ulpStats } from '../../../testkit/helpers/half-ulp.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { DTypeError, GpuValidationError, ShapeError } from '../../../src/errors.ts';
import { Kernel } from '../../../src/kernels/kernel.ts';
import { roundBf16, roundF16 } from '../../../src/tensor/dtype.ts';
import {
  add, argmaxRows, embed, klRows, logSoftmaxRows, logSumExpRows, sigmoidGate, siluMul, softmaxRows,
} from '../../../src/kernels/ops/ops.ts';
import {
  addRef, argmaxRowsRef, embedRef, klRowsRef, logSoftmaxRowsRef, logSumExpRowsRef, roundAs, sigmoidGateRef, sigmoidRef,
  siluMulRef, softmaxRowsRef,
} from '../../../src/kernels/ops/ops.ref.ts';

const gpu = await getGpu();
const f32 = (v: ArrayLike<number>, shape: number[], label = 'x') => Tensor.from(gpu, Float32Array.from(v), shape,
  'f32', label);
const asDtype = (dt: 'f32' | 'bf16' | 'f16',
  v: Float32Array) => (dt === 'bf16' ? v.map(roundBf16) : dt === 'f16' ? v.map(roundF16) : v);
// Activations of a bf16 / f16 model are values of that dtype.
const acts = (round: 'none' | 'bf16' | 'f16', v: Float32Array) => (round === 'none' ? v : asDtype(round, v));

describe('embed', () => {
  const [V, H] = [50, 33];
  const ids = [0, 49, 7, 7, 23];
  for (const dt of ['f32', 'bf16', 'f16'] as const) {
    it(`gathers ${dt} rows times the scale (round none / bf16 / f16)`, async () => {
      const tv = asDtype(dt, randn(11, V * H, 0.1));
      const table = Tensor.from(gpu, tv, [V, H], dt, 'table');
      const idsT = Tensor.from(gpu, ids, [ids.length], 'u32', 'ids');
      const scale = Math.sqrt(1536);
      for (const round of ['none', 'bf16', 'f16'] as const) {
        const out = embed(idsT, table, { scale, round });
        expect(out.shape).toEqual([ids.length, H]);
        const got = await out.read();
        if (round === 'none') {
          // One f32 product of exact table values and f32(scale): within 2 f32 roundings of the exact product.
          expectClose(got, embedRef(ids, tv, H, scale), 0, 2 ** -23, `embed ${dt}`);
        } else {
          // Scale rounded to the dtype first (MLX's weak scalar), then one rounding of an exact f32 product.
          expect([...got]).toEqual([...embedRef(ids, tv, H, scale, round)]);
        }
      }
    });
  }

  it('reads row-chunks of the table (20, 17, 13 rows) like the whole table, bit for bit', async () => {
    const tv = asDtype('bf16', randn(12, V * H));
    const chunks = [[0, 20], [20, 37],
      [37, 50]].map(([a, b], i) => Tensor.from(gpu, tv.subarray(a * H, b * H), [b - a, H], 'bf16', `t${i}`));
    const many = [0, 19, 20, 36, 37, 49, 5, 44, 1000];
    const idsT = Tensor.from(gpu, many, [3, 3], 'u32', 'ids');
    const whole = await embed(idsT, Tensor.from(gpu, tv, [V, H], 'bf16', 'table'), { scale: 3, round: 'bf16' }).read();
    const split = embed(idsT, chunks, { scale: 3, round: 'bf16' });
    expect(split.shape).toEqual([3, 3, H]);
    // Each position is written by exactly one chunk's dispatch, with the same arithmetic.
    expect([...await split.read()]).toEqual([...whole]);
    expect([...whole]).toEqual([...embedRef(many.map((t) => Math.min(t, V - 1)), tv, H, 3, 'bf16')]);
  });

  it('reads row V-1 for an id past the table (no out-of-bounds read; callers validate ids)', async () => {
    const tv = randn(3, V * H);
    const got = await embed(Tensor.from(gpu, [1000], [1], 'u32', 'ids'), f32(tv, [V, H], 'table')).read();
    expect([...got]).toEqual([...tv.subarray((V - 1) * H)]);
  });

  it('names the dtype it needs', () => {
    const table = f32(new Float32Array(4), [2, 2], 'table');
    expect(() => embed(f32([1], [1], 'ids'), table)).toThrow(/\[embed\] ids 'ids' \[1\] f32 must be u32/);
    expect(() => embed(Tensor.from(gpu, [1], [1], 'u32', 'ids'), table.reshape([4]))).toThrow(ShapeError);
  });
});

describe('add', () => {
  it('adds odd sizes exactly as f32 / bf16 / f16 arithmetic', async () => {
    for (const round of ['none', 'bf16', 'f16'] as const) {
      const a = acts(round, randn(1, 4099, 4)), b = acts(round, randn(2, 4099, 4));
      const got = await add(f32(a, [1, 4099]), f32(b, [1, 4099]), { round }).read();
      // One correctly rounded f32 add (then one rounding to the dtype) is reproduced exactly by the reference.
      expect([...got]).toEqual([...addRef(a, b, round).map(Math.fround)]);
    }
  });
  it('names both shapes when they differ', () => {
    expect(() => add(f32([1, 2], [2], 'a'),
      f32([1, 2, 3], [3], 'b'))).toThrow(/\[add\] shapes differ: a 'a' \[2\] f32 vs b 'b' \[3\] f32/);
  });
});

describe('siluMul and sigmoidGate', () => {
  const [S, I] = [3, 4099];
  const gu = randn(21, S * 2 * I, 6);

  it('siluMul in f32 matches silu(g) * u', async () => {
    const got = await siluMul(f32(gu, [S, 2 * I])).read();
    // f32 exp (a few ulp on SwiftShader) and three f32 roundings: 1e-6 relative, 1e-7 absolute near zero.
    expectClose(got, siluMulRef(gu, S, I), 1e-7, 1e-6, 'siluMul f32');
  });

  for (const round of ['bf16', 'f16'] as const) {
    it(`siluMul rounds sigmoid, g * sigmoid and the product (${round}: three roundings)`, async () => {
      const x = acts(round, gu);
      const out = siluMul(f32(x, [S, 2 * I]), { round });
      expect(out.shape).toEqual([S, I]);
      const got = await out.read();
      const s = ulpStats(round, got, siluMulRef(x, S, I, round));
      // f32 sigmoid vs float64 moves a rounding only when a value sits within ~1e-7 of a midpoint: rare, one ulp.
      expect(s.worst, JSON.stringify(s)).toBeLessThanOrEqual(1);
      expect(s.exact, JSON.stringify(s)).toBeGreaterThanOrEqual(0.999);
      // The rounding points are visible: silu with one rounding instead of two (measured: 80 % identical, vs 100 %).
      const oneRounding = new Float64Array(S * I);
      for (let r = 0; r < S; r++) {
        for (let i = 0; i < I; i++) {
          const g = x[r * 2 * I + i];
          oneRounding[r * I + i] = roundAs(round, roundAs(round, g * sigmoidRef(g)) * x[r * 2 * I + I + i]);
        }
      }
      expect(ulpStats(round, got, oneRounding).exact).toBeLessThan(s.exact - 0.02);
    });
  }

  it('sigmoidGate gates o with the first quarter of gqkv (f32 and bf16)', async () => {
    const D = 1031;
    for (const round of ['none', 'bf16'] as const) {
      const g = acts(round, randn(31, S * 4 * D, 6)), o = acts(round, randn(32, S * D, 2));
      const got = await sigmoidGate(f32(g, [S, 4 * D], 'gqkv'), f32(o, [S, D], 'o'), { round }).read();
      const want = sigmoidGateRef(g, o, S, D, round);
      if (round === 'none') {
        // f32 exp and two roundings: 1e-6 relative.
        expectClose(got, want, 1e-7, 1e-6, 'sigmoidGate f32');
      } else {
        const s = ulpStats('bf16', got, want);
        // As for siluMul: two roundings, f32 vs float64 sigmoid near a midpoint at most one ulp, rarely.
        expect(s.worst, JSON.stringify(s)).toBeLessThanOrEqual(1);
        expect(s.exact, JSON.stringify(s)).toBeGreaterThanOrEqual(0.999);
      }
    }
  });

  it('names the shapes it needs', () => {
    expect(() => siluMul(f32(new Float32Array(6), [2, 3],
      'gu'))).toThrow(/\[siluMul\] gu 'gu' \[2, 3\] f32: last axis must be even/);
    expect(() => sigmoidGate(f32(new Float32Array(12), [1, 12], 'gqkv'), f32(new Float32Array(4), [1, 4], 'o')))
      .toThrow(new RegExp("\\[sigmoidGate\\] gqkv 'gqkv' \\[1, 12\\] f32 must be \\[\\.\\.\\., 4 \\* 4\\] " +
        "with the rows of o 'o' \\[1, 4\\] f32"));
    expect(() => siluMul(Tensor.from(gpu, new Float32Array(4), [2, 2], 'bf16', 'h'))).toThrow(DTypeError);
  });
});

describe('row ops (f32 inside)', () => {
  // Logit-like rows: scale 8 gives softmax mass spread over a few dozen entries.
  const widths = [1, 31, 33, 4099];
  const R = 5;

  for (const V of widths) {
    it(`softmax / log-softmax / logsumexp, V = ${V}`, async () => {
      const xv = randn(V, R * V, 8);
      const x = f32(xv, [R, V]);
      // exp / log of f32 arguments up to ~16 and a sum of V terms: 2e-6 relative (probabilities) and 1e-5
      // absolute on log-probabilities and lse (a few f32 ulps of values up to ~20).
      expectClose(await softmaxRows(x).read(), softmaxRowsRef(xv, V), 1e-7, 2e-6, 'softmax');
      expectClose(await logSoftmaxRows(x).read(), logSoftmaxRowsRef(xv, V), 1e-5, 1e-6, 'logSoftmax');
      const lse = logSumExpRows(x);
      expect(lse.shape).toEqual([R]);
      expectClose(await lse.read(), logSumExpRowsRef(xv, V), 1e-5, 1e-6, 'logSumExp');
    });
  }

  it('softmax and log-softmax with temperature 0.7 and 2', async () => {
    const V = 4099, xv = randn(5, R * V, 8);
    for (const temperature of [0.7, 2]) {
      // As above; x * f32(1/T) instead of x / T adds one f32 rounding to each scaled logit.
      expectClose(await softmaxRows(f32(xv, [R, V]), { temperature }).read(), softmaxRowsRef(xv, V, temperature), 1e-7,
        4e-6, `softmax T=${temperature}`);
      expectClose(await logSoftmaxRows(f32(xv, [R, V]), { temperature }).read(), logSoftmaxRowsRef(xv, V, temperature),
        2e-5, 1e-6, `logSoftmax T=${temperature}`);
    }
    expect(() => softmaxRows(f32(xv, [R, V]),
      { temperature: 0 })).toThrow(/\[softmaxRows\] temperature must be a positive/);
  });

  it('handles many rows and a 65536-wide row', async () => {
    const xv = randn(8, 512 * 33, 8);
    expectClose(await logSumExpRows(f32(xv, [512, 33])).read(), logSumExpRowsRef(xv, 33), 1e-5, 1e-6, 'lse 512 rows');
    const wide = randn(9, 2 * 65536, 8);
    expectClose(await logSumExpRows(f32(wide, [2, 65536])).read(), logSumExpRowsRef(wide, 65536), 1e-5, 1e-6,
      'lse V=65536');
    expect([...await argmaxRows(f32(wide, [2, 65536])).read()]).toEqual([...argmaxRowsRef(wide, 65536)]);
  });

  it('klRows: KL(P || Q) per row, exactly 0 for identical rows', async () => {
    for (const V of [33, 4099]) {
      const pv = randn(40 + V, R * V, 4);
      const noise = randn(41 + V, R * V, 0.5);
      const qv = pv.map((v, i) => v + noise[i]);
      const kl = await klRows(f32(pv, [R, V], 'p'), f32(qv, [R, V], 'q')).read();
      // A sum of V terms P (lp - lq) with f32 log-probs accurate to ~1e-6 absolute: 1e-6 absolute + 1e-4 relative.
      expectClose(kl, klRowsRef(pv, qv, V), 1e-6, 1e-4, `kl V=${V}`);
      // The same values give bitwise-identical log-probs on both sides, so every term is exactly zero.
      expect([...await klRows(f32(pv, [R, V], 'p'), f32(pv, [R, V], 'q')).read()]).toEqual(new Array(R).fill(0));
    }
    expect(() => klRows(f32([1, 2], [1, 2], 'p'),
      f32([1, 2], [2, 1], 'q'))).toThrow(/\[klRows\] shapes differ: p 'p' \[1, 2\] f32 vs q 'q' \[2, 1\] f32/);
  });

  it('argmaxRows: first index of the maximum, ties included', async () => {
    const V = 4099;
    const r = rng(5);
    const xv = randn(6, 6 * V, 8);
    // Row 0: tie at 17 and 4000 -> 17. Row 1: tie at 3 (lane 3) and 259 (also lane 3, later) -> 3.
    // Row 2: max at the last column. Row 3: max at column 0. Row 4: all equal -> 0.
    // Row 5: tie at 260 (lane 4) and 10 (lane 10): the reduction must compare indices, not lanes -> 10.
    xv[17] = xv[4000] = 100;
    xv[V + 259] = xv[V + 3] = 100;
    xv[2 * V + V - 1] = 100;
    xv[3 * V] = 100;
    xv.fill(-1.5, 4 * V, 5 * V);
    xv[5 * V + 260] = xv[5 * V + 10] = 50 + r();
    const got = await argmaxRows(f32(xv, [6, V])).read();
    expect(got).toBeInstanceOf(Uint32Array);
    expect([...got]).toEqual([17, 3, V - 1, 0, 0, 10]);
    expect([...got]).toEqual([...argmaxRowsRef(xv, V)]);
    // Width 1 and an odd small width.
    expect([...await argmaxRows(f32([3, -1, 7], [3, 1])).read()]).toEqual([0, 0, 0]);
    // A NaN anywhere in a row (first, middle past the maximum, last) gives no index.
    const withNan = randn(8, 4 * 300);
    withNan[0] = NaN; withNan[300 + 150] = NaN; withNan[900 - 1] = NaN;
    const want = [0xffffffff, 0xffffffff, 0xffffffff, argmaxRowsRef(withNan.subarray(900), 300)[0]];
    expect([...await argmaxRows(f32(withNan, [4, 300])).read()]).toEqual(want);
    expect([...argmaxRowsRef(withNan, 300)]).toEqual(want);
    const small = randn(7, 4 * 31);
    expect([...await argmaxRows(f32(small, [4, 31])).read()]).toEqual([...argmaxRowsRef(small, 31)]);
  });
});

describe('kernel pipelines', () => {
  it('a pipeline WebGPU rejects is reported at its op, not as the batch that used it', async () => {
    const a = Tensor.from(gpu, [1, 2], [2], 'f32', 'a');
    const out = Tensor.empty(gpu, [2], 'f32', 'out');
    // workgroup_size(0) is invalid: only pipeline creation can reject it.
    new Kernel('ops/elementwise.wgsl', 'add').dispatch(gpu, {
      label: 'bad-add', bindings: { a, b: a, out }, overrides: { WG: 0 }, workgroups: 1,
      uniforms: { n: 2, cols: 2, lda: 2, vocab: 0, row0: 0, rows: 0, scale: 0 },
    });
    const err = await gpu.flush('test').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GpuValidationError);
    expect((err as Error).message).toMatch(
      /^\[bad-add: pipeline ops\/elementwise\.wgsl:add \{WG=0\}\] WebGPU validation failed/);
    // The batch after it is clean again.
    const sum = add(a, a);
    expect(Array.from(await sum.read())).toEqual([2, 4]);
    a.dispose(); out.dispose(); sum.dispose();
  });
});
