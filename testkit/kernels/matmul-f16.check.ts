// matmulF16 checked against the float64 reference and MLX's f16 matmul, runnable in any runtime (no vitest): Deno
// runs it where Node's adapter lacks shader-f16 (tests/kernels/matmul/deno-matmul-f16.ts); the vitest file asserts on
// the
// report it returns.
//
// Tolerance. The kernel sums K products in f32 (each exact for f16 x bf16/f16 weights, one rounding for f32
// weights), in some order: within gamma_K = (K + 1) u of the exact sum times sum |x w| (Higham 3.1, u = 2^-24).
// An f32 output must lie within that of the float64 sum; a rounded output (f16, or bf16/f16 kept in f32) within that
// plus half an ulp of its dtype, and must be a value of the dtype. That bound holds for every element and fails a
// wrong kernel; the MLX criterion sits on top: >= 99.9 % of f16 outputs within 1 f16 ulp of the correctly rounded
// sum (the f32 error moves a result only when the exact sum lies within ~1e-6 relative of a rounding midpoint).
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { roundBf16, roundF16 } from '../../src/tensor/dtype.ts';
import { matmulF16, type MatmulF16Options } from '../../src/kernels/matmul/matmul-f16.ts';
import { matmulAbsRef, matmulRef } from '../../src/kernels/matmul/matmul.ref.ts';
import { randn } from '../helpers/seeded.ts';
import { ulpOf, ulpStats } from '../helpers/half-ulp.ts';
import { FIXTURES } from '../helpers/fixtures.ts';
import { SafetensorsFile } from '../../src/io/safetensors.ts';
import { fileSource } from '../../src/io/sources.ts';
import type { ParityCase } from '../hrm/parity.check.ts';

type WDType = 'f32' | 'bf16' | 'f16';
const U = 2 ** -24;

export interface CaseResult { name: string; outputs: number; failure: string | null }
export interface F16Report {
  cases: CaseResult[];
  /** f16 outputs of the seeded cases against the correctly rounded float64 sum. */
  f16Outputs: number;
  within1: number;
  exact: number;
  worstUlp: number;
  /** MLX fixture (matmul.f16: a [7,320] @ b [192,320]^T), per path: fraction within 1 f16 ulp and worst distance. */
  mlx: Array<{ path: string; within1: number; worst: number }>;
  ms: number;
}

const asDtype = (dt: WDType,
  v: Float32Array): Float32Array => (dt === 'bf16' ? v.map(roundBf16) : dt === 'f16' ? v.map(roundF16) : v);

/** null when every element of got lies within the bound described at the top; else the first one outside. */
function firstMiss(got: ArrayLike<number>, exact: Float64Array, abs: Float64Array, K: number, N: number,
  dt: 'bf16' | 'f16' | null): string | null {
  for (let i = 0; i < exact.length; i++) {
    const half = dt ? 0.5 * Math.max(ulpOf(dt, got[i]), ulpOf(dt, exact[i])) : 0;
    const tol = (K + 1) * U * abs[i] + half + 1e-30;
    const d = Math.abs(got[i] - exact[i]);
    const where = `[${Math.floor(i / N)}, ${i % N}]`;
    if (!(d <= tol)) return `first mismatch at ${where}: got ${got[i]}, exact ${exact[i]} (|diff| ${d} > ${tol})`;
    if (dt && (dt === 'f16' ? roundF16(got[i]) : roundBf16(got[i])) !== got[i]) {
      return `${where} = ${got[i]} is not a ${dt} value (no rounding)`;
    }
  }
  return null;
}

/**
 * `full` runs every weight dtype at every seeded shape (bench/parity.ts on the GPU machine, or HRM_EXHAUSTIVE=1);
 * else each shape in one weight dtype by turns, each dtype on every K (a CPU driver compiles and runs it slowly).
 * `fixtures`: the folder of MLX's ops.safetensors (a bundle, such as bench/parity.ts's, passes it from the cwd).
 * `mlxOnly`: only MLX's fixture, on both paths (a second runtime's check where the first ran the seeded cases).
 */
export async function checkMatmulF16(gpu: Gpu, full = false, fixtures = FIXTURES, mlxOnly = false): Promise<F16Report> {
  const t0 = performance.now();
  const cases: CaseResult[] = [];
  const f16Got: number[] = [];
  const f16Want: number[] = [];
  /** Runs one call and records whether it meets the bound; xv/wv are the stored values. */
  const run = async (name: string, x: Tensor, w: Tensor | Tensor[], xv: Float32Array, wv: Float32Array,
    opts: MatmulF16Options) => {
    const K = x.shape[x.rank - 1], M = x.size / K, N = wv.length / K;
    const out = matmulF16(x, w, opts);
    const got = await out.read();
    out.dispose();
    const exact = matmulRef(xv, wv, M, N, K);
    const dt = opts.out === 'f32' ? (opts.round === 'none' || !opts.round ? null : opts.round) : 'f16';
    let failure = out.dtype !== (opts.out ?? 'f16') ? `output dtype ${out.dtype}` : firstMiss(got, exact,
      matmulAbsRef(xv, wv, M, N, K), K, N, dt);
    if (!failure && out.shape.join() !== [...x.shape.slice(0, -1), N].join()) failure = `output shape [${out.shape}]`;
    if (dt === 'f16') for (let i = 0; i < got.length; i++) { f16Got.push(got[i]); f16Want.push(roundF16(exact[i])); }
    cases.push({ name, outputs: got.length, failure });
    return got;
  };

  if (!mlxOnly) await seededCases(gpu, full, run);
  const mlx = await mlxCases(fixtures, gpu, run);
  const s = ulpStats('f16', f16Got, f16Want);
  return { cases, f16Outputs: f16Got.length, within1: s.within1, exact: s.exact, worstUlp: s.worst, mlx,
    ms: performance.now() - t0 };
}

type Run = (name: string, x: Tensor, w: Tensor | Tensor[], xv: Float32Array, wv: Float32Array,
  opts: MatmulF16Options) => Promise<ArrayLike<number>>;

/** The seeded shapes, settings and chunkings (see checkMatmulF16's `full`). */
async function seededCases(gpu: Gpu, full: boolean, run: Run): Promise<void> {
  // Odd K (word-by-word path, rows straddling words), K % 8 == 0 (vec4 loads for every weight dtype), K % 4 == 0
  // only (vec4 for f32 weights, words for halves); M = 37 spans 10 blocks of 4 rows on the gemv path and partial
  // 64-row tiles on the tiled one; N = 70 a partial 64-column tile.
  for (const [i, M] of [1, 3, 37].entries()) {
    for (const [j, K] of [33, 64, 257, 260].entries()) {
      for (const [k, N] of [31, 70].entries()) {
        const xv = asDtype('f16', randn(M * 7919 + K * 31 + N, M * K));
        const x = Tensor.from(gpu, xv, [M, K], 'f16', 'x');
        for (const dt of (['f32', 'bf16', 'f16'] as const).filter((_, d) => full || (i + j + k) % 3 === d)) {
          const wv = asDtype(dt, randn(M + K * 131 + N * 17 + dt.length, N * K));
          const w = Tensor.from(gpu, wv, [N, K], dt, 'w');
          for (const path of ['gemv', 'tiled'] as const) {
            for (const out of ['f16', 'f32'] as const) {
              await run(`[${M},${K}] @ ${dt} [${N},${K}]^T -> ${out} (${path})`, x, w, xv, wv, { out, path });
            }
          }
          w.dispose();
        }
        x.dispose();
      }
    }
  }

  // One setting varied at a time from [3, 64] @ bf16 [70, 64]^T.
  const xv = asDtype('f16', randn(11, 5 * 64)), wv = asDtype('bf16', randn(12, 100 * 64));
  const x = Tensor.from(gpu, xv.subarray(0, 3 * 64), [3, 64], 'f16', 'x');
  const w = Tensor.from(gpu, wv.subarray(0, 70 * 64), [70, 64], 'bf16', 'w');
  for (const round of ['bf16', 'f16'] as const) await run(`f32 output rounded to ${round}`, x, w,
    xv.subarray(0, 3 * 64), wv.subarray(0, 70 * 64), { out: 'f32', round });
  await run('leading axes [1, 3, 64] -> [1, 3, 70]', x.reshape([1, 3, 64]), w, xv.subarray(0, 3 * 64),
    wv.subarray(0, 70 * 64), {});
  // A view starting 2 rows in (256 bytes: the storage offset alignment of common adapters) keeps the vec4 path.
  const big = Tensor.from(gpu, xv, [5, 64], 'f16', 'x5');
  if ((2 * 64 * 2) % gpu.storageAlign === 0) await run('x as a view at row 2', big.rows(2, 3), w, xv.subarray(2 * 64),
    wv.subarray(0, 70 * 64), { path: 'gemv' });
  const tall = asDtype('f16', randn(13, 100 * 64));
  await run('auto path, M = 100 (tiled)', Tensor.from(gpu, tall, [100, 64], 'f16', 'x100'), w, tall,
    wv.subarray(0, 70 * 64), {});

  // Row-chunked weights: chunks of 40, 33 and 27 rows (f16 outputs of the last chunk start at an odd column, and
  // with odd K its rows start at the other half of a word than in the whole weight).
  for (const [d, dt] of (['f32', 'bf16', 'f16'] as const).entries()) {
    for (const [M, K] of ([[1, 64], [3, 33], [37, 96]] as const).filter((_, i) => full || i === d)) {
      const cx = asDtype('f16', randn(900 + M + K, M * K)), cw = asDtype(dt, randn(901 + M + K, 100 * K));
      const xt = Tensor.from(gpu, cx, [M, K], 'f16', 'x');
      const chunks = [[0, 40], [40, 73],
        [73, 100]].map(([a, b], i) => Tensor.from(gpu, cw.subarray(a * K, b * K), [b - a, K], dt, `w${i}`));
      for (const path of ['gemv', 'tiled'] as const) {
        for (const out of ['f16', 'f32'] as const) {
          await run(`chunks of ${dt} [100,${K}], M = ${M} -> ${out} (${path})`, xt, chunks, cx, cw, { out, path });
        }
      }
      for (const t of [xt, ...chunks]) t.dispose();
    }
  }

}

/** MLX's own f16 matmul (CPU backend: f32 accumulation, one rounding), on both paths. */
async function mlxCases(fixtures: string, gpu: Gpu, run: Run): Promise<F16Report['mlx']> {
  const f = await SafetensorsFile.open(fileSource(`${fixtures}ops.safetensors`));
  const a = await f.array('matmul.f16.a') as Float32Array, b = await f.array('matmul.f16.b') as Float32Array;
  const want = await f.array('matmul.f16.out') as Float32Array;
  const ma = Tensor.from(gpu, await f.bytes('matmul.f16.a'), [7, 320], 'f16', 'a');
  const mb = Tensor.from(gpu, await f.bytes('matmul.f16.b'), [192, 320], 'f16', 'b');
  const mlx: F16Report['mlx'] = [];
  for (const path of ['gemv', 'tiled'] as const) {
    const got = await run(`MLX fixture a [7,320] @ b [192,320]^T (${path})`, ma, mb, a, b, { path });
    const s = ulpStats('f16', got, want);
    mlx.push({ path, within1: s.within1, worst: s.worst });
  }
  return mlx;
}

/**
 * The report as bench/parity.ts's cases: the bounds the vitest file asserts
 * (tests/kernels/matmul/matmul-f16.test.ts).
 */
export function f16ParityCases(r: F16Report): ParityCase[] {
  const failed = r.cases.filter((c) => c.failure).length;
  const out: ParityCase[] = [
    { name: `matmulF16: cases outside the f32 sum bound, of ${r.cases.length}`, value: failed, bound: 0, ok: !failed },
    { name: 'matmulF16: f16 outputs past 1 ulp', value: 1 - r.within1, bound: 0.001, ok: r.within1 >= 0.999 },
  ];
  for (const m of r.mlx) {
    const ok = m.worst <= 1 && m.within1 >= 0.999;
    out.push({ name: `matmulF16 vs MLX (${m.path}): worst ulp, ${m.within1} within 1`, value: m.worst, bound: 1, ok });
  }
  return out;
}
