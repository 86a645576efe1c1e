// The subgroup-matrix (tensor-core) prefill matmul. No CPU driver offers subgroup matrices, so the parity checks
// (matmul-sgmat.check.ts) skip here with the reason and run where the adapter has them (the H200: bench
// --check-sgmat stores the same report in the run's JSON). What runs everywhere: the path choice and its errors.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { fixture } from '../../../testkit/helpers/fixtures.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { DTypeError, FeatureError, InputError } from '../../../src/errors.ts';
import { matmul } from '../../../src/kernels/matmul/matmul.ts';
import { batchedSgmat } from '../../../src/kernels/matmul/matmul-sgmat.ts';
import { sgmatUnavailable, stagedUnavailable } from '../../../src/kernels/matmul/sgmat-caps.ts';
import { SGMAT_KERNELS, rowSpans, splitFor } from '../../../src/kernels/matmul/sgmat-schedule.ts';
import { prefillMatmulPath, sgmatPlan } from '../../../src/kernels/plan/matmul.ts';
import type { Gpu } from '../../../src/gpu/gpu.ts';
import { checkSgmat } from '../../../testkit/kernels/matmul-sgmat.check.ts';

describe('matmul path sgmat (subgroup matrices)', async () => {
  const gpu = await getGpu();
  const why = sgmatUnavailable(gpu);
  const x = Tensor.from(gpu, new Float32Array(64 * 32), [64, 32], 'f32', 'x');
  const w = Tensor.from(gpu, new Float32Array(16 * 32), [16, 32], 'bf16', 'w');

  it('the adapter summary lists its subgroup-matrix configurations exactly when it has the feature', () => {
    const has = gpu.device.features.has('chromium-experimental-subgroup-matrix');
    expect(gpu.summary.subgroupMatrix.length > 0).toBe(has);
    expect(gpu.summary.subgroupSizes.every((v) => Number.isInteger(v) && v >= 0)).toBe(true);
    expect(prefillMatmulPath(gpu)).toMatch(gpu.cpu ? /^rows/ : why === null ?
      /^subgroup-matrix f16 16x16x16 from 128 rows, (staged|direct)/ : /^tiled f32 \((no |failed its self-check)/);
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
    expect(() => matmul(x, w, { path: 'fast' as 'tiled' }))
      .toThrow(/^\[matmul\] unknown path "fast"; use 'auto', 'gemv', 'tiled', 'rows' or 'sgmat'$/);
  });

  it('split-K: the auto rule on the model shapes, forced splits, slices never empty, slabs within one binding', () => {
    // The Gpu's binding limit (its option bindingLimit may lower the device's), not the device's own.
    const fake = (bytes: number) => ({ maxBinding: bytes,
      device: { limits: { maxStorageBufferBindingSize: 2 ** 31 } } }) as unknown as Gpu;
    const big = fake(2 ** 30), tile = SGMAT_KERNELS.direct, staged = SGMAT_KERNELS.staged;
    // 512 rows: gqkv (768 tiles) and gate_up (1024) unsplit; o_proj and down (192 tiles) in 4 slices.
    expect(splitFor(big, 512, 6144, 1536, tile)).toEqual({ S: 1, Ks: 1536 });
    expect(splitFor(big, 512, 8192, 1536, tile)).toEqual({ S: 1, Ks: 1536 });
    expect(splitFor(big, 512, 1536, 1536, tile)).toEqual({ S: 4, Ks: 384 });
    expect(splitFor(big, 512, 1536, 4096, tile)).toEqual({ S: 4, Ks: 1024 });
    // The staged kernel's 128 x 128 tiles: gate_up (256) whole, gqkv (192), o_proj and down (48) in 2 slices
    // of a multiple of 64 columns; the self-check's product (256 x 128 x 320 padded) in 2 slices of 192 and 128.
    expect(splitFor(big, 512, 6144, 1536, staged)).toEqual({ S: 2, Ks: 768 });
    expect(splitFor(big, 512, 8192, 1536, staged)).toEqual({ S: 1, Ks: 1536 });
    expect(splitFor(big, 512, 1536, 1536, staged)).toEqual({ S: 2, Ks: 768 });
    expect(splitFor(big, 512, 1536, 4096, staged)).toEqual({ S: 2, Ks: 2048 });
    expect(splitFor(big, 256, 128, 320, staged)).toEqual({ S: 2, Ks: 192 });
    // Few tiles want 4 slices, but 'auto' keeps >= 128 columns in each: K 112 (7 steps of 16) stays whole.
    expect(splitFor(big, 128, 64, 112, tile)).toEqual({ S: 1, Ks: 112 });
    expect(splitFor(big, 128, 64, 512, tile)).toEqual({ S: 4, Ks: 128 });
    // The self-check's product (130 x 70 x 260): 17 steps in 2 slices, so the check covers the split.
    expect(splitFor(big, 192, 128, 272, tile)).toEqual({ S: 2, Ks: 144 });
    expect(splitFor(big, 256, 128, 320, staged, 4)).toEqual({ S: 3, Ks: 128 });
    // Forced: 21 steps in slices of 6 (the last 3); 3 steps give 3 slices of one, not an empty fourth.
    expect(splitFor(big, 512, 1536, 336, tile, 4)).toEqual({ S: 4, Ks: 96 });
    expect(splitFor(big, 64, 64, 48, tile, 4)).toEqual({ S: 3, Ks: 16 });
    expect(splitFor(big, 64, 64, 16, tile, 4)).toEqual({ S: 1, Ks: 16 });
    // 4 slabs of 512 x 1536 f32 are 12 MiB: a 7 MiB binding limit leaves 1 slab (2 would be 6 MiB: fits).
    expect(splitFor(fake(7 * 2 ** 20), 512, 1536, 1536, tile, 4).S).toBe(2);
    expect(splitFor(fake(4 * 2 ** 20), 512, 1536, 1536, tile, 4).S).toBe(1);
    // A call's schedule fields are checked as the Gpu's options are (tests/kernels/plan/options.test.ts).
    expect(() => sgmatPlan(gpu, { splitK: 3 as 2 })).toThrow(/^\[matmul\] splitK 3 must be 1, 2, 4 or 'auto'$/);
    expect(() => sgmatPlan(gpu, { kernel: 'fast' as 'staged' }))
      .toThrow(/^\[matmul\] kernel "fast" must be 'auto', 'staged' or 'direct'$/);
    expect(sgmatPlan(gpu, { pipe: false, splitK: 2 })).toMatchObject({ pipe: false, splitK: 2 });
  });

  it('row spans: a weight whose f16 copy or product would pass one binding is taken in spans of whole tiles', () => {
    // HRM-Text-1B's lm_head at a 128 MiB limit: the loader's chunk of 43690 rows (bf16, 1536 a row) fits, its f16
    // copy padded to 43776 rows would not: spans of 43648 rows (a multiple of 128) and 42.
    const L = 128 * 2 ** 20;
    expect(rowSpans(L, 43690, 2 * 1536, 128, 'w')).toEqual([[0, 43648], [43648, 42]]);
    expect(rowSpans(L, 43648, 2 * 1536, 128, 'w')).toEqual([[0, 43648]]);
    // Products of 512 x rows f32 at 128 MiB: 65536 columns in one, 65537 in two.
    expect(rowSpans(L, 65536, 4 * 512, 128, 'C')).toEqual([[0, 65536]]);
    expect(rowSpans(L, 65537, 4 * 512, 128, 'C')).toEqual([[0, 65536], [65536, 1]]);
    // Every span padded to the tile fits, spans cover the rows in order, all but the last a multiple of the tile.
    for (const [limit, rows, row] of [[262144, 2100, 128], [262144, 2048, 512], [100000, 999, 96], [4096, 77, 32]]) {
      const spans = rowSpans(limit, rows, row, 128, 'w');
      let next = 0;
      for (const [i, [r0, n]] of spans.entries()) {
        expect(r0).toBe(next);
        expect(Math.ceil(n / 128) * 128 * row).toBeLessThanOrEqual(limit);
        if (i < spans.length - 1) expect(n % 128).toBe(0);
        next += n;
      }
      expect(next).toBe(rows);
    }
    expect(() => rowSpans(4096, 10, 64, 128, "the f16 copy of 'w'"))
      .toThrow(new RegExp("^\\[matmul\\] path 'sgmat': 128 rows of the f16 copy of 'w' \\(64 bytes a row\\) " +
        'exceed the binding limit of 4096 bytes$'));
  });

  it('the kernel choice: auto takes the staged kernel only where it can run; a forced one that cannot says why', () => {
    const staged = stagedUnavailable(gpu);
    // 36 KiB of workgroup memory and the subgroup id: an adapter with less, or without subgroups, is named.
    if (!gpu.subgroups) expect(staged).toBe(`no subgroups: ${gpu.summary.fastFeatures.subgroups.why}`);
    else if (gpu.device.limits.maxComputeWorkgroupStorageSize < 36864) {
      expect(staged).toBe(`${gpu.device.limits.maxComputeWorkgroupStorageSize} bytes of workgroup memory, ` +
        '36864 needed');
    }
    expect(sgmatPlan(gpu, { kernel: 'auto' }).kernel).toBe(staged === null ? 'staged' : 'direct');
    expect(sgmatPlan(gpu, { kernel: 'direct' }).kernel).toBe('direct');
    if (staged === null) expect(sgmatPlan(gpu, { kernel: 'staged' }).kernel).toBe('staged');
    else {
      const why = staged.replace(/[()':]/g, '.');
      expect(() => sgmatPlan(gpu, { kernel: 'staged' }))
        .toThrow(new RegExp(`^\\[matmul\\] tensor-core kernel 'staged' cannot run on this adapter: ${why}$`));
    }
  });

  it('batched products name the operands whose shapes do not make the products asked for', () => {
    const a = Tensor.empty(gpu, [2, 128, 64], 'f16', 'a'), b = Tensor.empty(gpu, [2, 128, 64], 'f16',
      'b'), c = Tensor.empty(gpu, [2, 128, 128], 'f32', 'c');
    try {
      // Mp not a multiple of 128; c too small for 2 slices; a fractional slice count.
      expect(() => batchedSgmat(a, b, c, { batch: 2, Mp: 64, Np: 128, Kp: 64, slices: 1 }, 'qk')).toThrow(InputError);
      expect(() => batchedSgmat(a, b, c, { batch: 2, Mp: 128, Np: 128, Kp: 64, slices: 2 }, 'qk')).toThrow(new RegExp(
        '^\\[matmul\\] batched sgmat qk: a \\[2, 128, 64\\], b \\[2, 128, 64\\], c \\[2, 128, 128\\] do not hold ' +
        '2 products of \\[128, 64\\] @ \\[128, 64\\]\\^T in 2 K slices'));
      expect(() => batchedSgmat(a, b, c, { batch: 2, Mp: 128, Np: 128, Kp: 64, slices: 1.5 },
        'qk')).toThrow(InputError);
    } finally {
      for (const t of [a, b, c]) t.dispose();
    }
  });

  it('matches float64, MLX and its own numerics rule on odd shapes, chunks, fusions and out-of-range values',
    async (ctx) => {
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
