// Linear layers and the embedding gather over MLX's quantized weights (qlinear.wgsl), with matmul's options and
// fusions (MatmulOptions): the quantized counterpart of matmul / embed, row-chunked the same way.
import { Kernel, grid } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../errors.ts';
import type { Round } from '../common/codes.ts';
import { roundBf16, roundF16 } from '../../tensor/dtype.ts';
import { matmul, shapeOf, validateFusions, type MatmulOptions } from '../matmul/matmul.ts';
import { qlinearPath } from '../plan/matmul.ts';
import { quantGemvShape } from '../plan/gemv.ts';
import { dispatchQGemv, wideUnits } from './qgemv.ts';
import { DTYPE_CODE, roundCode } from '../common/codes.ts';
import { rmsNorm } from '../rmsnorm/rmsnorm.ts';
import { siluMul } from '../ops/ops.ts';
import { checkBits, checkGroupSize } from '../quant/quant.ts';

const FILE = 'qlinear/qlinear.wgsl';
const ROWS_K = new Kernel(FILE, 'qrows');
const TILED = new Kernel(FILE, 'qtiled');
const EMBED = new Kernel(FILE, 'qembed');
const PACK = new Kernel(FILE, 'pack_half');
const DENSE = new Kernel(FILE, 'qdense');
// qtiled's threads along N and M and K slice (overrides); each thread owns a 4 x 4 block, fixed in the WGSL.
const TILE = { TX: 16, TY: 16, BK: 16 };
const WG = 64;

/**
 * A quantized [N, K] matrix as row chunks: packed levels u32 [N_i, K * bits / 32], scales / biases [N_i, K / groupSize]
 * in f32, bf16 or f16 (the model dtype, as MLX stores them; all chunks alike).
 */
export interface QuantMatrix {
  bits: number;
  groupSize: number;
  q: readonly Tensor[];
  scales: readonly Tensor[];
  biases: readonly Tensor[];
}

/** Checks the chunks agree with each other (and with K when given); returns [N, K]. */
export function checkQuantMatrix(op: string, w: QuantMatrix, K?: number): [number, number] {
  checkBits(op, w.bits);
  checkGroupSize(op, w.groupSize);
  if (!w.q.length || w.q.length !== w.scales.length || w.q.length !== w.biases.length) {
    throw new ShapeError(op,
      `quantized weight has ${w.q.length} packed chunks, ${w.scales.length} scales and ${w.biases.length} ` +
      'biases; expected one of each per chunk');
  }
  const sd = w.scales[0].dtype;
  if (!(sd in DTYPE_CODE)) throw new DTypeError(op,
    `scales '${w.scales[0].label}' are ${sd}; expected f32, bf16 or f16`);
  let N = 0, cols = K;
  for (let i = 0; i < w.q.length; i++) {
    const q = w.q[i];
    const c = (q.shape[1] * 32) / w.bits;
    if (q.dtype !== 'u32' || q.rank !== 2 || !Number.isInteger(c) || c % w.groupSize ||
      (cols !== undefined && c !== cols)) {
      throw new ShapeError(op,
        `packed '${q.label}' [${q.shape.join(', ')}] ${q.dtype} must be u32 [rows, ${cols ?? 'K'} * ${w.bits} / 32] ` +
        `(a whole number of groups of ${w.groupSize})`);
    }
    cols = c;
    for (const t of [w.scales[i], w.biases[i]]) {
      if (t.dtype !== sd || t.rank !== 2 || t.shape[0] !== q.shape[0] || t.shape[1] !== c / w.groupSize) {
        throw new ShapeError(op,
          `'${t.label}' is [${t.shape.join(', ')}] ${t.dtype}; packed [${q.shape.join(', ')}] at ${w.bits} bits, ` +
          `group ${w.groupSize} needs ${sd} [${q.shape[0]}, ${c / w.groupSize}]`);
      }
    }
    N += q.shape[0];
  }
  return [N, cols!];
}

/** f32 values that are values of `dtype` (scales / biases quantize() wrote) as a packed `dtype` tensor, exactly. */
export function packHalves(t: Tensor, dtype: 'bf16' | 'f16'): Tensor {
  if (t.dtype !== 'f32') throw new DTypeError('packHalves', `'${t.label}' is ${t.dtype}; expected f32`);
  const out = Tensor.empty(t.gpu, t.shape, dtype, t.label);
  PACK.dispatch(t.gpu, {
    bindings: { x: t, packed: out }, uniforms: { M: t.size, N: 0, K: 0, ldo: 0, col0: 0, eps: 0, escale: 0, vocab: 0 },
    overrides: { SDT: DTYPE_CODE[dtype], WG }, workgroups: grid(t.gpu, Math.ceil(t.size / 2),
      WG), label: 'qlinear.pack_half',
  });
  return out;
}

/**
 * The weight as dense row chunks of `round`'s half dtype ([rows, K] each, within one binding; consecutive rows),
 * every value r(r(scale * level) + bias) as qtiled stages it: MLX's qmm dequantizes into the model's dtype alike.
 */
export function dequantDense(w: QuantMatrix, round: 'bf16' | 'f16'): Tensor[] {
  const op = 'qlinear.dense';
  const [, K] = checkQuantMatrix(op, w);
  const gpu = w.q[0].gpu;
  const per = Math.floor(gpu.maxBinding / (2 * K));
  if (per < 1) throw new ShapeError(op,
    `a dense row of ${K} ${round} values exceeds the adapter's binding limit ${gpu.maxBinding}`);
  const out: Tensor[] = [];
  for (let i = 0; i < w.q.length; i++) {
    const rows = w.q[i].shape[0];
    for (let r0 = 0; r0 < rows; r0 += per) {
      const n = Math.min(per, rows - r0);
      const t = Tensor.empty(gpu, [n, K], round, `${w.q[i].label}.${round}`);
      DENSE.dispatch(gpu, {
        bindings: { wq: w.q[i], scales: w.scales[i], biases: w.biases[i], packed: t }, label: op,
        uniforms: { M: 0, N: n, K, ldo: 0, col0: r0, eps: 0, escale: 0, vocab: 0 },
        overrides: { BITS: w.bits, GS: w.groupSize, SDT: sdt(w), ROUND: DTYPE_CODE[round], WG }, workgroups: grid(gpu,
          (n * K) / 2, WG),
      });
      out.push(t);
    }
  }
  return out;
}

/**
 * out[..., n] = sum_k x[..., k] * W[n, k] with W = scale * level + bias per group, and matmul's fusions
 * (norm, swiglu, accumulate, round, path: 'gemv' | 'tiled' | 'rows' | 'sgmat' | 'auto'). x: f32 [..., K].
 * 'sgmat' (bf16 rounding, adapters with tensor cores; 'auto' takes it where matmul would for a bf16 weight): the
 * weight dequantized into a dense bf16 copy for the call (dequantDense), then matmul's tensor-core path.
 */
export function qlinear(x: Tensor, w: QuantMatrix, opts: MatmulOptions = {}): Tensor {
  const op = 'qlinear';
  if (x.dtype !== 'f32') throw new DTypeError(op, `x '${x.label}' is ${x.dtype}; activations are f32`);
  const K = x.shape[x.rank - 1];
  const [N] = checkQuantMatrix(op, w, K);
  const M = x.size / K;
  const gpu = x.gpu;
  const round = roundCode('qlinear', opts.round);
  const cols = validateFusions(op, x,
    `${w.bits}-bit weight ${shapeOf(w.q[0])}${w.q.length > 1 ? ` (${w.q.length} chunks)` : ''}`, N, opts);
  const a = opts.accumulate;
  const path = !opts.path || opts.path === 'auto' ? qlinearPath(gpu, M, N, K, opts.round) : opts.path;
  if (!['gemv', 'tiled', 'rows', 'sgmat'].includes(path)) throw new InputError(op,
    `unknown path ${JSON.stringify(opts.path)}; qlinear takes 'auto', 'gemv', 'tiled', 'rows' or 'sgmat'`);
  if (path === 'sgmat') {
    if (opts.round !== 'bf16') throw new InputError(op,
      `path 'sgmat' needs round 'bf16' (got ${JSON.stringify(opts.round ?? 'none')}): the tensor cores take ` +
      'the bf16 copy of the weight');
    const dense = dequantDense(w, 'bf16');
    try {
      return matmul(x, dense, { ...opts, path: 'sgmat', transientWeights: true });
    } finally {
      for (const t of dense) t.dispose();   // recorded dispatches read them in order; the pool may hand them out again
    }
  }
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
  const fixed = { BITS: w.bits, GS: w.groupSize, SDT: sdt(w), ROUND: round, SWIGLU: opts.swiglu ? 1 : 0,
    ACC: a ? 1 : 0 };
  let col0 = 0;
  for (let i = 0; i < w.q.length; i++) {
    const rows = w.q[i].shape[0];
    const bindings = { x: xin, wq: w.q[i], scales: w.scales[i], biases: w.biases[i], out };
    const uniforms = { M, N: rows, K, ldo: cols, col0, eps: opts.norm?.eps ?? 0, escale: 0, vocab: 0 };
    if (path === 'gemv') {
      const call = { N: rows, K, M, bits: w.bits, wide: wideUnits(xin, w.q[i], w.bits), norm: !!opts.norm,
        swiglu: !!opts.swiglu };
      dispatchQGemv(gpu, bindings, uniforms, { ...fixed, NORM: opts.norm ? 1 : 0 },
        opts.gemv ?? quantGemvShape(gpu, call));
    }
    else if (path === 'rows') {
      if (M > gpu.device.limits.maxComputeWorkgroupsPerDimension) throw new ShapeError(op,
        `x '${x.label}': ${M} rows exceed the per-dispatch limit of the rows path`);
      const [gx, gy] = grid(gpu, opts.swiglu ? rows / 2 : rows, WG);
      ROWS_K.dispatch(gpu,
        { bindings, uniforms, overrides: { ...fixed, WG }, workgroups: [gx, gy, M], label: 'qlinear.rows' });
    } else {
      TILED.dispatch(gpu, {
        bindings, uniforms, overrides: { BITS: w.bits, GS: w.groupSize, SDT: fixed.SDT, ROUND: round, ACC: fixed.ACC,
          ...TILE }, label: 'qlinear.tiled',
        workgroups: [Math.ceil(rows / (TILE.TX * 4)), Math.ceil(M / (TILE.TY * 4))],
      });
    }
    col0 += rows;
  }
  if (xin !== x) xin.dispose();
  return out;
}

function sdt(w: QuantMatrix): number {
  return DTYPE_CODE[w.scales[0].dtype as keyof typeof DTYPE_CODE];
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
      overrides: { BITS: w.bits, GS: w.groupSize, SDT: sdt(w), ROUND: roundCode('qlinear', round),
        WG }, workgroups: grid(ids.gpu, out.size, WG), label: 'qlinear.embed',
    });
    row0 += rows;
  }
  return out;
}
