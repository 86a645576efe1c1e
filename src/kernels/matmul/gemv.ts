// The matrix-vector path of matmul (decode, short prefill): workgroup shapes per projection and the dispatch of
// gemv_upl (matmul_upl.wgsl; gemv_upl_sg, matmul_upl_sg.wgsl, where the adapter has subgroups) where a row's units
// split evenly over the lanes, else matmul.wgsl's gemv_vec4 / gemv_word.
// matmul.ts chooses the path and validates; this file only shapes and dispatches.
import { Kernel, type Overrides } from '../../tensor/kernel.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import type { Gpu } from '../../tensor/gpu.ts';
import { InputError } from '../../tensor/errors.ts';

const GEMV_VEC4 = new Kernel('matmul/matmul.wgsl', 'gemv_vec4');
const GEMV_WORD = new Kernel('matmul/matmul.wgsl', 'gemv_word');
const GEMV_UPL = new Kernel('matmul/matmul_upl.wgsl', 'gemv_upl');
const GEMV_UPL_SG = new Kernel('matmul/matmul_upl_sg.wgsl', 'gemv_upl_sg');

/**
 * The matrix-vector kernel: 'vec4' the K loop (gemv_vec4, or gemv_word where rows are not 16-byte), 'upl' all of a
 * lane's loads up front (gemv_upl: 16-byte rows, rows up to 8, units per row / lanes * rows <= UPL_MAXW), 'upl-sg'
 * the same reduced on subgroups (gemv_upl_sg: adapters with the 'subgroups' feature).
 */
export type GemvKernel = 'vec4' | 'upl' | 'upl-sg';

/**
 * Matrix-vector shape (benchmarks, tuning): lanes per workgroup (power of two, 16..256), weight rows (2 or 4; 'upl'
 * also 8) and the kernel (default 'vec4'; unforced, tunedShape picks shape and kernel per projection).
 */
export interface GemvShape { wg: number; rows: number; kernel?: GemvKernel }

/** gemv_upl's register array of weight units per lane (MAXW in gemv_upl.inc.wgsl). */
const UPL_MAXW = 32;

/** A forced shape the matrix-vector kernels can take; `kernels` are those the caller has (qlinear: 'vec4' only). */
export function checkGemvShape(op: string, { wg, rows, kernel = 'vec4' }: GemvShape, kernels: readonly GemvKernel[] = ['vec4']): void {
  const shape = JSON.stringify({ wg, rows, kernel });
  if (!kernels.includes(kernel)) throw new InputError(op, `gemv shape ${shape}: kernel must be ${kernels.map((k) => `'${k}'`).join(' or ')}`);
  const rowsOk = rows === 2 || rows === 4 || (rows === 8 && kernel !== 'vec4');
  if (!(wg >= 16 && wg <= 256 && (wg & (wg - 1)) === 0 && rowsOk)) {
    throw new InputError(op, `gemv shape ${shape}: wg must be a power of two from 16 to 256 and rows 2 or 4 (8 with the upl kernels)`);
  }
}

/** x rows one matrix-vector workgroup serves (one read of the weights for up to this many rows). */
export const GEMV_MAX_M = 4;
// Matrix-vector workgroup shapes (lanes x weight rows), from bench --sweep-gemv on an H200 (Dawn, bf16, one x row,
// the model's fusions; bench/results/nvidia-h200_node_1b_20261130-002400Z.md), wall us per call with the barrier:
//   K = 4096 (down_proj + residual): 128x2 10.9, 64x2 12.6, 32x2 15.1;
//   K = 1536, norm + swiglu (gate_up): 64x4 17.6, 32x4 18.6, 32x2 21.1;
//   K = 1536, norm (gqkv): 32x2 13.7, 32x4 13.9, 64x2 15.6;
//   K = 1536, plain or residual (o_proj): 64x2 9.18, 32x2 10.8;
//   K = 1536, N = 65536 (lm_head): 32x2 3.05 TB/s, 64x2 2.54 TB/s (enough rows to fill the GPU with 32 lanes).
// Fewer lanes per row leave each lane a longer chain of dependent loads; more lanes a longer reduction. The norm
// prologue normalises the x it reads in every workgroup, so norm shapes favour more rows per workgroup.
// The sweep of 20261201-232224Z (all three kernels, the same measure): gate_up upl-sg 32x4 45.6 against vec4 64x4
// 56.4 and vec4 32x4 52.0; o_proj upl-sg 32x2 20.9 against vec4 64x2 25.2; gqkv and down_proj within 1 us of
// vec4's shapes, which they keep. The upl kernels need whole units per lane (uplFit) and gemv_upl_sg subgroups.
function tunedShape(N: number, K: number, norm: boolean, swiglu: boolean, upl: (wg: number, rows: number) => boolean): { WG: number; ROWS: number; kernel: GemvKernel } {
  if (K > 2048) return { WG: 128, ROWS: 2, kernel: 'vec4' };
  if (N >= 16384) return { WG: 32, ROWS: 2, kernel: 'vec4' };
  if (norm && !swiglu) return { WG: 32, ROWS: 4, kernel: 'vec4' };
  const rows = swiglu ? 4 : 2;
  return upl(32, rows) ? { WG: 32, ROWS: rows, kernel: 'upl-sg' } : { WG: 64, ROWS: rows, kernel: 'vec4' };
}

/** x @ chunk^T by the matrix-vector kernels, fusions as `fixed` says; `shape` overrides the tuned one. */
export function dispatchGemv(gpu: Gpu, x: Tensor, c: Tensor, out: Tensor, uniforms: Record<string, number>, fixed: Overrides, shape?: GemvShape): void {
  const { M, K } = uniforms;
  const wide = wideRows(x, c, K);
  // gemv_upl_sg where the adapter has subgroups and the units split evenly over the lanes (else gemv_vec4).
  const sgFits = (wg: number, rows: number) => { const f = uplFit(K, c.dtype, wg, rows); return gpu.subgroups && wide && f.exact && f.fits; };
  const tuned = tunedShape(c.shape[0], K, fixed.NORM === 1, fixed.SWIGLU === 1, sgFits);
  const ROWS = shape?.rows ?? tuned.ROWS;
  const WG = shape?.wg ?? tuned.WG;
  if (shape) checkGemvShape('matmul', shape, ['vec4', 'upl', 'upl-sg']);
  const { upl: UPL, fits } = uplFit(K, c.dtype, WG, ROWS);
  const kernel = shape?.kernel ?? (shape ? 'vec4' : tuned.kernel);
  if (kernel !== 'vec4' && !(wide && fits && (kernel === 'upl' || gpu.subgroups))) {
    const why = !wide ? 'rows are not 16-byte aligned' : !fits ? `${UPL} units per lane x ${ROWS} rows exceed ${UPL_MAXW} registers` : "the adapter lacks the 'subgroups' feature";
    throw new InputError('matmul', `gemv shape ${JSON.stringify(shape)} for weight '${c.label}' [${c.shape.join(', ')}] ${c.dtype}: kernel '${kernel}' cannot take it (${why})`);
  }
  // x rows per block: the lanes write ROWS x MB outputs, and the reduction holds WG x ROWS x MB floats (beside
  // gemv_upl_sg's 32-byte mask of subgroup leaders).
  const shared = gpu.device.limits.maxComputeWorkgroupStorageSize - (kernel === 'upl-sg' ? 32 : 0);
  const MB = Math.min(M, GEMV_MAX_M, Math.floor(WG / ROWS), Math.floor(shared / (4 * WG * ROWS)));
  // With swiglu a block's ROWS slots hold ROWS / 2 gate rows and their up rows.
  const blocks = fixed.SWIGLU ? Math.ceil(c.shape[0] / 2 / (ROWS / 2)) : Math.ceil(c.shape[0] / ROWS);
  const max = gpu.device.limits.maxComputeWorkgroupsPerDimension;
  const gy = Math.ceil(blocks / max);
  const workgroups: [number, number, number] = [Math.ceil(blocks / gy), gy, Math.ceil(M / MB)];
  const overrides = { ...fixed, WG, ROWS, MB };
  if (kernel !== 'vec4') {
    const [k, label] = kernel === 'upl' ? [GEMV_UPL, 'matmul.gemv_upl'] : [GEMV_UPL_SG, 'matmul.gemv_upl_sg'];
    k.dispatch(gpu, { bindings: { x4: x, w4: c, out }, uniforms, overrides: { ...overrides, UPL }, workgroups, label });
  } else if (wide) {
    GEMV_VEC4.dispatch(gpu, { bindings: { x4: x, w4: c, out }, uniforms, overrides, workgroups, label: 'matmul.gemv_vec4' });
  } else {
    GEMV_WORD.dispatch(gpu, { bindings: { x, w: c, out }, uniforms, overrides, workgroups, label: 'matmul.gemv_word' });
  }
}

/** 16-byte weight rows and bases let every lane load a whole vec4<u32>; otherwise kernels read word by word. */
export function wideRows(x: Tensor, c: Tensor, K: number): boolean {
  const rowBytes = K * (c.dtype === 'f32' ? 4 : 2);
  return rowBytes % 16 === 0 && K % 4 === 0 && c.offset % 16 === 0 && x.offset % 16 === 0;
}

/**
 * gemv_upl's 16-byte units per lane for rows of K `dtype` weights over `wg` lanes; `exact` when they split evenly
 * (no lane idles), `fits` when `rows` of them fit its registers.
 */
export function uplFit(K: number, dtype: string, wg: number, rows: number): { upl: number; exact: boolean; fits: boolean } {
  const units = (K * (dtype === 'f32' ? 4 : 2)) / 16;
  const upl = Math.ceil(units / wg);
  return { upl, exact: units % wg === 0, fits: upl * rows <= UPL_MAXW };
}
