// x @ W^T (nn.Linear) over f32 activations and f32 / bf16 / f16 weights, f32 accumulation, one output rounding
// (MLX rounds the f32 accumulator once to the output dtype). Variants are described in matmul.wgsl.
import { Kernel, grid } from '../../tensor/kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, ShapeError } from '../../tensor/errors.ts';
import type { Gpu } from '../../tensor/gpu.ts';
import type { Round } from '../attention/types.ts';

const FILE = 'matmul/matmul.wgsl';
const GEMV_VEC4 = new Kernel(FILE, 'gemv_vec4');
const GEMV_WORD = new Kernel(FILE, 'gemv_word');
const TILED = new Kernel(FILE, 'matmul_tiled');
const GEMV_ROWS = new Kernel(FILE, 'gemv_rows');
const GEMV_ROWS4 = new Kernel(FILE, 'gemv_rows4');

export const WEIGHT_CODE = { f32: 0, bf16: 1, f16: 2 } as const;
export const ROUND_CODE: Record<Round, number> = { none: 0, bf16: 1, f16: 2 };

/** x rows one matrix-vector workgroup serves (one read of the weights for up to this many rows). */
export const GEMV_MAX_M = 4;
// Measured on an H200 (Vulkan, Dawn) over HRM-1B's shapes: 32 lanes x 2 rows was best or near it for M = 1 and 4
// (lm_head at M = 1: 0.066 ms, 3.0 TB/s; the 4.7-25 MB layer matrices 7-12 us, launch-bound); 16x16 threads of
// 4x4 outputs with K slices of 8 gave 5-17 TFLOP/s f32 (M = 64 to 512).
const GEMV = { WG: 32, ROWS: 2 };
const TILE = { TX: 16, TY: 16, TM: 4, TN: 4, BK: 8 };

export interface MatmulOptions {
  /** Output rounding: 'bf16' / 'f16' mirror an MLX model in that dtype; 'none' (default) keeps f32. */
  round?: Round;
  /** Force a path (tests, benchmarks); 'auto' picks by M and the tile count (preferGemv), and 'rows' on CPU adapters. */
  path?: 'auto' | 'gemv' | 'tiled' | 'rows';
}

/**
 * out[..., n] = sum_k x[..., k] * W[n, k].
 * x: f32 [..., K]. w: W [N, K] (f32, bf16 or f16), or W as row-chunks [N_0, K], [N_1, K], ... (N = sum N_i) for
 * weights larger than one storage binding: chunk i fills output columns N_0 + ... + N_{i-1} onwards.
 * Any M, N, K (K odd included, every weight dtype). Returns f32 [..., N].
 */
export function matmul(x: Tensor, w: Tensor | readonly Tensor[], opts: MatmulOptions = {}): Tensor {
  const chunks = Array.isArray(w) ? (w as readonly Tensor[]) : [w as Tensor];
  const K = x.shape[x.rank - 1];
  const N = validate(x, chunks, K);
  const M = x.size / K;
  const gpu = x.gpu;
  const round = ROUND_CODE[opts.round ?? 'none'];
  if (round === undefined) throw new DTypeError('matmul', `unknown round ${JSON.stringify(opts.round)}; use 'none', 'bf16' or 'f16'`);
  const out = Tensor.empty(gpu, [...x.shape.slice(0, -1), N], 'f32', 'matmul.out');
  const path = opts.path === 'auto' || !opts.path ? (gpu.cpu ? 'rows' : preferGemv(M, N) ? 'gemv' : 'tiled') : opts.path;
  let col0 = 0;
  for (const c of chunks) {
    const uniforms = { M, N: c.shape[0], K, ldo: N, col0 };
    const WDT = WEIGHT_CODE[c.dtype as keyof typeof WEIGHT_CODE];
    if (path === 'rows') {
      const [gx, gy] = grid(gpu, c.shape[0], 64);
      if (M > gpu.device.limits.maxComputeWorkgroupsPerDimension) throw new ShapeError('matmul', `x ${shapeOf(x)}: ${M} rows exceed the per-dispatch limit of the rows path`);
      const overrides = { WDT, ROUND: round, WG: 64 };
      if (wideRows(x, c, K)) GEMV_ROWS4.dispatch(gpu, { bindings: { x4: x, w4: c, out }, uniforms, overrides, workgroups: [gx, gy, M], label: 'matmul.rows4' });
      else GEMV_ROWS.dispatch(gpu, { bindings: { x, w: c, out }, uniforms, overrides, workgroups: [gx, gy, M], label: 'matmul.rows' });
    } else if (path === 'gemv') dispatchGemv(gpu, x, c, out, uniforms, WDT, round);
    else {
      const BM = TILE.TY * TILE.TM, BN = TILE.TX * TILE.TN;
      TILED.dispatch(gpu, {
        bindings: { x, w: c, out }, uniforms, label: 'matmul.tiled',
        overrides: { WDT, ROUND: round, ...TILE },
        workgroups: [Math.ceil(c.shape[0] / BN), Math.ceil(M / BM)],
      });
    }
    col0 += c.shape[0];
  }
  return out;
}

/**
 * Matrix-vector blocks of 4 rows re-read the weights ceil(M / 4) times; 64x64 tiles waste most of a tile when M is
 * small and leave a GPU idle when there are few of them. Measured on an H200 over HRM-1B's shapes: at M = 23 the
 * gemv path was 1.4-13x faster on every layer (lm_head included); at M = 64 still 3-7x on o_proj / down_proj (24
 * tiles), while the tiled path won on lm_head. Other GPUs may move these bounds.
 */
function preferGemv(M: number, N: number): boolean {
  if (M <= 32) return true;
  const tiles = Math.ceil(M / (TILE.TY * TILE.TM)) * Math.ceil(N / (TILE.TX * TILE.TN));
  return M <= 64 && tiles < 64;
}

function dispatchGemv(gpu: Gpu, x: Tensor, c: Tensor, out: Tensor, uniforms: Record<string, number>, WDT: number, ROUND: number): void {
  const { M, K } = uniforms;
  const MB = Math.min(M, GEMV_MAX_M);
  const blocks = Math.ceil(c.shape[0] / GEMV.ROWS);
  const max = gpu.device.limits.maxComputeWorkgroupsPerDimension;
  const gy = Math.ceil(blocks / max);
  const workgroups: [number, number, number] = [Math.ceil(blocks / gy), gy, Math.ceil(M / MB)];
  const overrides = { WDT, ROUND, WG: GEMV.WG, ROWS: GEMV.ROWS, MB };
  if (wideRows(x, c, K)) {
    GEMV_VEC4.dispatch(gpu, { bindings: { x4: x, w4: c, out }, uniforms, overrides, workgroups, label: 'matmul.gemv_vec4' });
  } else {
    GEMV_WORD.dispatch(gpu, { bindings: { x, w: c, out }, uniforms, overrides, workgroups, label: 'matmul.gemv_word' });
  }
}

/** 16-byte weight rows and bases let every lane load a whole vec4<u32>; otherwise kernels read word by word. */
function wideRows(x: Tensor, c: Tensor, K: number): boolean {
  const rowBytes = K * (c.dtype === 'f32' ? 4 : 2);
  return rowBytes % 16 === 0 && K % 4 === 0 && c.offset % 16 === 0 && x.offset % 16 === 0;
}

function shapeOf(t: Tensor): string {
  return `'${t.label}' [${t.shape.join(', ')}] ${t.dtype}`;
}

/** Checks x and the weight chunks agree; returns N. */
function validate(x: Tensor, chunks: readonly Tensor[], K: number): number {
  if (x.dtype !== 'f32') throw new DTypeError('matmul', `x ${shapeOf(x)} must be f32 (activations are f32; round with opts.round)`);
  if (x.rank < 1 || K === 0) throw new ShapeError('matmul', `x ${shapeOf(x)} needs a non-empty last axis K`);
  if (chunks.length === 0) throw new ShapeError('matmul', `no weight given for x ${shapeOf(x)}`);
  let N = 0;
  for (const [i, c] of chunks.entries()) {
    const what = chunks.length > 1 ? `weight chunk ${i} ${shapeOf(c)}` : `weight ${shapeOf(c)}`;
    if (!(c.dtype in WEIGHT_CODE)) throw new DTypeError('matmul', `${what} must be f32, bf16 or f16 (x ${shapeOf(x)})`);
    if (c.dtype !== chunks[0].dtype) throw new DTypeError('matmul', `${what} differs in dtype from chunk 0 ${shapeOf(chunks[0])}`);
    if (c.rank !== 2 || c.shape[1] !== K) {
      throw new ShapeError('matmul', `x ${shapeOf(x)} @ ${what}^T: the weight must be [N, ${K}] (rows = outputs, columns = K of x)`);
    }
    if (c.gpu !== x.gpu) throw new ShapeError('matmul', `${what} lives on another device than x ${shapeOf(x)}`);
    N += c.shape[0];
  }
  if (N === 0) throw new ShapeError('matmul', `weights for x ${shapeOf(x)} have no rows`);
  return N;
}
