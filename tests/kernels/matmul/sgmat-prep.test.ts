// The plain-WGSL halves of the subgroup-matrix matmul (sgmat_prep.wgsl), which run on every adapter: to_f16's row
// scaling, f16 values and flags, and sgmat_out's unscaling, rounding, residual and f32 fallback, with the
// tensor-core product in between done here in float64 over the f16 values the GPU wrote (exact products, as the
// tensor cores form them). The tensor-core kernel itself needs the feature (matmul-sgmat.test.ts).
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { ulpOf } from '../../../testkit/helpers/half-ulp.ts';
import { f16RowExponent } from '../../helpers/f16-rows.ts';
import { Kernel, grid } from '../../../src/kernels/kernel.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { roundBf16, roundF16 } from '../../../src/tensor/dtype.ts';
import { matmulRef } from '../../../src/kernels/matmul/matmul.ref.ts';
import { siluMul } from '../../../src/kernels/ops/ops.ts';

const TO_F16 = new Kernel('matmul/sgmat_prep.wgsl', 'to_f16');
const OUT = new Kernel('matmul/sgmat_prep.wgsl', 'sgmat_out');

describe('sgmat_prep: to_f16 and sgmat_out', async () => {
  const gpu = await getGpu();
  const M = 37, N = 29, K = 45, Kp = 48, Mp = 40, Np = 32;

  /** to_f16 over `rows` rows of v (bf16 when `bf16`), padded to `pad` rows; returns the f16 values, scales and flag. */
  async function prep(v: Float32Array, rows: number, pad: number, bf16: boolean) {
    const src = Tensor.from(gpu, v, [rows, K], bf16 ? 'bf16' : 'f32', 'src');
    const dst = Tensor.empty(gpu, [pad, Kp], 'f16', 'dst');
    const scale = Tensor.empty(gpu, [pad], 'i32', 'scale');
    const flag = Tensor.from(gpu, new Uint32Array(1), [1], 'u32', 'flag');
    const stats = Tensor.from(gpu, new Uint32Array(1), [1], 'u32', 'stats');
    TO_F16.dispatch(gpu, {
      bindings: { src, dst, scale, flag, stats }, overrides: { SRC_BF16: bf16 ? 1 : 0 }, workgroups: grid(gpu, pad, 1),
      uniforms: { rows, rows_pad: pad, K, Kp, N: 0, ldo: 0, col0: 0, Np: 0, epoch: 7, S: 0 },
    });
    // flag: 7 (the epoch) when flagged
    const r = { h: (await dst.read()) as Float32Array, scale: (await scale.read()) as Int32Array,
      flag: (await flag.read())[0], rows: (await stats.read())[0] };
    for (const t of [src, dst, scale, flag, stats]) t.dispose();
    return r;
  }

  /** Row r's values as to_f16 must write them: scaled by 2^(14 - floor(log2 max|row|)), rounded to f16, 0-padded. */
  function expectRows(v: Float32Array, rows: number, pad: number, r: { h: Float32Array; scale: Int32Array }) {
    for (let i = 0; i < pad; i++) {
      const row = i < rows ? v.subarray(i * K, (i + 1) * K) : new Float32Array(K);
      const e = f16RowExponent(row);
      expect(r.scale[i], `scale exponent of row ${i}`).toBe(e);
      const s = 2 ** e;
      for (let k = 0; k < Kp; k++) {
        const want = k < K && Number.isFinite(row[k]) ? roundF16(row[k] * s) : 0;
        if (r.h[i * Kp + k] !== want) expect(r.h[i * Kp + k], `row ${i}, k ${k}`).toBe(want);
      }
    }
  }

  const xv = randn(1, M * K, 3).map(roundBf16), wv = randn(2, N * K, 0.1).map(roundBf16);
  xv[5 * K + 3] = 327680; xv[6 * K + 1] = roundBf16(1e-30); xv.fill(2 ** -100, 7 * K, 8 * K); wv[4 * K] = 200;

  it('scales each row by its own power of two: bf16 data of any range is taken whole, x and weights', async () => {
    const x = await prep(xv, M, Mp, false);
    expectRows(xv, M, Mp, x);
    expect([x.flag, x.rows]).toEqual([0, 0]);
    const w = await prep(wv, N, Np, true);
    expectRows(wv, N, Np, w);
    expect([w.flag, w.rows]).toEqual([0, 0]);
  });

  it('flags rows holding values f16 cannot take (not bf16, inf, NaN)', async () => {
    const v = xv.slice();
    v[2 * K + 4] = 1 + 2 ** -20; v[9 * K] = Infinity; v[11 * K + 44] = NaN;
    const r = await prep(v, M, Mp, false);
    expect([r.flag, r.rows]).toEqual([7, 3]);
    expectRows(v, M, Mp, r);
  });

  /**
   * sgmat_out over C = (f16 x) @ (f16 w)^T formed here, as call 9: the call's flag holds 9 ('call') or another
   * call's 8, the weight's 1 ('weight') or 0. `S` slabs: slab z holds the f32 partial sums over K slice z of 16 *
   * ceil(Kp / 16 / S) columns, as the tensor-core kernel's split-K writes them. `swiglu`: w's rows are gate then up.
   */
  async function out(fallback: 'call' | 'weight' | null,
    o: { acc?: Float32Array; wv?: Float32Array; S?: number; swiglu?: boolean } = {}) {
    const wvals = o.wv ?? wv, n = wvals.length / K, np = Math.ceil(n / 16) * 16, S = o.S ?? 1;
    const cols = o.swiglu ? n / 2 : n;
    const x = await prep(xv, M, Mp, false), w = await prep(wvals, n, np, true);
    const c = new Float32Array(S * Mp * np), Ks = 16 * Math.ceil(Kp / 16 / S);
    for (let z = 0; z < S; z++) for (let m = 0; m < Mp; m++) for (let j = 0; j < np; j++) {
      let s = 0;
      for (let k = z * Ks; k < Math.min(Kp, (z + 1) * Ks); k++) s += x.h[m * Kp + k] * w.h[j * Kp + k];
      c[(z * Mp + m) * np + j] = s;
    }
    const t = {
      // A flagged call must not read the sums at all: they are NaN then.
      c: Tensor.from(gpu, fallback ? c.fill(NaN) : c, [S * Mp, np], 'f32', 'c'), sx: Tensor.from(gpu, x.scale, [Mp],
        'i32', 'sx'), sw: Tensor.from(gpu, w.scale, [np], 'i32', 'sw'),
      flag: Tensor.from(gpu, new Uint32Array([fallback === 'call' ? 9 : 8]), [1], 'u32', 'flag'),
      wflag: Tensor.from(gpu, new Uint32Array([fallback === 'weight' ? 1 : 0]), [1], 'u32', 'wflag'),
      x: Tensor.from(gpu, xv, [M, K], 'f32', 'x'), w: Tensor.from(gpu, wvals, [n, K], 'bf16', 'w'),
      out: Tensor.from(gpu, o.acc ?? new Float32Array(M * (cols + 3)), [M, cols + 3], 'f32', 'out'),
    };
    OUT.dispatch(gpu, {
      bindings: t, overrides: { ROUND: 1, ACC: o.acc ? 1 : 0, SWIGLU: o.swiglu ? 1 : 0 }, workgroups: grid(gpu,
        M * cols, 256),
      uniforms: { rows: M, rows_pad: Mp, K, Kp, N: n, ldo: cols + 3, col0: 3, Np: np, epoch: 9, S },
    });
    const got = await t.out.read();
    for (const v of Object.values(t)) v.dispose();
    return got;
  }

  for (const fallback of [null, 'call', 'weight'] as const) {
    it(`sgmat_out ${fallback ? `in f32 (flagged ${fallback})` : 'from the tensor-core sums'}: within 1 bf16 ulp of `
      + `float64, residual added`, async () => {
      const want = matmulRef(xv, wv, M, N, K, 'bf16');
      const acc = randn(3, M * (N + 3), 2).map(roundBf16);
      for (const a of [undefined, acc]) {
        const got = await out(fallback, { acc: a });
        let bad = 0;
        for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
          const g = got[m * (N + 3) + 3 + n];
          const wnt = a ? roundBf16(a[m * (N + 3) + 3 + n] + want[m * N + n]) : want[m * N + n];
          if (!(Math.abs(g - wnt) <= ulpOf('bf16', wnt)) || roundBf16(g) !== g) bad++;
        }
        expect(bad, `outputs off by more than 1 ulp (accumulate: ${Boolean(a)})`).toBe(0);
        // Columns before col0 are left alone.
        for (let m = 0; m < M; m++) expect(got[m * (N + 3)]).toBe(a ? a[m * (N + 3)] : 0);
      }
    });
  }

  it('sgmat_out adds the split-K slabs: 2, 3 and 4 slices (Kp = 48: 32 + 16, 3 x 16, and an empty fourth)',
    async () => {
    // Each slab alone is a partial sum far from the product: a slab left out or read at the wrong place fails.
    // An empty slice's slab is all zeros, as the tensor-core kernel stores it.
    const want = matmulRef(xv, wv, M, N, K, 'bf16');
    for (const S of [2, 3, 4]) {
      const got = await out(null, { S });
      let bad = 0;
      for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
        const g = got[m * (N + 3) + 3 + n];
        if (!(Math.abs(g - want[m * N + n]) <= ulpOf('bf16', want[m * N + n])) || roundBf16(g) !== g) bad++;
      }
      expect(bad, `${S} slices: outputs off by more than 1 ulp`).toBe(0);
    }
  });

  // Gate rows then up rows, I = 15 (odd): the fused output must equal sgmat_out's product followed by ops' siluMul.
  const I = 15, gu = randn(4, 2 * I * K, 0.3).map(roundBf16);
  for (const fallback of [null, 'call'] as const) {
    it(`sgmat_out SWIGLU ${fallback ? 'in f32 (flagged call)' : 'over 2 slabs'}: bit for bit the product then siluMul`,
      async () => {
      const S = fallback ? 1 : 2;
      const prod = await out(fallback, { wv: gu, S });
      const got = await out(fallback, { wv: gu, S, swiglu: true });
      // The product's columns without the 3 left untouched before col0.
      const dense = new Float32Array(M * 2 * I);
      for (let m = 0; m < M; m++) dense.set(prod.subarray(m * (2 * I + 3) + 3, (m + 1) * (2 * I + 3)), m * 2 * I);
      const t = Tensor.from(gpu, dense, [M, 2 * I], 'f32', 'gu');
      const r = siluMul(t, { round: 'bf16' });
      const ref = await r.read();
      t.dispose(); r.dispose();
      let bad = 0, first = -1;
      for (let m = 0; m < M; m++) for (let i = 0; i < I; i++) {
        if (!Object.is(got[m * (I + 3) + 3 + i], ref[m * I + i])) { bad++; if (first < 0) first = m * I + i; }
      }
      expect(bad,
        `first at ${first}: ${got[Math.floor(first / I) * (I + 3) + 3 + first % I]} vs ${ref[first]}`).toBe(0);
      for (let m = 0; m < M; m++) expect(got[m * (I + 3)]).toBe(0);
    });
  }
});
