// The planner's matmul half (plan/options.ts): the path matmul() takes when a call names none, the tensor cores'
// kernel and schedule under the Gpu's options, and the verdicts on its fast paths for the adapter summary. The
// facts it decides from are the kernels' own (matmul_sgmat.ts: features, self-checks, workgroup memory).
import type { Gpu } from '../../gpu/gpu.ts';
import type { OnOff } from '../../gpu/device.ts';
import { FeatureError } from '../../errors.ts';
import type { Round } from '../common/codes.ts';
import { SGMAT_CONFIG, SGMAT_MIN_ROWS, sgmatUnavailable, stagedUnavailable } from '../matmul/matmul_sgmat.ts';
import { withSchedule, type SgmatPlan, type SgmatSchedule } from '../matmul/sgmat_schedule.ts';
import { kernelPolicy } from './options.ts';

export type MatmulPath = 'gemv' | 'tiled' | 'rows' | 'sgmat';

/** Why a path is off on a CPU driver: the barrier-free variants are the ones that run well there. */
export const CPU_DRIVER = 'a CPU driver (the kernels take barrier-free variants there)';

/**
 * The path of x [M, K] @ w [N, K]^T with this rounding: on a CPU driver 'rows'; the matrix-vector kernels where
 * `gemvFaster` (matmul.ts's measured rule for few rows or few tiles); the tensor cores (subgroup matrices) for bf16
 * prefill of bf16 weights where the device offers them and they passed its self-check; else the exact f32 tiled
 * kernel (f32 mode, f16 weights).
 */
export function matmulPath(gpu: Gpu, s: { M: number; wdtype: string; round?: Round; gemvFaster: boolean }): MatmulPath {
  if (gpu.cpu) return 'rows';
  if (s.gemvFaster) return 'gemv';
  const bf16 = s.round === 'bf16' && s.wdtype === 'bf16';
  return bf16 && s.M >= SGMAT_MIN_ROWS && sgmatUnavailable(gpu) === null ? 'sgmat' : 'tiled';
}

/**
 * The tensor cores' schedule for one call: the Gpu's, with the fields `override` gives (MatmulOptions.sgmat), and
 * 'auto' resolved: the staged kernel where it can run, else the direct one. A forced 'staged' that cannot run is
 * a FeatureError.
 */
export function sgmatPlan(gpu: Gpu, override?: Partial<SgmatSchedule>): SgmatPlan {
  const base = kernelPolicy(gpu).sgmat;
  const s = override ? withSchedule('matmul', base, override) : base;
  const why = stagedUnavailable(gpu);
  if (s.kernel === 'staged' && why !== null) {
    throw new FeatureError('matmul', `tensor-core kernel 'staged' cannot run on this adapter: ${why}`);
  }
  return { kernel: s.kernel === 'direct' || why !== null ? 'direct' : 'staged', pipe: s.pipe, splitK: s.splitK };
}

/** Why the staged kernel is not the one the Gpu's tensor-core matmuls take, or null when it is. */
function stagedOff(gpu: Gpu): string | null {
  const why = sgmatUnavailable(gpu) ?? stagedUnavailable(gpu);
  if (why !== null) return why;
  return kernelPolicy(gpu).sgmat.kernel === 'direct' ? "DeviceOptions.kernels.sgmat.kernel is 'direct'" : null;
}

/** The path bf16 prefill matmuls take on this Gpu, for summaries and benchmark reports. */
export function prefillMatmulPath(gpu: Gpu): string {
  if (gpu.cpu) return 'rows (CPU driver)';
  const why = sgmatUnavailable(gpu);
  const staged = stagedOff(gpu);
  const { M, N, K } = SGMAT_CONFIG;
  const kernel = staged === null ? 'staged 128x128 tiles' : `direct 64x64 tiles (${staged})`;
  return why === null
    ? `subgroup-matrix f16 ${M}x${N}x${K} from ${SGMAT_MIN_ROWS} rows, ${kernel}, quantized weights through a bf16 copy ` +
      'made for the call (tiled f32 below, and in f32 mode)'
    : `tiled f32 (${why})`;
}

/** The fast path of gemv_mlp.ts and qgemv_mlp.ts, by its name in the adapter summary. */
export const DECODE_MLP = 'decode MLP in one dispatch (dense, 4- and 8-bit weights)';

/** The matmul's fast paths on `gpu`: on, or off and why (a feature missing, a CPU driver, a self-check, an option). */
export function matmulPaths(gpu: Gpu): Record<string, OnOff> {
  const subgroups = gpu.subgroups ? null : `no subgroups: ${gpu.summary.fastFeatures.subgroups.why}`;
  const sgmat = sgmatUnavailable(gpu);
  // The kernels' own verdicts first (a feature missing, a failed self-check), else a CPU driver's ('rows').
  const cpuOr = (why: string | null) => why ?? (gpu.cpu ? CPU_DRIVER : null);
  const mlp = kernelPolicy(gpu).decodeMlp === 'fold' ? null : "DeviceOptions.kernels.decodeMlp is 'separate'";
  return onOff({
    'matrix-vector reductions on subgroups': cpuOr(subgroups),
    'prefill matmuls on tensor cores (bf16)': cpuOr(sgmat),
    'staged tensor-core kernel (128x128 tiles)': cpuOr(stagedOff(gpu)),
    [DECODE_MLP]: mlp,
  });
}

/** Verdicts as the adapter summary writes them. */
export function onOff(whys: Record<string, string | null>): Record<string, OnOff> {
  const one = (why: string | null): OnOff => (why === null ? { on: true } : { on: false, why });
  return Object.fromEntries(Object.entries(whys).map(([k, why]) => [k, one(why)]));
}
