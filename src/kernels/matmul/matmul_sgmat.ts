// Prefill matmul on subgroup matrices (tensor cores) for bf16 mode: x @ W^T over f32 activations holding bf16
// values and bf16 weights, staged as exact f16, f32 accumulation, one rounding to bf16 (matmul_sgmat.wgsl says why
// the result is the same f32 sum of exact products as matmul_tiled's, whatever the range of the data).
// matmul() routes here for path 'sgmat'; this file only dispatches one weight chunk and says whether the adapter can.
//
// Status (H200, Dawn through npm webgpu 0.6.2, NVIDIA Vulkan 580.159, 2026-12-01; bench/results/README.md): the
// adapter offers f16>f32 16x16x16 and this kernel compiles, but its tensor-core products are wrong once K reaches 16,
// even for one 16x16x16 block (its f32 fallback is exact), at 0.4-1.2 TFLOP/s. A bare kernel loading the matrices
// from f16 storage buffers (bench/sgmat-probe.ts) is exact there, but reaches only 3.6-4.2 TFLOP/s against 15 for
// the f32 tiled kernel. So matmul()'s automatic choice does not take this path; loads of subgroup matrices from
// workgroup-memory f16 arrays are the suspect.
import { Kernel } from '../../tensor/kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import type { Gpu } from '../../tensor/gpu.ts';
import { DTypeError, FeatureError } from '../../tensor/errors.ts';
import type { Round } from '../common/codes.ts';

const KERNEL = new Kernel('matmul/matmul_sgmat.wgsl', 'matmul_sgmat');
/** Output tile of one workgroup (one subgroup): rows of x by weight rows. */
const TILE = { M: 64, N: 32 };
/** The subgroup-matrix shape the kernel is written for (f16 inputs, f32 result) and its subgroup size. */
const CONFIG = { M: 16, N: 16, K: 16, subgroup: 32 };
const FEATURE = 'chromium-experimental-subgroup-matrix';
/** Workgroup memory of the kernel: 12 staged 16 x 24 f16 blocks, two 64 x 32 f32 result tiles, two flags. */
const WORKGROUP_BYTES = 12 * 16 * 24 * 2 + 2 * 64 * 32 * 4 + 8;

/** Why this adapter cannot run the kernel, or null when it can. */
export function sgmatUnavailable(gpu: Gpu): string | null {
  const s = gpu.summary;
  if (!gpu.device.features.has(FEATURE)) return `no ${FEATURE} (Node: Dawn's allow_unsafe_apis; Chrome: --enable-unsafe-webgpu)`;
  if (!gpu.f16) return 'no shader-f16 (on NVIDIA, Dawn\'s vulkan_enable_f16_on_nvidia)';
  const want = `f16>f32 ${CONFIG.M}x${CONFIG.N}x${CONFIG.K}`;
  if (!s.subgroupMatrix.includes(want)) return `no ${want} subgroup-matrix configuration (adapter has: ${s.subgroupMatrix.join(', ') || 'none'})`;
  if (s.subgroupSizes[0] !== CONFIG.subgroup || s.subgroupSizes[1] !== CONFIG.subgroup) {
    return `subgroup size ${s.subgroupSizes.join('-')}; the kernel lays out its tiles for exactly ${CONFIG.subgroup}`;
  }
  const shared = gpu.device.limits.maxComputeWorkgroupStorageSize;
  if (shared < WORKGROUP_BYTES) return `${shared} bytes of workgroup memory; the kernel needs ${WORKGROUP_BYTES}`;
  return null;
}

/** The path bf16 prefill matmuls take on this adapter, for summaries and benchmark reports. */
export function prefillMatmulPath(gpu: Gpu): string {
  if (gpu.cpu) return 'rows (CPU driver)';
  const why = sgmatUnavailable(gpu);
  return why === null
    ? `tiled f32 (subgroup-matrix f16 ${CONFIG.M}x${CONFIG.N}x${CONFIG.K} runs as path 'sgmat' on request only: it fails its parity checks on the H200)`
    : `tiled f32 (${why})`;
}

/** Throws unless path 'sgmat' can serve x @ w^T with this rounding. */
export function requireSgmat(x: Tensor, w: Tensor, round?: Round): void {
  const what = `x '${x.label}' [${x.shape.join(', ')}] @ weight '${w.label}' [${w.shape.join(', ')}] ${w.dtype}`;
  const why = sgmatUnavailable(x.gpu);
  if (why !== null) throw new FeatureError('matmul', `path 'sgmat' for ${what}: this adapter cannot run it: ${why}`);
  if (round !== 'bf16' || w.dtype !== 'bf16') throw new DTypeError('matmul', `path 'sgmat' needs round 'bf16' and bf16 weights (${what}, round '${round ?? 'none'}')`);
}

const statsOf = new WeakMap<Gpu, Tensor>();

/**
 * stats[0]: k-slices the kernel computed with f32 FMAs because a value was not exact in f16, summed over every
 * call on this device (wrapping at 2^32). Tests zero it and check that it moves only when it must.
 */
export function sgmatStats(gpu: Gpu): Tensor {
  let t = statsOf.get(gpu);
  if (!t) statsOf.set(gpu, (t = Tensor.from(gpu, new Uint32Array(4), [4], 'u32', 'matmul.sgmat.stats')));
  return t;
}

/** out[:, col0 .. col0 + N) (+)= bf16(x @ c^T) for one bf16 weight chunk c [N, K]; x f32 [M, K], out f32 [M, ldo]. */
export function dispatchSgmat(x: Tensor, c: Tensor, out: Tensor, u: { M: number; K: number; ldo: number; col0: number }, accumulate: boolean): void {
  const N = c.shape[0];
  KERNEL.dispatch(x.gpu, {
    bindings: { x, w: c, out, stats: sgmatStats(x.gpu) }, label: 'matmul.sgmat',
    uniforms: { M: u.M, N, K: u.K, ldo: u.ldo, col0: u.col0 },
    overrides: { ACC: accumulate ? 1 : 0 },
    workgroups: [Math.ceil(N / TILE.N), Math.ceil(u.M / TILE.M)],
  });
}
