// x @ W^T (nn.Linear) over f16 activations, for devices with shader-f16: f32 / bf16 / f16 weights, f32
// accumulation, one rounding to the output (f16 as MLX's half matmul, or f32). Reading x as f16 halves its bytes.
// Variants are described in matmul_f16.wgsl; paths and their settings follow matmul.ts (measured there).
import { Kernel, grid } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, FeatureError } from '../../errors.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import type { Round } from '../common/codes.ts';
import { GEMV_MAX_M } from './gemv.ts';
import { DTYPE_CODE, roundCode } from '../common/codes.ts';
import { shapeOf, validateLinear } from './matmul.ts';
import { BM, BN, TILE } from './tile-shape.ts';
import { preferGemv } from '../plan/matmul.ts';

const FILE = 'matmul/matmul_f16.wgsl';
const KERNELS = {
  f32: { vec4: new Kernel(FILE, 'gemv_vec4_to_f32'), word: new Kernel(FILE, 'gemv_word_to_f32'),
    tiled: new Kernel(FILE, 'tiled_to_f32') },
  f16: { vec4: new Kernel(FILE, 'gemv_vec4_to_f16'), word: new Kernel(FILE, 'gemv_word_to_f16'),
    tiled: new Kernel(FILE, 'tiled_to_f16') },
};
const GEMV = { WG: 32, ROWS: 2 };

export interface MatmulF16Options {
  /** Output dtype: 'f16' (default, as MLX's half matmul) or 'f32'. */
  out?: 'f16' | 'f32';
  /**
   * Rounding of an f32 output: 'bf16' / 'f16' values kept in f32, 'none' (default) the f32 sum. An f16 output is
   * always rounded to f16.
   */
  round?: Round;
  /** Force a path (tests, benchmarks); 'auto' picks by M and the tile count, as matmul does (preferGemv). */
  path?: 'auto' | 'gemv' | 'tiled';
}

/**
 * out[..., n] = round(sum_k x[..., k] * W[n, k]), the sum in f32.
 * x: f16 [..., K]. w: W [N, K] (f32, bf16 or f16), or row-chunks [N_0, K], [N_1, K], ... (N = sum N_i) for weights
 * larger than one storage binding. Any M, N, K. Returns [..., N] in opts.out (f16 by default).
 * Throws FeatureError when the device has no shader-f16 (Gpu.f16): use matmul with f32 activations there.
 */
export function matmulF16(x: Tensor, w: Tensor | readonly Tensor[], opts: MatmulF16Options = {}): Tensor {
  const chunks = Array.isArray(w) ? (w as readonly Tensor[]) : [w as Tensor];
  const K = x.shape[x.rank - 1];
  const N = validateLinear('matmulF16', x, chunks, K, 'f16', 'f32 activations: use matmul');
  const outDtype = opts.out ?? 'f16';
  if (outDtype !== 'f16' && outDtype !== 'f32') throw new DTypeError('matmulF16',
    `unknown out ${JSON.stringify(opts.out)}; use 'f16' or 'f32'`);
  const round = roundCode('matmulF16', opts.round);
  if (outDtype === 'f16' && opts.round === 'bf16') throw new DTypeError('matmulF16',
    `round 'bf16' cannot be stored in an f16 output; use out: 'f32'`);
  const gpu = x.gpu;
  if (!gpu.f16) {
    throw new FeatureError('matmulF16', `x ${shapeOf(x)}: this device has no shader-f16 (adapter ${describe(gpu)}); ` +
      `use matmul with f32 activations`);
  }
  const M = x.size / K;
  const out = Tensor.empty(gpu, [...x.shape.slice(0, -1), N], outDtype, 'matmulF16.out');
  const kernels = KERNELS[outDtype];
  const binding = outDtype === 'f16' ? 'outh' : 'out';
  // An f16 output always rounds to f16 (to_f16); ROUND only exists for the f32 entries.
  const rounding: Record<string, number> = outDtype === 'f16' ? {} : { ROUND: round };
  const path = !opts.path || opts.path === 'auto' ? (preferGemv(M, N) ? 'gemv' : 'tiled') : opts.path;
  let col0 = 0;
  for (const c of chunks) {
    const uniforms = { M, N: c.shape[0], K, ldo: N, col0 };
    const WDT = DTYPE_CODE[c.dtype as keyof typeof DTYPE_CODE];
    if (path === 'gemv') {
      const MB = Math.min(M, GEMV_MAX_M);
      const [gx, gy] = grid(gpu, Math.ceil(c.shape[0] / GEMV.ROWS), 1);
      const overrides = { WDT, ...rounding, WG: GEMV.WG, ROWS: GEMV.ROWS, MB };
      const workgroups: [number, number, number] = [gx, gy, Math.ceil(M / MB)];
      if (wideRows(x, c, K)) {
        kernels.vec4.dispatch(gpu,
          { bindings: { x4: x, w4: c, [binding]: out }, uniforms, overrides, workgroups,
          label: 'matmulF16.gemv_vec4' });
      } else {
        kernels.word.dispatch(gpu,
          { bindings: { x, w: c, [binding]: out }, uniforms, overrides, workgroups, label: 'matmulF16.gemv_word' });
      }
    } else {
      kernels.tiled.dispatch(gpu, {
        bindings: { x, w: c, [binding]: out }, uniforms, label: 'matmulF16.tiled',
        overrides: { WDT, ...rounding, ...TILE },
        workgroups: [Math.ceil(c.shape[0] / BN), Math.ceil(M / BM)],
      });
    }
    col0 += c.shape[0];
  }
  return out;
}

/** 16-byte weight rows and bases, and x rows of whole vec4<f16>, let every lane load vectors. */
function wideRows(x: Tensor, c: Tensor, K: number): boolean {
  const rowBytes = K * (c.dtype === 'f32' ? 4 : 2);
  return rowBytes % 16 === 0 && K % 4 === 0 && c.offset % 16 === 0 && x.offset % 8 === 0;
}

function describe(gpu: Gpu): string {
  const a = gpu.summary;
  return [a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(' / ') || `unnamed, ${a.runtime}`;
}
