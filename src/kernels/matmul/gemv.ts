// The matrix-vector path of matmul (decode, short prefill): workgroup shapes per projection and the dispatch of
// gemv_wide (matmul_wide.wgsl: one x row, many weight rows a workgroup), gemv_upl (matmul_upl.wgsl; gemv_upl_sg,
// matmul_upl_sg.wgsl, where the adapter has subgroups) where a row's units split evenly over the lanes, else
// matmul.wgsl's gemv_vec4 / gemv_word.
// matmul.ts chooses the path and validates; this file only shapes and dispatches.
import { Kernel, type Overrides } from '../kernel.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { InputError } from '../../errors.ts';

const GEMV_VEC4 = new Kernel('matmul/matmul.wgsl', 'gemv_vec4');
const GEMV_WORD = new Kernel('matmul/matmul.wgsl', 'gemv_word');
const GEMV_UPL = new Kernel('matmul/matmul_upl.wgsl', 'gemv_upl');
const GEMV_UPL_SG = new Kernel('matmul/matmul_upl_sg.wgsl', 'gemv_upl_sg');
const GEMV_WIDE = new Kernel('matmul/matmul_wide.wgsl', 'gemv_wide');

/**
 * The matrix-vector kernel: 'vec4' the K loop (gemv_vec4, or gemv_word where rows are not 16-byte), 'upl' all of a
 * lane's loads up front (gemv_upl: 16-byte rows, rows up to 8, units per row / lanes * rows <= UPL_MAXW), 'upl-sg'
 * the same reduced on subgroups (gemv_upl_sg: adapters with the 'subgroups' feature), 'wide' `groups` row groups
 * of `wg` lanes sharing one x read and one norm (gemv_wide: one x row, 16-byte rows, units per row / wg whole).
 * Quantized weights (qlinear) take 'vec4' (qgemv4, or qgemv), 'xs' (qgemv4 with its x row staged in workgroup
 * memory), 'wide' (qgemv_wide: 4 or 8 bits, one x row; qlinear/qgemv.ts) and 'wide-xs' (qgemv_wide with its x row
 * normalised once into workgroup memory).
 */
export type GemvKernel = 'vec4' | 'upl' | 'upl-sg' | 'wide' | 'xs' | 'wide-xs';

/**
 * Matrix-vector shape (benchmarks, tuning): lanes per workgroup (power of two, 16..256; 'wide': lanes per row
 * group), weight rows per workgroup (2 or 4; 'upl' also 8; 'wide' a multiple of `groups`), the kernel (default
 * 'vec4'; unforced, kernels/plan/gemv.ts picks shape and kernel per projection) and, for 'wide', the row groups (a
 * power of
 * two, wg * groups <= 256).
 */
export interface GemvShape { wg: number; rows: number; kernel?: GemvKernel; groups?: number }

/** gemv_upl's register array of weight units per lane (MAXW in gemv_upl.inc.wgsl). */
const UPL_MAXW = 32;

const pow2 = (n: number) => Number.isInteger(n) && n >= 1 && (n & (n - 1)) === 0;

/** A forced shape's lanes (matmul's kernels and qlinear's alike): a power of two from 16 to 256. */
export function checkLanes(op: string, shape: GemvShape): void {
  if (!(pow2(shape.wg) && shape.wg >= 16 && shape.wg <= 256)) {
    throw new InputError(op, `gemv shape ${JSON.stringify(shape)}: wg must be a power of two from 16 to 256`);
  }
}

/** A forced shape matmul's matrix-vector kernels can take; `kernels` are those the caller has. */
export function checkGemvShape(op: string, { wg, rows, kernel = 'vec4', groups }: GemvShape,
  kernels: readonly GemvKernel[] = ['vec4']): void {
  const shape = JSON.stringify({ wg, rows, kernel, groups });
  if (!kernels.includes(kernel)) throw new InputError(op,
    `gemv shape ${shape}: kernel must be ${kernels.map((k) => `'${k}'`).join(' or ')}`);
  checkLanes(op, { wg, rows, kernel, groups });
  if (kernel === 'wide') {
    const g = groups ?? 0;
    // One thread adds and stores each row: rows <= wg x groups.
    if (!(pow2(g) && wg * g <= 256 && Number.isInteger(rows) && rows >= 2 && rows % 2 === 0 && rows % g === 0 &&
      rows / g <= Math.min(UPL_MAXW, wg))) {
      throw new InputError(op,
        `gemv shape ${shape}: 'wide' needs groups a power of two with wg x groups <= 256, and rows an even ` +
        `multiple of groups, at most ${UPL_MAXW} and at most wg a group`);
    }
    return;
  }
  if (groups !== undefined) throw new InputError(op, `gemv shape ${shape}: groups is for kernel 'wide' only`);
  if (!(rows === 2 || rows === 4 || (rows === 8 && kernel !== 'vec4'))) {
    throw new InputError(op, `gemv shape ${shape}: rows 2 or 4 (8 with the upl kernels)`);
  }
}

/** x rows one matrix-vector workgroup serves (one read of the weights for up to this many rows). */
export const GEMV_MAX_M = 4;
/** The shape one matrix-vector call takes: a forced one (checked here) or the planner's (kernels/plan/gemv.ts). */
export interface GemvPlan { shape: GemvShape; forced: boolean }

/** x @ chunk^T by the matrix-vector kernels, fusions as `fixed` says, in the shape `plan` gives. */
export function dispatchGemv(gpu: Gpu, x: Tensor, c: Tensor, out: Tensor, uniforms: Record<string, number>,
  fixed: Overrides, plan: GemvPlan): void {
  const { M, K } = uniforms;
  const N = c.shape[0];
  const wide = wideRows(x, c, K);
  const shape = plan.forced ? plan.shape : undefined;
  if (shape) checkGemvShape('matmul', shape, ['vec4', 'upl', 'upl-sg', 'wide']);
  const tuned = plan.shape;
  const { wg: WG, rows: ROWS, kernel = 'vec4' } = tuned;
  // x rows per block: the lanes write ROWS x MB outputs, and the reduction holds WG x ROWS x MB floats (beside
  // gemv_upl_sg's 32-byte mask of subgroup leaders).
  const shared = gpu.device.limits.maxComputeWorkgroupStorageSize - (kernel === 'upl-sg' ? 32 : 0);
  const unfit = whyUnfit(kernel, tuned, { M, K, dtype: c.dtype, wide, subgroups: gpu.subgroups, shared });
  if (unfit) throw new InputError('matmul',
    `gemv shape ${JSON.stringify(shape)} for weight '${c.label}' [${c.shape.join(', ')}] ${c.dtype}: ` +
    `kernel '${kernel}' cannot take it (${unfit})`);
  const MB = kernel === 'wide' ? 1 : Math.min(M, GEMV_MAX_M, Math.floor(WG / ROWS),
    Math.floor(shared / (4 * WG * ROWS)));
  // With swiglu a block's ROWS slots hold ROWS / 2 gate rows and their up rows.
  const blocks = fixed.SWIGLU ? Math.ceil(N / 2 / (ROWS / 2)) : Math.ceil(N / ROWS);
  const max = gpu.device.limits.maxComputeWorkgroupsPerDimension;
  const gy = Math.ceil(blocks / max);
  const workgroups: [number, number, number] = [Math.ceil(blocks / gy), gy, Math.ceil(M / MB)];
  const overrides = { ...fixed, WG, ROWS, MB };
  const UPL = uplFit(K, c.dtype, WG, 1).upl;
  if (kernel === 'wide') {
    GEMV_WIDE.dispatch(gpu,
      { bindings: { x4: x, w4: c, out }, uniforms,
      overrides: { ...overrides, UPL, THREADS: WG * tuned.groups!,
      RPG: ROWS / tuned.groups! }, workgroups, label: 'matmul.gemv_wide' });
  } else if (kernel !== 'vec4') {
    const [k, label] = kernel === 'upl' ? [GEMV_UPL, 'matmul.gemv_upl'] : [GEMV_UPL_SG, 'matmul.gemv_upl_sg'];
    k.dispatch(gpu, { bindings: { x4: x, w4: c, out }, uniforms, overrides: { ...overrides, UPL }, workgroups, label });
  } else if (wide) {
    GEMV_VEC4.dispatch(gpu,
      { bindings: { x4: x, w4: c, out }, uniforms, overrides, workgroups, label: 'matmul.gemv_vec4' });
  } else {
    GEMV_WORD.dispatch(gpu, { bindings: { x, w: c, out }, uniforms, overrides, workgroups, label: 'matmul.gemv_word' });
  }
}

/** Why `kernel` cannot take this shape and operand, or null. */
function whyUnfit(kernel: GemvKernel, s: GemvShape,
  o: { M: number; K: number; dtype: string; wide: boolean; subgroups: boolean; shared: number }): string | null {
  if (kernel === 'vec4') return null;
  if (!o.wide) return 'rows are not 16-byte aligned';
  if (kernel === 'wide' && 4 * s.wg * s.rows > o.shared) {
    return `its ${s.wg} x ${s.rows} partial sums exceed the ${o.shared} bytes of workgroup memory`;
  }
  const rowsPerLane = kernel === 'wide' ? s.rows / s.groups! : s.rows;
  const f = uplFit(o.K, o.dtype, s.wg, rowsPerLane);
  if (kernel === 'wide' && o.M !== 1) return `it takes one x row, not ${o.M}`;
  if (kernel === 'wide' &&
    !f.exact) return `${(o.K * (o.dtype === 'f32' ? 4 : 2)) / 16} units a row do not split over ${s.wg} lanes`;
  if (!f.fits) return `${f.upl} units per lane x ${rowsPerLane} rows exceed ${UPL_MAXW} registers`;
  if (kernel === 'upl-sg' && !o.subgroups) return "the adapter lacks the 'subgroups' feature";
  return null;
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
export function uplFit(K: number, dtype: string, wg: number,
  rows: number): { upl: number; exact: boolean; fits: boolean } {
  const units = (K * (dtype === 'f32' ? 4 : 2)) / 16;
  const upl = Math.ceil(units / wg);
  return { upl, exact: units % wg === 0, fits: upl * rows <= UPL_MAXW };
}
