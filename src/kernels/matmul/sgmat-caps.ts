// What the tensor-core matmul can do on a device (matmul-sgmat.ts dispatches it): the features and subgroup-matrix
// configuration it needs, its tiles and workgroup memory, and the device's self-check verdicts (sgmat-check.ts sets
// them). The planner (kernels/plan/matmul.ts) decides from these facts.
import type { Gpu } from '../../gpu/gpu.ts';
import { stateKey } from '../../gpu/registry.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, FeatureError } from '../../errors.ts';
import type { Round } from '../common/codes.ts';
import { SGMAT_KERNELS } from './sgmat-schedule.ts';

/**
 * Rows and columns are padded to the staged kernel's tile, K to its block (the direct kernel's divide them): either
 * kernel takes any operand.
 */
export const PAD = { M: SGMAT_KERNELS.staged.M, N: SGMAT_KERNELS.staged.N, K: SGMAT_KERNELS.staged.kStep };
/**
 * The staged kernel's workgroup memory: its A and B tiles, M and N rows of f16 each, rows padded by 8
 * (LD = kStep + 8).
 */
const STAGED_SHARED = (SGMAT_KERNELS.staged.M + SGMAT_KERNELS.staged.N) * (SGMAT_KERNELS.staged.kStep + 8) * 2;
/** The subgroup-matrix shape the kernel is written for (f16 inputs, f32 result) and its subgroup size. */
export const SGMAT_CONFIG = { M: 16, N: 16, K: 16, subgroup: 32 };
const FEATURE = 'chromium-experimental-subgroup-matrix';
/** Below this many x rows the f16 copies of the weights cost more than the tensor cores save. */
export const SGMAT_MIN_ROWS = 128;

/** Why this adapter cannot run the kernel (a feature missing, a failed self-check), or null when it can. */
export function sgmatUnavailable(gpu: Gpu): string | null {
  return featureMissing(gpu) ?? gpu.state.peek(SELF_CHECK) ?? null;
}

/** The self-check's verdict per device: null passed, else why not (never checked: no entry). */
export const SELF_CHECK = stateKey<string | null>('matmul_sgmat.selfCheck');
/** The staged kernel's own verdict where it failed the self-check and the direct kernel passed it. */
export const STAGED_CHECK = stateKey<string>('matmul_sgmat.stagedCheck');

/** Why the staged kernel cannot run here (it takes the subgroup id and 36 KiB of workgroup memory), or null. */
export function stagedUnavailable(gpu: Gpu): string | null {
  if (!gpu.subgroups) return `no subgroups: ${gpu.summary.fastFeatures.subgroups.why}`;
  const have = gpu.device.limits.maxComputeWorkgroupStorageSize;
  if (have < STAGED_SHARED) return `${have} bytes of workgroup memory, ${STAGED_SHARED} needed`;
  return gpu.state.peek(STAGED_CHECK) ?? null;
}

/** The features the kernel runs on, each absent one with the summary's reason (what unlocks it, or an option). */
export function featureMissing(gpu: Gpu): string | null {
  const s = gpu.summary;
  if (!gpu.device.features.has(FEATURE)) return `no ${FEATURE}: ${s.fastFeatures[FEATURE].why}`;
  if (!gpu.f16) return `no shader-f16: ${s.fastFeatures['shader-f16'].why}`;
  const want = `f16>f32 ${SGMAT_CONFIG.M}x${SGMAT_CONFIG.N}x${SGMAT_CONFIG.K}`;
  if (!s.subgroupMatrix.includes(want)) {
    return `no ${want} subgroup-matrix configuration (adapter has: ${s.subgroupMatrix.join(', ') || 'none'})`;
  }
  if (s.subgroupSizes[0] !== SGMAT_CONFIG.subgroup || s.subgroupSizes[1] !== SGMAT_CONFIG.subgroup) {
    return `subgroup size ${s.subgroupSizes.join('-')}; the kernel lays out its tiles for exactly ` +
      `${SGMAT_CONFIG.subgroup}`;
  }
  return null;
}

/** Throws unless path 'sgmat' can serve x @ w^T with this rounding. */
export function requireSgmat(x: Tensor, w: Tensor, round?: Round): void {
  const what = `x '${x.label}' [${x.shape.join(', ')}] @ weight '${w.label}' [${w.shape.join(', ')}] ${w.dtype}`;
  const why = sgmatUnavailable(x.gpu);
  if (why !== null) throw new FeatureError('matmul', `path 'sgmat' for ${what}: this adapter cannot run it: ${why}`);
  if (round !== 'bf16' || w.dtype !== 'bf16') throw new DTypeError('matmul',
    `path 'sgmat' needs round 'bf16' and bf16 weights (${what}, round '${round ?? 'none'}')`);
}

/** Why batchedSgmat cannot run on this device (no tensor cores, or no staged kernel), or null. */
export function batchedSgmatUnavailable(gpu: Gpu): string | null {
  return sgmatUnavailable(gpu) ?? stagedUnavailable(gpu);
}
