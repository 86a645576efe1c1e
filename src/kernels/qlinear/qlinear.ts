// Linear layers and the embedding gather over MLX's quantized weights (qlinear.wgsl), with matmul's options and
// fusions (MatmulOptions): the quantized counterpart of matmul / embed, row-chunked the same way.
import { Kernel, grid } from '../../tensor/kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../tensor/errors.ts';
import type { Gpu } from '../../tensor/gpu.ts';
import type { Round } from '../attention/types.ts';
import { roundBf16, roundF16 } from '../../tensor/dtype.ts';
import { ROUND_CODE, type MatmulOptions } from '../matmul/matmul.ts';
import { rmsNorm } from '../rmsnorm/rmsnorm.ts';
import { siluMul } from '../ops/ops.ts';
import { checkPacked } from '../quant/quant.ts';

const FILE = 'qlinear/qlinear.wgsl';
const GEMV = new Kernel(FILE, 'qgemv');
const ROWS_K = new Kernel(FILE, 'qrows');
const TILED = new Kernel(FILE, 'qtiled');
const EMBED = new Kernel(FILE, 'qembed');
const TILE = { TX: 16, TY: 16, TM: 4, TN: 4, BK: 16 };
const WG = 64;
/** x rows one qgemv workgroup serves; MLX's qmv also takes only a few rows before its qmm wins. */
const GEMV_MB = 4;
const GEMV_MAX_M = 8;

/** A quantized [N, K] matrix as row chunks: packed levels u32 [N_i, K * bits / 32], scales / biases f32 [N_i, K / groupSize]. */
export interface QuantMatrix {
  bits: number;
  groupSize: number;
  q: readonly Tensor[];
  scales: readonly Tensor[];
  biases: readonly Tensor[];
}

const BITS = [2, 3, 4, 5, 6, 8];

/** Checks the chunks agree with each other (and with K when given); returns [N, K]. */
export function checkQuantMatrix(op: string, w: QuantMatrix, K?: number): [number, number] {
  if (!BITS.includes(w.bits)) throw new InputError(op, `bits ${w.bits} is not one of ${BITS.join(', ')}`);
  if (!w.q.length || w.q.length !== w.scales.length || w.q.length !== w.biases.length) {
    throw new ShapeError(op, `quantized weight has ${w.q.length} packed chunks, ${w.scales.length} scales and ${w.biases.length} biases; expected one of each per chunk`);
  }
  let N = 0;
  const cols = K ?? checkPacked(op, w.q[0], w.scales[0], w.biases[0], w.bits, w.groupSize);
  for (let i = 0; i < w.q.length; i++) {
    const c = checkPacked(op, w.q[i], w.scales[i], w.biases[i], w.bits, w.groupSize);
    if (w.q[i].rank !== 2) throw new ShapeError(op, `packed '${w.q[i].label}' [${w.q[i].shape.join(', ')}] must be 2-D`);
    if (c !== cols) throw new ShapeError(op, `packed '${w.q[i].label}' holds ${c} values per row; expected ${cols}`);
    N += w.q[i].shape[0];
  }
  return [N, cols];
}

/**
 * out[..., n] = sum_k x[..., k] * W[n, k] with W = scale * level + bias per group, and matmul's fusions
 * (norm, swiglu, accumulate, round, path: 'gemv' | 'tiled' | 'rows' | 'auto'). x: f32 [..., K].
 */
export function qlinear(x: Tensor, w: QuantMatrix, opts: MatmulOptions = {}): Tensor {
  const op = 'qlinear';
  if (x.dtype !== 'f32') throw new DTypeError(op, `x '${x.label}' is ${x.dtype}; activations are f32`);
  const K = x.shape[x.rank - 1];
  const [N] = checkQuantMatrix(op, w, K);
  const M = x.size / K;
  const gpu = x.gpu;
  const round = ROUND_CODE[opts.round ?? 'none'];
  if (round === undefined) throw new DTypeError(op, `unknown round ${JSON.stringify(opts.round)}; use 'none', 'bf16' or 'f16'`);
  if (opts.swiglu && opts.accumulate) throw new InputError(op, `swiglu and accumulate cannot be combined (x '${x.label}')`);
  if (opts.swiglu && N % 2) throw new ShapeError(op, `swiglu: the weight has ${N} rows; it must be [2I, K], gate rows then up rows`);
  if (opts.norm && !(opts.norm.eps >= 0 && Number.isFinite(opts.norm.eps))) throw new InputError(op, `norm.eps ${opts.norm.eps} must be a finite number >= 0`);
  const cols = opts.swiglu ? N / 2 : N;
  const a = opts.accumulate;
  if (a && (a.dtype !== 'f32' || a.shape.join() !== [...x.shape.slice(0, -1), cols].join())) {
    throw new ShapeError(op, `accumulate '${a.label}' [${a.shape.join(', ')}] ${a.dtype} must be f32 [${[...x.shape.slice(0, -1), cols].join(', ')}]`);
  }
  const path = !opts.path || opts.path === 'auto' ? (gpu.cpu ? 'rows' : M <= GEMV_MAX_M ? 'gemv' : 'tiled') : opts.path;
  if (opts.swiglu && (w.q.length > 1 || path === 'tiled')) {
    // Gate row i and up row I + i may sit in different chunks, and tiles hold runs of consecutive rows.
    const gu = qlinear(x, w, { round: opts.round, path, norm: opts.norm });
    const out = siluMul(gu, { round: opts.round });
    gu.dispose();
    return out;
  }
  // qgemv normalises x in its prologue; the others would redo a row's norm per output (qrows) or per tile.
  const xin = opts.norm && path !== 'gemv' ? rmsNorm(x, { eps: opts.norm.eps, round: opts.round }) : x;
  const out = a ?? Tensor.empty(gpu, [...x.shape.slice(0, -1), cols], 'f32', 'qlinear.out');
  const fixed = { BITS: w.bits, GS: w.groupSize, ROUND: round, SWIGLU: opts.swiglu ? 1 : 0, ACC: a ? 1 : 0 };
  let col0 = 0;
  for (let i = 0; i < w.q.length; i++) {
    const rows = w.q[i].shape[0];
    const bindings = { x: xin, wq: w.q[i], scales: w.scales[i], biases: w.biases[i], out };
    const uniforms = { M, N: rows, K, ldo: cols, col0, eps: opts.norm?.eps ?? 0, escale: 0, vocab: 0 };
    if (path === 'gemv') dispatchGemv(gpu, bindings, uniforms, { ...fixed, NORM: opts.norm ? 1 : 0 }, opts.gemv);
    else if (path === 'rows') {
      if (M > gpu.device.limits.maxComputeWorkgroupsPerDimension) throw new ShapeError(op, `x '${x.label}': ${M} rows exceed the per-dispatch limit of the rows path`);
      const [gx, gy] = grid(gpu, opts.swiglu ? rows / 2 : rows, WG);
      ROWS_K.dispatch(gpu, { bindings, uniforms, overrides: { ...fixed, WG }, workgroups: [gx, gy, M], label: 'qlinear.rows' });
    } else {
      TILED.dispatch(gpu, {
        bindings, uniforms, overrides: { BITS: w.bits, GS: w.groupSize, ROUND: round, ACC: fixed.ACC, ...TILE }, label: 'qlinear.tiled',
        workgroups: [Math.ceil(rows / (TILE.TX * TILE.TN)), Math.ceil(M / (TILE.TY * TILE.TM))],
      });
    }
    col0 += rows;
  }
  if (xin !== x) xin.dispose();
  return out;
}

function dispatchGemv(gpu: Gpu, bindings: Record<string, Tensor>, uniforms: Record<string, number>, fixed: Record<string, number>, shape?: MatmulOptions['gemv']): void {
  const MB = Math.min(uniforms.M, GEMV_MB);
  const ROWS = shape?.rows ?? (fixed.SWIGLU ? 4 : 2);
  const lanes = shape?.wg ?? 64;
  if (!(lanes >= 1 && lanes <= 256 && (lanes & (lanes - 1)) === 0 && (ROWS === 2 || ROWS === 4))) {
    throw new InputError('qlinear', `gemv shape ${JSON.stringify(shape)}: wg must be a power of two <= 256 and rows 2 or 4`);
  }
  // With swiglu a block's ROWS slots hold ROWS / 2 gate rows and their up rows: N / ROWS blocks either way.
  const blocks = Math.ceil(uniforms.N / ROWS);
  const gy = Math.ceil(blocks / gpu.device.limits.maxComputeWorkgroupsPerDimension);
  GEMV.dispatch(gpu, {
    bindings, uniforms, overrides: { ...fixed, WG: lanes, ROWS, MB }, label: 'qlinear.gemv',
    workgroups: [Math.ceil(blocks / gy), gy, Math.ceil(uniforms.M / MB)],
  });
}

export interface QEmbedOptions { scale?: number; round?: Round }

/** out[..., j] = r(dequantize(W)[ids[...], j] * scale), as nn.QuantizedEmbedding then the embedding scale. */
export function qembed(ids: Tensor, w: QuantMatrix, opts: QEmbedOptions = {}): Tensor {
  const op = 'qembed';
  if (ids.dtype !== 'u32') throw new DTypeError(op, `ids '${ids.label}' is ${ids.dtype}; expected u32`);
  const [V, H] = checkQuantMatrix(op, w);
  const round = opts.round ?? 'none';
  const s = opts.scale ?? 1;
  const escale = round === 'bf16' ? roundBf16(s) : round === 'f16' ? roundF16(s) : s;
  const out = Tensor.empty(ids.gpu, [...ids.shape, H], 'f32', 'qembed.out');
  let row0 = 0;
  for (let i = 0; i < w.q.length; i++) {
    const rows = w.q[i].shape[0];
    EMBED.dispatch(ids.gpu, {
      bindings: { ids, wq: w.q[i], scales: w.scales[i], biases: w.biases[i], out },
      uniforms: { M: out.size, N: rows, K: H, ldo: 0, col0: row0, eps: 0, escale, vocab: V },
      overrides: { BITS: w.bits, GS: w.groupSize, ROUND: ROUND_CODE[round], WG }, workgroups: grid(ids.gpu, out.size, WG), label: 'qlinear.embed',
    });
    row0 += rows;
  }
  return out;
}
