// x @ W^T (nn.Linear) over f32 activations and f32 / bf16 / f16 weights, f32 accumulation, one output rounding
// (MLX rounds the f32 accumulator once to the output dtype), optionally fused with the RMSNorm before it, the
// SwiGLU after it or the residual add (MatmulOptions). Variants and fusions are described in matmul.wgsl.
import { Kernel, grid } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../errors.ts';
import { DTYPE_CODE, roundCode, type Round } from '../common/codes.ts';
import { rmsNorm } from '../rmsnorm/rmsnorm.ts';
// ops.ts re-exports matmul; the cycle is harmless (neither module calls the other while loading).
import { siluMul } from '../ops/ops.ts';
import { dispatchSgmat, sgmatSplitsRows } from './matmul-sgmat.ts';
import { requireSgmat } from './sgmat-caps.ts';
import type { SgmatSchedule } from './sgmat-schedule.ts';
import { matmulPath, preferGemv, sgmatPlan, type MatmulPath } from '../plan/matmul.ts';
import { denseGemvShape } from '../plan/gemv.ts';
import { dispatchGemv, wideRows, type GemvShape } from './gemv.ts';
import { BM, BN, TILE } from './tile-shape.ts';

const TILED = new Kernel('matmul/matmul_tiled.wgsl', 'matmul_tiled');
const GEMV_ROWS = new Kernel('matmul/matmul_rows.wgsl', 'gemv_rows');
const GEMV_ROWS4 = new Kernel('matmul/matmul_rows.wgsl', 'gemv_rows4');


export interface MatmulOptions {
  /** Output rounding: 'bf16' / 'f16' mirror an MLX model in that dtype; 'none' (default) keeps f32. */
  round?: Round;
  /**
   * Force a path (tests, benchmarks); 'auto' asks the Gpu's planner (kernels/plan/matmul.ts: by M and the tile count,
   * preferGemv, and 'rows' on CPU adapters).
   * 'sgmat' (subgroup matrices, i.e. tensor cores: matmul-sgmat.ts) needs bf16 rounding, bf16 weights and an
   * adapter that offers them; it runs norm first as 'tiled' does and fuses swiglu (one weight tensor) and
   * accumulate into its output pass. 'auto' takes it for bf16 prefill where the device can.
   */
  path?: 'auto' | MatmulPath;
  /** Path 'sgmat': schedule fields that override the Gpu's for this call (benchmarks time each schedule). */
  sgmat?: Partial<SgmatSchedule>;
  /**
   * RMS-normalise the rows of x first, as rmsNorm(x, { eps, round }) does (the same rounding as the output), so
   * the result is matmul(rmsNorm(x), w) up to the summation order of mean(x^2). Fused into the matrix-vector
   * kernels; the tiled and CPU-driver (rows) paths run rmsNorm first.
   */
  norm?: { eps: number };
  /**
   * w is [2I, K], gate rows then up rows (HRM's gate_up_proj), and the output [..., I] is siluMul(x @ W^T) bit for
   * bit. Fused into the matrix-vector kernels and the output pass of path 'sgmat' for a single weight tensor;
   * row-chunked
   * weights and the tiled path run matmul then siluMul. Not combinable with `accumulate`.
   */
  swiglu?: boolean;
  /**
   * Residual: out = r(accumulate + r(x @ W^T)), bit for bit add(accumulate, matmul(x, w)), written into
   * `accumulate` (f32 [..., N]) in place; that tensor is returned. Fused on every path.
   */
  accumulate?: Tensor;
  /** Matrix-vector shape (benchmarks, tuning); default: tuned per projection (gemv.ts). */
  gemv?: GemvShape;
  /**
   * Path 'sgmat': the weight tensors live for this call only (qlinear's dense copy of a quantized weight), so their
   * f16 copies are made for the call and not kept with them.
   */
  transientWeights?: boolean;
}

/**
 * out[..., n] = sum_k x[..., k] * W[n, k], with the fusions of MatmulOptions.
 * x: f32 [..., K]. w: W [N, K] (f32, bf16 or f16), or W as row-chunks [N_0, K], [N_1, K], ... (N = sum N_i) for
 * weights larger than one storage binding: chunk i fills output columns N_0 + ... + N_{i-1} onwards.
 * Any M, N, K (K odd included, every weight dtype). Returns f32 [..., N] ([..., N / 2] with swiglu).
 */
export function matmul(x: Tensor, w: Tensor | readonly Tensor[], opts: MatmulOptions = {}): Tensor {
  const chunks = Array.isArray(w) ? (w as readonly Tensor[]) : [w as Tensor];
  const K = x.shape[x.rank - 1];
  const N = validateLinear('matmul', x, chunks, K, 'f32', 'activations are f32; round with opts.round');
  const cols = validateFusions('matmul', x, weightLabel(chunks), N, opts);
  const M = x.size / K;
  const gpu = x.gpu;
  const round = roundCode('matmul', opts.round);
  const path = opts.path === 'auto' || !opts.path
    ? matmulPath(gpu, { M, wdtype: chunks[0].dtype, round: opts.round, gemvFaster: preferGemv(M, N) })
    : checkPath(x, chunks, opts.path, opts.round);
  const split = path === 'sgmat' && opts.swiglu && sgmatSplitsRows(chunks, M, K, sgmatPlan(gpu, opts.sgmat));
  if (opts.swiglu && (chunks.length > 1 || path === 'tiled' || split)) {
    // Gate row i and up row I + i may sit in different chunks; tiles hold runs of consecutive rows. Path 'sgmat'
    // fuses it into its output pass for a chunk it takes in one product (every output there reads the whole one).
    const gu = matmul(x, chunks,
      { round: opts.round, path, norm: opts.norm, gemv: opts.gemv, sgmat: opts.sgmat,
      transientWeights: opts.transientWeights });
    const out = siluMul(gu, { round: opts.round });
    gu.dispose();
    return out;
  }
  // Prefill is compute-bound: one rmsNorm dispatch costs little next to the tiled matmul. On CPU drivers (rows) a
  // thread per output would redo its row's norm for every output: the separate dispatch is cheaper there too.
  const xin = opts.norm && (path === 'tiled' || path === 'rows' || path === 'sgmat') ? rmsNorm(x,
    { eps: opts.norm.eps, round: opts.round }) : x;
  const out = opts.accumulate ?? Tensor.empty(gpu, [...x.shape.slice(0, -1), cols], 'f32', 'matmul.out');
  const fuse = { NORM: opts.norm && xin === x ? 1 : 0, SWIGLU: opts.swiglu ? 1 : 0, ACC: opts.accumulate ? 1 : 0 };
  const eps = opts.norm?.eps ?? 0;
  if (path === 'sgmat') {
    const fused = { accumulate: fuse.ACC === 1, swiglu: opts.swiglu, transient: opts.transientWeights };
    dispatchSgmat(xin, chunks, out, { M, K, ldo: cols }, sgmatPlan(gpu, opts.sgmat), fused);
    if (xin !== x) xin.dispose();
    return out;
  }
  let col0 = 0;
  for (const c of chunks) {
    const uniforms = { M, N: c.shape[0], K, ldo: cols, col0, eps };
    const WDT = DTYPE_CODE[c.dtype as keyof typeof DTYPE_CODE];
    if (path === 'rows') {
      const [gx, gy] = grid(gpu, opts.swiglu ? c.shape[0] / 2 : c.shape[0], 64);
      if (M > gpu.device.limits.maxComputeWorkgroupsPerDimension) throw new ShapeError('matmul',
        `x ${shapeOf(x)}: ${M} rows exceed the per-dispatch limit of the rows path`);
      const overrides = { WDT, ROUND: round, WG: 64, ...fuse };
      if (wideRows(xin, c, K)) GEMV_ROWS4.dispatch(gpu,
        { bindings: { x4: xin, w4: c, out }, uniforms, overrides, workgroups: [gx, gy, M], label: 'matmul.rows4' });
      else GEMV_ROWS.dispatch(gpu,
        { bindings: { x: xin, w: c, out }, uniforms, overrides, workgroups: [gx, gy, M], label: 'matmul.rows' });
    } else if (path === 'gemv') {
      const call = { N: c.shape[0], K, M, dtype: c.dtype, wide: wideRows(x, c, K), norm: fuse.NORM === 1,
        swiglu: fuse.SWIGLU === 1 };
      const plan = opts.gemv ? { shape: opts.gemv, forced: true } : { shape: denseGemvShape(gpu, call), forced: false };
      dispatchGemv(gpu, x, c, out, uniforms, { WDT, ROUND: round, ...fuse }, plan);
    }
    else {
      TILED.dispatch(gpu, {
        bindings: { x: xin, w: c, out }, uniforms, label: 'matmul.tiled',
        overrides: { WDT, ROUND: round, ACC: fuse.ACC, ...TILE },
        workgroups: [Math.ceil(c.shape[0] / BN), Math.ceil(M / BM)],
      });
    }
    col0 += c.shape[0];
  }
  if (xin !== x) xin.dispose();
  return out;
}

/**
 * `batch` products x_z @ w_z^T by the tiled kernel in one dispatch (attention's per-head products, sdpa-mm.ts):
 * x f32 [batch, M, K], w [batch, N, K] (f32 or bf16; [batch, K, N] with `transposed`: x_z @ w_z), out f32: product z
 * in rows z*M.. of [batch * M, N] ('rows'), or in columns z*N.. of [M, batch * N] ('cols'). Shapes are the caller's.
 */
export function batchedMatmul(x: Tensor, w: Tensor, out: Tensor,
  o: { batch: number; M: number; N: number; K: number; layout: 'rows' | 'cols'; transposed?: boolean;
    round?: Round }): void {
  TILED.dispatch(x.gpu, {
    bindings: { x, w, out }, label: 'matmul.tiled_batched',
    uniforms: { M: o.M, N: o.N, K: o.K, ldo: o.layout === 'rows' ? o.N : o.batch * o.N, col0: 0, eps: 0 },
    overrides: { WDT: DTYPE_CODE[w.dtype as keyof typeof DTYPE_CODE], ROUND: roundCode('matmul', o.round), ACC: 0,
      ...TILE, BATCH: o.layout === 'rows' ? 1 : 2, WT: o.transposed ? 1 : 0 },
    workgroups: [Math.ceil(o.N / BN), Math.ceil(o.M / BM), o.batch],
  });
}

function checkPath(x: Tensor, chunks: readonly Tensor[], path: string, round?: Round): MatmulPath {
  if (!['gemv', 'tiled', 'rows', 'sgmat'].includes(path)) throw new InputError('matmul',
    `unknown path ${JSON.stringify(path)}; use 'auto', 'gemv', 'tiled', 'rows' or 'sgmat'`);
  if (path === 'sgmat') requireSgmat(x, chunks[0], round);
  return path as MatmulPath;
}


export function shapeOf(t: Tensor): string {
  return `'${t.label}' [${t.shape.join(', ')}] ${t.dtype}`;
}

/**
 * Checks that x (of dtype `xDtype`; `hint` says what to do otherwise) and the dense weight chunks agree, for `op`
 * (matmul, matmulF16); returns N.
 */
export function validateLinear(
  op: string, x: Tensor, chunks: readonly Tensor[], K: number, xDtype: string, hint: string,
): number {
  if (x.dtype !== xDtype) throw new DTypeError(op, `x ${shapeOf(x)} must be ${xDtype} (${hint})`);
  if (x.rank < 1 || K === 0) throw new ShapeError(op, `x ${shapeOf(x)} needs a non-empty last axis K`);
  if (chunks.length === 0) throw new ShapeError(op, `no weight given for x ${shapeOf(x)}`);
  let N = 0;
  for (const [i, c] of chunks.entries()) {
    const what = chunks.length > 1 ? `weight chunk ${i} ${shapeOf(c)}` : `weight ${shapeOf(c)}`;
    if (!(c.dtype in DTYPE_CODE)) throw new DTypeError(op, `${what} must be f32, bf16 or f16 (x ${shapeOf(x)})`);
    if (c.dtype !== chunks[0].dtype) {
      throw new DTypeError(op, `${what} differs in dtype from chunk 0 ${shapeOf(chunks[0])}`);
    }
    if (c.rank !== 2 || c.shape[1] !== K) {
      const want = `the weight must be [N, ${K}] (rows = outputs, columns = K of x)`;
      throw new ShapeError(op, `x ${shapeOf(x)} @ ${what}^T: ${want}`);
    }
    if (c.gpu !== x.gpu) throw new ShapeError(op, `${what} lives on another device than x ${shapeOf(x)}`);
    N += c.shape[0];
  }
  if (N === 0) throw new ShapeError(op, `weights for x ${shapeOf(x)} have no rows`);
  return N;
}

/** How messages name a dense weight: one tensor, or its row chunks. */
function weightLabel(chunks: readonly Tensor[]): string {
  return chunks.length > 1 ? `weight chunks ${chunks.map(shapeOf).join(', ')}` : `weight ${shapeOf(chunks[0])}`;
}

/**
 * Checks the fusion options (norm, swiglu, accumulate) of `op` against x and its weight (`weight` names it in
 * messages; N = its rows): one check for every linear kernel (matmul, qlinear). Returns the output's last axis.
 */
export function validateFusions(op: string, x: Tensor, weight: string, N: number, o: MatmulOptions): number {
  if (o.norm && !(o.norm.eps >= 0 && Number.isFinite(o.norm.eps))) throw new InputError(op,
    `norm.eps ${o.norm.eps} must be a finite number >= 0`);
  if (o.swiglu && o.accumulate) {
    throw new InputError(op, `swiglu and accumulate cannot be combined (x ${shapeOf(x)}); add the residual with add()`);
  }
  if (o.swiglu && N % 2) throw new ShapeError(op,
    `swiglu: ${weight} has ${N} rows; it must be [2I, K], gate rows then up rows`);
  const cols = o.swiglu ? N / 2 : N;
  const a = o.accumulate;
  if (a) {
    const want = [...x.shape.slice(0, -1), cols];
    if (a.dtype !== 'f32') throw new DTypeError(op,
      `accumulate ${shapeOf(a)} must be f32 (the residual of x ${shapeOf(x)} @ ${weight}^T)`);
    if (a.shape.join() !== want.join()) {
      throw new ShapeError(op,
        `accumulate ${shapeOf(a)} must be [${want.join(', ')}], the output of x ${shapeOf(x)} @ ${weight}^T`);
    }
    if (a.gpu !== x.gpu) throw new ShapeError(op,
      `accumulate ${shapeOf(a)} lives on another device than x ${shapeOf(x)}`);
    if (a.buffer === x.buffer && a.offset < x.offset + x.byteLength && x.offset < a.offset + a.byteLength) {
      throw new ShapeError(op, `accumulate ${shapeOf(a)} overlaps x ${shapeOf(x)}; it is written while x is read`);
    }
  }
  return cols;
}
