// The planner's matrix-vector shapes: the workgroup shape and kernel each decode (and short prefill) projection
// takes when a call forces none, for dense weights (matmul/gemv.ts dispatches them) and quantized ones
// (qlinear/qgemv.ts). Each is the fastest of an H200 sweep at HRM-Text-1B's projections (bench/results/README.md,
// "What the code's choices rest on"); the kernels' own facts (uplFit, what fits the registers) bound them.
import type { Gpu } from '../../gpu/gpu.ts';
import { uplFit, type GemvShape } from '../matmul/gemv.ts';

/** A dense projection: N rows of K `dtype` weights, M x rows, 16-byte rows (`wide`), the fused norm and SwiGLU. */
export interface DenseGemvCall {
  N: number; K: number; M: number; dtype: string; wide: boolean; norm: boolean; swiglu: boolean;
}

/** The matrix-vector shape of a dense projection: gemv_wide where it fits one x row, else tunedShape's. */
export function denseGemvShape(gpu: Gpu, c: DenseGemvCall): GemvShape {
  return tunedWide(c.N, c.K, c.M, c.wide, c.dtype, c.swiglu) ?? tunedShape(c.N, c.K, c.norm, c.swiglu, (wg, rows) => {
    const f = uplFit(c.K, c.dtype, wg, rows);
    return gpu.subgroups && c.wide && f.exact && f.fits;
  });
}

/**
 * A quantized projection: N rows of K `bits`-bit levels, M x rows, 16-byte units (`wide`), the fused norm and
 * SwiGLU.
 */
export interface QuantGemvCall {
  N: number; K: number; M: number; bits: number; wide: boolean; norm: boolean; swiglu: boolean;
}

/** The matrix-vector shape of a quantized projection: gemv4Shape's for 16-byte units, else qgemv's 2 or 4 rows. */
export function quantGemvShape(gpu: Gpu, c: QuantGemvCall): GemvShape {
  const fused = { norm: c.norm, swiglu: c.swiglu };
  return c.wide ? gemv4Shape(gpu, c.N, c.K, c.bits, c.M, fused) : { wg: 64, rows: c.swiglu ? 4 : 2 };
}

// The shapes of the kernels before gemv_wide, which one x row now takes wherever a row's units split evenly over
// its lanes (tunedWide): these serve several x rows (short prefills on the matrix-vector path) and rows that do not
// split. Each is the fastest of bench --sweep-gemv on an H200 at the model's projections (the figures: "What the
// code's choices rest on" in bench/results/README.md). Fewer lanes per row leave each lane a longer chain of
// dependent loads; more lanes a longer reduction. The norm prologue normalises the x it reads in every workgroup, so
// norm shapes favour more rows per workgroup; lm_head has rows enough to fill the GPU with 32 lanes. The upl kernels
// need whole units per lane (uplFit) and gemv_upl_sg subgroups.
function tunedShape(N: number, K: number, norm: boolean, swiglu: boolean,
  upl: (wg: number, rows: number) => boolean): GemvShape {
  if (K > 2048) return { wg: 128, rows: 2, kernel: 'vec4' };
  if (N >= 16384) return { wg: 32, rows: 2, kernel: 'vec4' };
  if (norm && !swiglu) return { wg: 32, rows: 4, kernel: 'vec4' };
  const rows = swiglu ? 4 : 2;
  return upl(32, rows) ? { wg: 32, rows, kernel: 'upl-sg' } : { wg: 64, rows, kernel: 'vec4' };
}

/**
 * gemv_wide's shape for one x row where its lanes split the rows' units evenly (else null): 16 rows in 4 groups for
 * the 1536-wide projections (64 lanes a group with gate_up's SwiGLU, 32 otherwise), 4 rows in 4 groups of 64 for
 * down_proj and where N is small; lm_head (N = 65536) takes the large-N shape. The fastest of the H200 sweeps
 * (bench/results/README.md, "What the code's choices rest on").
 */
function tunedWide(N: number, K: number, M: number, wide: boolean, dtype: string, swiglu: boolean): GemvShape | null {
  const shape: GemvShape = K <= 2048 && N >= 4096 ? { kernel: 'wide', wg: swiglu ? 64 : 32, groups: 4,
    rows: 16 } : { kernel: 'wide', wg: 64, groups: 4, rows: 4 };
  const f = uplFit(K, dtype, shape.wg, shape.rows / shape.groups!);
  return M === 1 && wide && f.exact && f.fits ? shape : null;
}

/**
 * qgemv4's shape for a projection of N rows of `units` 16-byte units (48 at 4 bits and K = 1536, 128 at K = 4096;
 * twice that at 8 bits), `m` x rows: the fastest of one H200 sweep at HRM-Text-1B's projections (`20261205-014634Z`
 * in bench/results/README.md, "What the code's choices rest on"), where rows have 32 units or more; below, one unit
 * a lane (lanes = units rounded up to a power of two, 32 to 128) and 2 rows, 4 with a fused norm or SwiGLU. 'xs'
 * (x staged in workgroup memory) takes one x row, where the memory holds it.
 */
function gemv4Shape(gpu: Gpu, N: number, K: number, bits: number, m: number,
  f: { norm: boolean; swiglu: boolean }): GemvShape {
  const units = (K * bits) / 128;
  const xsFits = (s: GemvShape) => m === 1 && 4 * K +
    4 * s.wg * s.rows <= gpu.device.limits.maxComputeWorkgroupStorageSize;
  const xs = (s: GemvShape): GemvShape => (xsFits({ ...s, kernel: 'xs' }) ? { ...s, kernel: 'xs' } : s);
  if (N >= 16384) return { kernel: 'vec4', wg: 32, rows: bits === 4 ? 4 : 8 };
  if (units < 32) {
    return { kernel: 'vec4', wg: Math.min(128, Math.max(32, 2 ** Math.ceil(Math.log2(units)))),
      rows: f.norm || f.swiglu ? 4 : 2 };
  }
  if (bits !== 4) return f.norm ? { kernel: 'vec4', wg: 32, rows: 4 } : { kernel: 'vec4', wg: 128, rows: 2 };
  if (f.swiglu) return { kernel: 'vec4', wg: 64, rows: 8 };
  if (f.norm) return xs({ kernel: 'vec4', wg: 64, rows: 8 });
  return units > 64 ? { kernel: 'vec4', wg: 128, rows: 4 } : xs({ kernel: 'vec4', wg: 128, rows: 4 });
}
