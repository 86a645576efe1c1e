// The planner's matmul half (plan/options.ts): the path matmul() takes when a call names none, the tensor cores'
// kernel and schedule under the Gpu's options, and the verdicts on its fast paths for the adapter summary. The
// facts it decides from are the kernels' own (matmul-sgmat.ts: features, self-checks, workgroup memory).
import type { Gpu } from '../../gpu/gpu.ts';
import type { OnOff } from '../../gpu/device.ts';
import { FeatureError } from '../../errors.ts';
import type { Round } from '../common/codes.ts';
import { SGMAT_CONFIG, SGMAT_MIN_ROWS, sgmatUnavailable, stagedUnavailable } from '../matmul/sgmat-caps.ts';
import { withSchedule, type SgmatPlan, type SgmatSchedule } from '../matmul/sgmat-schedule.ts';
import { BM, BN } from '../matmul/tile-shape.ts';
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
 * Matrix-vector blocks of 4 rows re-read the weights ceil(M / 4) times; 64x64 tiles waste most of a tile when M is
 * small and leave a GPU idle when there are few of them. Measured on an H200 over HRM-1B's shapes: at M = 23 the
 * gemv path was 1.4-13x faster on every layer (lm_head included); at M = 64 still 3-7x on o_proj / down_proj (24
 * tiles), while the tiled path won on lm_head. Other GPUs may move these bounds.
 */
export function preferGemv(M: number, N: number): boolean {
  if (M <= 32) return true;
  const tiles = Math.ceil(M / BM) * Math.ceil(N / BN);
  return M <= 64 && tiles < 64;
}

/**
 * Up to this many x rows qlinear's automatic path is the matrix-vector one; MLX's qmv also takes only a few rows
 * before its qmm wins.
 */
const AUTO_QGEMV_MAX_M = 8;
/**
 * The largest dense copy (bytes) qlinear's automatic path makes of one weight for the tensor cores. The copy and the
 * tensor cores' f16 copy of it live for the call (then in the buffer pool), twice this at most: HRM-Text-1B's layer
 * projections (up to 24 MiB) take the path, its lm_head (192 MiB, a third of the q4 model's own size) keeps qtiled.
 */
const DENSE_MAX_BYTES = 64 * 2 ** 20;

/**
 * qlinear's path for x [M, K] @ W [N, K]^T: CPU drivers 'rows'; few rows 'gemv'; bf16 prefill on tensor cores
 * (through a bf16 copy of the weight) where matmul would take them; else 'tiled'.
 */
export function qlinearPath(gpu: Gpu, M: number, N: number, K: number, round?: Round): MatmulPath {
  if (gpu.cpu) return 'rows';
  if (M <= AUTO_QGEMV_MAX_M) return 'gemv';
  const sgmat = round === 'bf16' && 2 * N * K <= DENSE_MAX_BYTES && matmulPath(gpu,
    { M, wdtype: 'bf16', round, gemvFaster: false }) === 'sgmat';
  return sgmat ? 'sgmat' : 'tiled';
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
    ? `subgroup-matrix f16 ${M}x${N}x${K} from ${SGMAT_MIN_ROWS} rows, ${kernel}, ` +
      'quantized weights through a bf16 copy made for the call (tiled f32 below, and in f32 mode)'
    : `tiled f32 (${why})`;
}

/** The fast path of gemv-mlp.ts and qgemv-mlp.ts, by its name in the adapter summary. */
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

/**
 * Whether a decode layer's MLP over `rows` x rows runs in one dispatch: the Gpu's decodeMlp 'fold', and one row.
 * The kernels then say whether they take the weights (gemv-mlp.ts, qgemv-mlp.ts return null where not; the caller
 * composes the two products).
 */
export function decodeMlpFolds(gpu: Gpu, rows: number): boolean {
  return kernelPolicy(gpu).decodeMlp === 'fold' && rows === 1;
}
