// qlinear's matrix-vector path (one or a few x rows): qgemv (qlinear.wgsl, any bits), qgemv4 (qlinear_vec4.wgsl:
// 16-byte units of 4- or 8-bit levels, 2-16 rows a workgroup, x read by every lane or staged, 'xs') and qgemv_wide
// (qlinear_wide.wgsl: one x row, row groups sharing one x read and one norm, 'wide'; 'wide-xs' with x staged),
// and the checks of a
// forced one (the shapes are the planner's, kernels/plan/gemv.ts). All three give a row the same sum for the same
// lanes; only the speed differs.
import { Kernel } from '../kernel.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { InputError } from '../../errors.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { checkLanes, GEMV_MAX_M, type GemvShape } from '../matmul/gemv.ts';

const GEMV = new Kernel('qlinear/qlinear.wgsl', 'qgemv');
const GEMV4 = new Kernel('qlinear/qlinear_vec4.wgsl', 'qgemv4');
const GEMV_WIDE = new Kernel('qlinear/qlinear_wide.wgsl', 'qgemv_wide');

/** qgemv4's accumulators (MAXACC in qlinear.inc.wgsl): ROWS x MB sums a lane. */
const QGEMV_MAXACC = 16;
/** qgemv_wide's unit registers a lane (MAXW in qlinear_wide.wgsl): units a lane x rows a group. */
const WIDE_MAXW = 16;

/**
 * out (+)= x @ W^T for the quantized chunk in `bindings` (x, wq, scales, biases, out) on the matrix-vector path, in
 * the shape `shape` (forced, or the planner's: kernels/plan/gemv.ts). `fixed`: the overrides BITS, GS, SDT, ROUND,
 * NORM, SWIGLU, ACC.
 */
export function dispatchQGemv(gpu: Gpu, bindings: Record<string, Tensor>, uniforms: Record<string, number>,
  fixed: Record<string, number>, shape: GemvShape): void {
  const wide = wideUnits(bindings.x, bindings.wq, fixed.BITS);
  const fused = { norm: fixed.NORM === 1, swiglu: fixed.SWIGLU === 1 };
  const tuned = shape;
  const { rows: ROWS, wg: lanes } = tuned;
  const kernel = tuned.kernel ?? 'vec4';
  checkQGemvShape(gpu, tuned, wide, { K: uniforms.K, M: uniforms.M, bits: fixed.BITS, swiglu: fused.swiglu });
  // qgemv4's accumulators hold ROWS x MB sums (MAXACC); the staged x and the row groups take one row.
  const MB = kernel === 'vec4' ? Math.min(uniforms.M, GEMV_MAX_M, Math.floor(QGEMV_MAXACC / ROWS)) : 1;
  // With swiglu a block's ROWS slots hold ROWS / 2 gate rows and their up rows: N / ROWS blocks either way.
  const blocks = Math.ceil(uniforms.N / ROWS);
  const gy = Math.ceil(blocks / gpu.device.limits.maxComputeWorkgroupsPerDimension);
  const workgroups: [number, number, number] = [Math.ceil(blocks / gy), gy, Math.ceil(uniforms.M / MB)];
  const overrides = { ...fixed, WG: lanes, ROWS, MB };
  if (!wide) {
    GEMV.dispatch(gpu, { bindings, uniforms, overrides, workgroups, label: 'qlinear.gemv' });
    return;
  }
  const { x, wq, ...rest } = bindings;
  const views = { ...rest, x4: x, wq4: wq };
  const xs: Record<string, number> = kernel.endsWith('xs') ? { XSH: 1, XSN: uniforms.K / 4 } : {};
  if (kernel.startsWith('wide')) {
    const groups = tuned.groups!, UPL = (uniforms.K * fixed.BITS) / 128 / lanes;
    const rowGroups = { THREADS: lanes * groups, RPG: ROWS / groups, UPL };
    GEMV_WIDE.dispatch(gpu,
      { bindings: views, uniforms, overrides: { ...overrides, ...rowGroups, ...xs }, workgroups,
      label: 'qlinear.gemv_wide' });
    return;
  }
  GEMV4.dispatch(gpu,
    { bindings: views, uniforms, overrides: { ...overrides, ...xs }, workgroups, label: 'qlinear.gemv4' });
}

/**
 * The matrix-vector shapes qlinear takes: lanes a power of two from 16 to 256; qgemv4 (4 and 8 bits, aligned) 2, 4,
 * 8 or 16 rows, kernel 'vec4' or 'xs' (its x row staged in workgroup memory, which must hold it); 'wide' and
 * 'wide-xs' (the same weights, one x row) `groups` row groups of `wg` lanes that split a row's units exactly, `rows`
 * a multiple of the groups (even with SwiGLU), at most 16 units a lane; qgemv 2 or 4 rows.
 */
function checkQGemvShape(gpu: Gpu, shape: GemvShape, wide: boolean,
  o: { K: number; M: number; bits: number; swiglu: boolean }): void {
  const kernel = shape.kernel ?? 'vec4';
  const desc = JSON.stringify(shape);
  const fail = (why: string) => { throw new InputError('qlinear', `gemv shape ${desc}: ${why}`); };
  if (!['vec4', 'xs', 'wide', 'wide-xs'].includes(kernel)) fail(`kernel must be 'vec4', 'xs', 'wide' or 'wide-xs'`);
  checkLanes('qlinear', shape);
  const shared = gpu.device.limits.maxComputeWorkgroupStorageSize;
  // The x row in workgroup memory beside the partial sums (one vec4 of it declared when not staged).
  const staged = kernel.endsWith('xs') ? 4 * o.K : 16;
  if (kernel.startsWith('wide')) {
    const g = shape.groups ?? 0, units = (o.K * o.bits) / 128;
    if (!wide) fail(`kernel 'wide' takes 4- or 8-bit weights with x and levels 16-byte aligned`);
    if (o.M !== 1) fail(`kernel 'wide' takes one x row, not ${o.M}`);
    if (!(Number.isInteger(Math.log2(g)) &&
      shape.wg * g <= 256)) fail(`'wide' needs groups a power of two with wg x groups <= 256`);
    if (shape.rows % g ||
      (o.swiglu &&
      shape.rows % 2)) fail(`'wide' needs rows a multiple of groups${o.swiglu ? ', and even with swiglu' : ''}`);
    if (units % shape.wg || (units / shape.wg) * (shape.rows / g) > WIDE_MAXW) {
      fail(`a row's ${units} units must split exactly over ${shape.wg} lanes, at most ${WIDE_MAXW} units a lane ` +
        'with the group\'s rows');
    }
    if (4 * shape.wg * shape.rows + staged > shared) {
      const xs = kernel === 'wide-xs' ? ` and x's ${o.K} values` : '';
      fail(`its ${shape.wg} x ${shape.rows} partial sums${xs} exceed the ${shared} bytes of workgroup memory`);
    }
    return;
  }
  if (shape.groups !== undefined) fail(`groups is for kernel 'wide' only`);
  if (!wide && (kernel === 'xs' || (shape.rows !== 2 && shape.rows !== 4))) {
    fail(`these weights take qgemv (not 4 or 8 bits, or x / levels not 16-byte aligned): kernel 'vec4', rows 2 or 4`);
  }
  if (![2, 4, 8, 16].includes(shape.rows)) fail(`rows 2, 4, 8 or 16`);
  const room = shared - 4 * shape.wg * shape.rows;
  if (kernel === 'xs' && staged > room) {
    fail(`kernel 'xs' stages x's ${o.K} values (${4 * o.K} bytes) in workgroup memory, which has ${room} bytes left`);
  }
}

/**
 * qgemv4 reads 16-byte units: 4 or 8 bits (a row is then whole units, K being a multiple of 32), aligned x and
 * levels.
 */
export function wideUnits(x: Tensor, wq: Tensor, bits: number): boolean {
  return (bits === 4 || bits === 8) && x.offset % 16 === 0 && wq.offset % 16 === 0;
}

