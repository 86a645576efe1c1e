// The subgroup-matrix (tensor-core) matmul checked against the float64 reference, the tiled kernel and MLX, runnable
// without vitest: the vitest file asserts on the report where the adapter has subgroup matrices, and the H200 bench
// (bench --check-sgmat) stores it in its JSON, since no machine of CI has them.
//
// Criterion, per case: every output a bf16 value, within 1 bf16 ulp plus the f32 summation bound K * 2^-24 *
// sum |x * w| of the correctly rounded float64 sum (one rounding of an f32 sum of exact products: the summation
// order, which the tensor cores choose, moves an output by up to that bound, more than an ulp where the sum
// cancels), and >= 99.9 % of the outputs of all cases together equal to it or 1 ulp off, the kernel rule. Also per
// case: how many rows held a value the f16 path cannot take (stats[0]; their call then
// computes in f32): bf16 data of any range must have none (each row is scaled into f16's range), data that is
// not bf16 or not finite must have some and still meet the criterion.
// Every case runs under each schedule of the tensor-core kernels (sgmat-schedule.ts: the default, then the direct
// kernel with operand prefetch off and on x split-K 1, 2, 4, and the staged kernel (where it runs) x split-K 1, 2,
// 4; a split is capped by K's blocks): a schedule changes the summation order only, so each must meet the same
// criterion; `schedules` tallies them.
// Quantized weights (4 and 8 bits, group 64) take the same path through qlinear (dequantDense, then the tensor
// cores): the reference multiplies the weights as MLX's qmm dequantizes them into bf16, under the same criterion.
import { Gpu } from '../../src/kernels/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import type { SafetensorsFile } from '../../src/io/safetensors.ts';
import { roundBf16 } from '../../src/tensor/dtype.ts';
import { matmul, type MatmulOptions } from '../../src/kernels/matmul/matmul.ts';
import { siluMul } from '../../src/kernels/ops/ops.ts';
import { rmsNorm } from '../../src/kernels/rmsnorm/rmsnorm.ts';
import { sgmatStats } from '../../src/kernels/matmul/sgmat-weights.ts';
import { sgmatUnavailable, stagedUnavailable } from '../../src/kernels/matmul/sgmat-caps.ts';
import type { SgmatSchedule } from '../../src/kernels/matmul/sgmat-schedule.ts';
import { kernelPolicy } from '../../src/kernels/plan/options.ts';
import { sgmatPlan } from '../../src/kernels/plan/matmul.ts';
import { matmulAbsRef, matmulFusedRef, type FusedRefOptions } from '../../src/kernels/matmul/matmul.ref.ts';
import { qlinear, type QuantMatrix } from '../../src/kernels/qlinear/qlinear.ts';
import { dequantizeRef, quantizeRef } from '../../src/kernels/quant/quant.ref.ts';
import { uploadQuant } from '../helpers/quant-weight.ts';
import { randn } from '../helpers/seeded.ts';
import { ulpOf, ulpStats } from '../helpers/half-ulp.ts';

export interface SgmatCase {
  name: string; outputs: number; worstUlp: number; within1: number; fallbackRows: number; failure: string | null;
}
export interface SgmatScheduleTally {
  schedule: string; passed: number; failed: number; within1: number; worstUlp: number;
}
export interface SgmatReport {
  /** Every case under every schedule (the schedule in brackets after the case's name). */
  cases: SgmatCase[];
  schedules: SgmatScheduleTally[];
  passed: number;
  failed: number;
  /** Over every output of every case, against the correctly rounded float64 result. */
  outputs: number;
  exact: number;
  within1: number;
  worstUlp: number;
  /** MLX's bf16 matmul (ops.safetensors matmul.bf16: a [7,320] @ b [192,320]^T) through path 'sgmat'. */
  mlx: { within1: number; worst: number } | null;
  ms: number;
}

/** bf16 values: data the f16 path takes whole (no fallback). */
const bf = (v: Float32Array): Float32Array => v.map(roundBf16);

/** Distance in bf16 ulps of `want`; 0 when both are NaN, Infinity when only one is. */
function ulps(got: number, want: number): number {
  if (Number.isNaN(got) || Number.isNaN(want)) return Number.isNaN(got) && Number.isNaN(want) ? 0 : Infinity;
  return Math.abs(got - want) / ulpOf('bf16', want);
}

export async function checkSgmat(gpu: Gpu, mlx?: SafetensorsFile): Promise<SgmatReport> {
  const outer = gpu;
  const t0 = performance.now();
  const stats = sgmatStats(gpu);
  const cases: SgmatCase[] = [];
  let n = 0, exact = 0, within = 0, worst = 0;
  const slices = async (g: Gpu) => (await (g === gpu ? stats : sgmatStats(g)).read())[0];
  /** The schedule the cases run under (each call names it: MatmulOptions.sgmat). */
  let schedule: SgmatSchedule | undefined;
  /**
   * One call through path 'sgmat' against matmulFusedRef; `fallback` says whether rows the f16 path cannot take are
   * expected.
   */
  const run = async (name: string, M: number, N: number, K: number, xv: Float32Array, wIn: Float32Array,
    o: { chunks?: number[]; fused?: FusedRefOptions; fallback: boolean; bits?: number; gpu?: Gpu; scale?: [number,
    number] }) => {
    const gpu = o.gpu ?? outer;
    const x = Tensor.from(gpu, xv, [M, K], 'f32', 'x');
    const bounds = [0, ...(o.chunks ?? []), N];
    // With `bits`: the weight quantized (group 64, bf16 scales), and the reference's weight its bf16 dequantization.
    const q = o.bits ? quantizeRef(wIn, N, K, { bits: o.bits, groupSize: 64, round: 'bf16' }) : null;
    if (q && o.scale) q.scales[o.scale[0]] = o.scale[1];   // [group, value]: one group's scale replaced
    const wv = q ? dequantizeRef(q.q, q.scales, q.biases, N, K, { bits: o.bits!, groupSize: 64, round: 'bf16' }) : wIn;
    const qm: QuantMatrix | null = q && uploadQuant(gpu, q, K, o.bits!, 64, 'bf16', bounds);
    const w = qm ? qm.q : bounds.slice(1).map((b, i) => Tensor.from(gpu, wv.subarray(bounds[i] * K, b * K),
      [b - bounds[i], K], 'bf16', `w${i}`));
    const f = o.fused ?? {};
    const acc = f.accumulate ? Tensor.from(gpu, Float32Array.from(f.accumulate), [M, N], 'f32', 'acc') : undefined;
    const norm = f.norm === undefined ? undefined : { eps: f.norm };
    const opts: MatmulOptions = {
      round: 'bf16', path: 'sgmat', sgmat: schedule, norm, swiglu: f.swiglu, accumulate: acc,
    };
    const before = await slices(gpu);
    const out = qm ? qlinear(x, qm, opts) : matmul(x, w.length === 1 ? w[0] : w, opts);
    const got = await out.read();
    const fallbackRows = (await slices(gpu)) - before;
    // SwiGLU is bit for bit matmul then siluMul: with one weight tensor (fused into sgmat_out) it must equal that
    // composition on the GPU. (Against float64 an ulp that the f32 sum moves in gate or up can become two after
    // the product, beyond this criterion's bound: the composed matmul's own rows check the sums.)
    let composedOff = -1;
    if (f.swiglu && w.length === 1) {
      const gu = qm ? qlinear(x, qm, { ...opts, swiglu: false }) : matmul(x, w[0], { ...opts, swiglu: false });
      const composed = siluMul(gu, { round: 'bf16' });
      const c = await composed.read();
      composedOff = got.findIndex((v, i) => !Object.is(v, c[i]));
      gu.dispose(); composed.dispose();
    }
    // The norm's own rounding (rmsNorm, checked in its tests) moves a normalised x by an ulp at times, which the
    // matmul then amplifies wherever its sum cancels: the reference multiplies the x the GPU normalised.
    const xr = f.norm === undefined ? xv : await rmsNorm(x, { eps: f.norm, round: 'bf16' }).read();
    const want = matmulFusedRef(xr, wv, M, N, K, { ...f, norm: undefined, round: 'bf16' });
    // The f32 summation bound of each output's dot product (swiglu pairs: the larger of its two).
    const abs = matmulAbsRef(xr, wv, M, N, K);
    const cols = got.length / M;
    const bound = (i: number) => {
      const m = Math.floor(i / cols), n = i % cols;
      const a = f.swiglu ? Math.max(abs[m * N + n], abs[m * N + cols + n]) : abs[m * N + n];
      return K * 2 ** -24 * a;
    };
    let caseWorst = 0, caseWithin = 0, over = -1;
    for (let i = 0; i < got.length; i++) {
      const d = ulps(got[i], want[i]);
      if (d === 0) exact++;
      if (d <= 1) caseWithin++;
      if (!(d <= caseWorst)) caseWorst = d;
      if (over < 0 && !(Math.abs(got[i] - want[i]) <= ulpOf('bf16', want[i]) + bound(i)) &&
        !(Number.isNaN(got[i]) && Number.isNaN(want[i]))) over = i;
    }
    let failure: string | null = null;
    const unrounded = got.findIndex((v) => roundBf16(v) !== v && !Number.isNaN(v));
    if (unrounded >= 0) failure = `output ${unrounded} = ${got[unrounded]} is not a bf16 value`;
    else if (composedOff >= 0) failure = `output ${composedOff} differs from matmul then siluMul`;
    else if (over >= 0 && !(f.swiglu && w.length === 1)) {
      failure = `output ${over}: got ${got[over]}, want ${want[over]} (${ulps(got[over], want[over])} ulp, ` +
        `beyond 1 ulp + the f32 summation bound ${bound(over)})`;
    } else if (o.fallback !== fallbackRows > 0) {
      failure = `${fallbackRows} rows held values the f16 path cannot take ` +
        `(expected ${o.fallback ? 'some' : 'none'})`;
    }
    n += got.length;
    within += caseWithin;
    worst = Math.max(worst, caseWorst);
    cases.push({ name, outputs: got.length, worstUlp: caseWorst, within1: caseWithin / got.length, fallbackRows,
      failure });
    for (const t of [x, ...w, ...(qm ? [...qm.scales, ...qm.biases] : []), out]) t.dispose();
  };

  /** The cases, each one call; `tag` names the schedule they run under. */
  const all = async (tag: string) => {
    // Odd and tile-straddling shapes: M and N off the 64-tile, K off the 32-slice and odd (bf16 rows straddle words).
    for (const [M, N, K] of [[64, 64, 64], [1, 5, 3], [100, 70, 45], [130, 200, 333], [65, 129, 1536], [256, 96, 97]]) {
      const seed = M * 7919 + N * 31 + K;
      await run(`[${M},${K}] @ [${N},${K}]^T ${tag}`, M, N, K, bf(randn(seed, M * K, 4)),
        bf(randn(seed + 1, N * K, 0.1)), { fallback: false });
    }
    // Row-chunked weights (chunks start mid-tile of the output: col0 28 and 91), and the fusions matmul() routes
    // around the kernel (norm first, swiglu after) or into its epilogue (accumulate).
    const M = 77, N = 130, K = 96;
    const xv = bf(randn(5, M * K, 3)), wv = bf(randn(6, N * K, 0.2)), rv = bf(randn(7, M * N, 2));
    await run(`chunks of 28, 63 and 39 rows ${tag}`, M, N, K, xv, wv, { chunks: [28, 91], fallback: false });
    await run(`accumulate (residual epilogue) ${tag}`, M, N, K, xv, wv, { fused: { accumulate: rv }, fallback: false });
    await run(`norm ${tag}`, M, N, K, xv, wv, { fused: { norm: 1e-5 }, fallback: false });
    await run(`swiglu (fused into sgmat_out, I = 65) ${tag}`, M, N, K, xv, wv,
      { fused: { swiglu: true }, fallback: false });
    await run(`swiglu, chunks (matmul then siluMul) ${tag}`, M, N, K, xv, wv,
      { chunks: [28, 91], fused: { swiglu: true }, fallback: false });
    await run(`chunks + accumulate ${tag}`, M, N, K, xv, wv,
      { chunks: [28, 91], fused: { accumulate: rv }, fallback: false });
    // Odd sizes for the fused SwiGLU (M off the tile, K off 16, I = 35 odd) and for the residual under a split
    // whose slices are uneven (K 333: 21 steps of 16, slices of 11 + 10 or 6 + 6 + 6 + 3).
    const xs = bf(randn(9, 100 * 45, 2)), ws = bf(randn(10, 70 * 45, 0.3));
    await run(`swiglu [100,45] @ [70,45]^T ${tag}`, 100, 70, 45, xs, ws, { fused: { swiglu: true }, fallback: false });
    await run(`swiglu, x not bf16 (f32 fallback) ${tag}`, 100, 70, 45, randn(11, 100 * 45, 2), ws,
      { fused: { swiglu: true }, fallback: true });
    await run(`accumulate [70,333] @ [90,333]^T ${tag}`, 70, 90, 333, bf(randn(12, 70 * 333, 2)),
      bf(randn(13, 90 * 333, 0.1)),
      { fused: { accumulate: bf(randn(14, 70 * 90, 3)) }, fallback: false });
    // Tiny and huge bf16 values (each row is scaled by its own power of two: no fallback), then values f16 cannot
    // hold at any scale: x not bf16 at all, a NaN.
    const odd = xv.slice(), wodd = wv.slice();
    odd[3 * K + 5] = roundBf16(1e-30); odd[40 * K + 50] = 327680; wodd[7 * K + 70] = 2 ** -30; wodd[100 * K + 2] = 200;
    odd[60 * K + 1] = roundBf16(1e30); odd.fill(2 ** -100, 70 * K, 71 * K);
    await run(`tiny and huge values ${tag}`, M, N, K, odd, wodd, { fallback: false });
    await run(`x not bf16 (f32 values) ${tag}`, M, N, K, randn(8, M * K, 3), wv, { fallback: true });
    const nan = xv.slice();
    nan[10 * K + 33] = NaN;
    await run(`a NaN in x (its row becomes NaN) ${tag}`, M, N, K, nan, wv, { fallback: true });
    // Quantized weights (K a whole number of groups): plain, chunked, and each fusion.
    const wq = randn(15, N * 128, 0.2);
    const xq = bf(randn(16, M * 128, 3));
    for (const bits of [4, 8]) {
      await run(`q${bits} weights [${M},128] @ [${N},128]^T ${tag}`, M, N, 128, xq, wq, { bits, fallback: false });
      await run(`q${bits} weights, chunks + accumulate ${tag}`, M, N, 128, xq, wq,
        { bits, chunks: [28, 91], fused: { accumulate: rv }, fallback: false });
      await run(`q${bits} weights, norm ${tag}`, M, N, 128, xq, wq, { bits, fused: { norm: 1e-5 }, fallback: false });
      await run(`q${bits} weights, swiglu ${tag}`, M, N, 128, xq, wq,
        { bits, fused: { swiglu: true }, fallback: false });
      // A group whose scale is infinite: its dense copy holds values f16 cannot take, which flag the call itself.
      await run(`q${bits} weights, an infinite scale (the call's f32 fallback) ${tag}`, M, N, 128, xq, wq,
        { bits, scale: [37, Infinity], fallback: true });
    }
  };

  const schedules: SgmatScheduleTally[] = [];
  const was = kernelPolicy(gpu).sgmat;
  try {
    const each: SgmatSchedule[] = [was];
    for (const pipe of [false, true]) for (const splitK of [1, 2, 4] as const) each.push({ kernel: 'direct',
      pipe, splitK });
    if (stagedUnavailable(gpu) === null) for (const splitK of [1, 2, 4] as const) each.push({ kernel: 'staged',
      pipe: false, splitK });
    for (const sch of each) {
      schedule = sch;
      const form = sgmatPlan(gpu, sch).kernel === 'direct' ? `direct, pipe ${sch.pipe ? 'on' : 'off'}` : 'staged';
      const tag = `[${sch === was ? 'default: ' : ''}${form}, split-K ${sch.splitK}]`;
      const from = cases.length;
      await all(tag);
      const mine = cases.slice(from), outs = mine.reduce((a, c) => a + c.outputs, 0);
      const failedHere = mine.filter((c) => c.failure).length;
      schedules.push({
        schedule: tag, passed: mine.length - failedHere, failed: failedHere,
        within1: mine.reduce((a, c) => a + c.within1 * c.outputs,
          0) / outs, worstUlp: Math.max(...mine.map((c) => c.worstUlp)),
      });
    }
  } finally {
    schedule = undefined;
  }

  // A weight the path takes in several products (matmul-sgmat.ts partsOf), on a Gpu binding at most 256 KiB: K 40
  // pads to 64, so 2100 rows fit one binding as bf16 (168 KB) but not as the f16 copy (2176 x 64 halves): copies of
  // 2048 and 52 rows; one x row pads to 128, so each product C takes 512 rows at most: 5 products. SwiGLU then runs
  // as the product and siluMul. (HRM-Text-1B's lm_head at a 128 MiB limit: 43690 rows, padded past it.)
  if (stagedUnavailable(gpu) === null) {
    const small = await Gpu.create({ bindingLimit: 256 * 2 ** 10 });
    try {
      const why = sgmatUnavailable(small);
      if (why !== null) throw new Error(`path 'sgmat' is off on a Gpu binding 256 KiB: ${why}`);
      const xv = bf(randn(17, 40, 2)), wv = bf(randn(18, 2100 * 40, 0.2));
      await run('a weight in 5 products (its f16 copy and C past a 256 KiB binding)', 1, 2100, 40, xv, wv,
        { gpu: small, fallback: false });
      await run('the same, swiglu (matmul then siluMul)', 1, 2100, 40, xv, wv,
        { gpu: small, fused: { swiglu: true }, fallback: false });
    } catch (e) {
      const failure = (e as Error).message.split('\n')[0];
      cases.push({ name: 'a weight in several products', outputs: 0, worstUlp: 0, within1: 1, fallbackRows: 0,
        failure });
    } finally {
      small.destroy();
    }
  }

  let mlxFigure: SgmatReport['mlx'] = null;
  if (mlx) {
    const a = await mlx.array('matmul.bf16.a') as Float32Array;
    const want = await mlx.array('matmul.bf16.out') as Float32Array;
    const x = Tensor.from(gpu, a, [7, 320], 'f32', 'a');
    const w = Tensor.from(gpu, await mlx.bytes('matmul.bf16.b'), [192, 320], 'bf16', 'b');
    const out = matmul(x, w, { round: 'bf16', path: 'sgmat' });
    const s = ulpStats('bf16', await out.read(), want);
    mlxFigure = { within1: s.within1, worst: s.worst };
    for (const t of [x, w, out]) t.dispose();
  }
  const failed = cases.filter((c) => c.failure).length;
  return { cases, schedules, passed: cases.length - failed, failed, outputs: n, exact: exact / n, within1: within / n,
    worstUlp: worst, mlx: mlxFigure, ms: Math.round(performance.now() - t0) };
}
