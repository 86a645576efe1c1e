// The subgroup-matrix (tensor-core) prefill matmul. No CPU driver offers subgroup matrices, so the parity checks
// (matmul_sgmat.check.ts) skip here with the reason and run where the adapter has them (the H200: bench
// --check-sgmat stores the same report in the run's JSON). What runs everywhere: the path choice and its errors.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { fixture } from '../helpers/fixtures.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { DTypeError, FeatureError } from '../../src/tensor/errors.ts';
import { matmul } from '../../src/kernels/matmul/matmul.ts';
import { prefillMatmulPath, sgmatUnavailable } from '../../src/kernels/matmul/matmul_sgmat.ts';
import { checkSgmat } from './matmul_sgmat.check.ts';

describe('matmul path sgmat (subgroup matrices)', async () => {
  const gpu = await getGpu();
  const why = sgmatUnavailable(gpu);
  const x = Tensor.from(gpu, new Float32Array(64 * 32), [64, 32], 'f32', 'x');
  const w = Tensor.from(gpu, new Float32Array(16 * 32), [16, 32], 'bf16', 'w');

  it('the adapter summary lists its subgroup-matrix configurations exactly when it has the feature', () => {
    const has = gpu.device.features.has('chromium-experimental-subgroup-matrix');
    expect(gpu.summary.subgroupMatrix.length > 0).toBe(has);
    expect(gpu.summary.subgroupSizes.every((v) => Number.isInteger(v) && v >= 0)).toBe(true);
    expect(prefillMatmulPath(gpu)).toMatch(gpu.cpu ? /^rows/ : why === null ? /^subgroup-matrix f16 16x16x16 from 128 rows/ : /^tiled f32 \((no |failed its self-check)/);
  });

  it('a forced sgmat path says why it cannot run, or needs bf16 rounding of bf16 weights', () => {
    if (why !== null) {
      expect(() => matmul(x, w, { round: 'bf16', path: 'sgmat' })).toThrow(FeatureError);
      expect(() => matmul(x, w, { round: 'bf16', path: 'sgmat' })).toThrow(
        /^\[matmul\] path 'sgmat' for x 'x' \[64, 32\] @ weight 'w' \[16, 32\] bf16: this adapter cannot run it: no /);
    } else {
      expect(() => matmul(x, w, { path: 'sgmat' })).toThrow(DTypeError);
      expect(() => matmul(x, w, { path: 'sgmat' })).toThrow(/needs round 'bf16' and bf16 weights .* round 'none'/);
    }
    expect(() => matmul(x, w, { path: 'fast' as 'tiled' })).toThrow(/^\[matmul\] unknown path "fast"; use 'auto', 'gemv', 'tiled', 'rows' or 'sgmat'$/);
  });

  it('matches float64, MLX and its own numerics rule on odd shapes, chunks, fusions and out-of-range values', async (ctx) => {
    if (why !== null) {
      console.log(`matmul_sgmat parity: skipped, ${why}`);
      ctx.skip();
    }
    const r = await checkSgmat(gpu, await fixture('ops.safetensors'));
    expect(r.cases.filter((c) => c.failure).map((c) => `${c.name}: ${c.failure}`)).toEqual([]);
    expect(r.within1).toBeGreaterThanOrEqual(0.999);
    expect(r.mlx!.within1, JSON.stringify(r.mlx)).toBeGreaterThanOrEqual(0.999);
    expect(r.mlx!.worst).toBeLessThanOrEqual(1);
  });
});
