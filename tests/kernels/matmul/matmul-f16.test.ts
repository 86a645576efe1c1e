// matmulF16 (f16 activations), checked by matmul-f16.check.ts in Node where its adapter has shader-f16 (Dawn on
// lavapipe) and in Deno, whose wgpu offers it on lavapipe (deno-matmul-f16.ts): Deno runs the seeded cases only when
// Node could not, else MLX's fixture on both paths (its own shader translation, without compiling every case again).
// The typed errors are checked on a device opened without shader-f16.
import { afterAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { getGpu } from '../../helpers/gpu.ts';
import { EXHAUSTIVE } from '../../helpers/sweep.ts';
import { Gpu } from '../../../src/kernels/gpu.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { DTypeError, FeatureError, ShapeError } from '../../../src/errors.ts';
import { matmulF16 } from '../../../src/kernels/matmul/matmul-f16.ts';
import { checkMatmulF16, type F16Report } from '../../../testkit/kernels/matmul-f16.check.ts';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** The last line deno-matmul-f16.ts prints: its runtime, adapter and features, and the check's report. */
interface DenoReport { runtime: string; adapter: string; f16: boolean; features?: string[]; report?: F16Report }

function expectReport(r: F16Report, mlxOnly = false): void {
  const bad = r.cases.filter((c) => c.failure);
  expect(bad.map((c) => `${c.name}: ${c.failure}`)).toEqual([]);
  // About 115 cases, each shape in one weight dtype; HRM_EXHAUSTIVE=1 (deno-matmul-f16.ts reads it too) all 331.
  if (mlxOnly) expect(r.cases.map((c) => c.name)).toEqual(['gemv',
    'tiled'].map((p) => `MLX fixture a [7,320] @ b [192,320]^T (${p})`));
  else expect(r.cases.length).toBeGreaterThan(EXHAUSTIVE ? 300 : 100);
  // The MLX criterion over every seeded f16 output (see matmul-f16.check.ts for why a few may move by an ulp).
  expect(r.within1, JSON.stringify({ ...r, cases: undefined })).toBeGreaterThanOrEqual(0.999);
  for (const m of r.mlx) {
    // MLX's f16 matmul: one rounding of an f32 sum, so only summation order near a midpoint moves an output, by 1 ulp.
    expect(m.within1, JSON.stringify(m)).toBeGreaterThanOrEqual(0.999);
    expect(m.worst, JSON.stringify(m)).toBeLessThanOrEqual(1);
  }
}

describe('matmulF16 errors (a device opened without shader-f16)', async () => {
  const gpu = await Gpu.create({ f16: false });
  afterAll(() => gpu.destroy());
  const x = Tensor.from(gpu, new Float32Array(6 * 8), [6, 8], 'f16', 'x');
  const w = Tensor.from(gpu, new Float32Array(4 * 8), [4, 8], 'bf16', 'w');

  it('names x and the adapter when the device lacks shader-f16', () => {
    expect(gpu.f16).toBe(false);
    expect(() => matmulF16(x, w)).toThrow(FeatureError);
    expect(() => matmulF16(x, w)).toThrow(new RegExp("^\\[matmulF16\\] x 'x' \\[6, 8\\] f16: this device has no " +
      'shader-f16 \\(adapter .+\\); use matmul with f32 activations$'));
  });

  it('rejects wrong dtypes and shapes before asking for the feature', () => {
    const xf = Tensor.from(gpu, new Float32Array(6 * 8), [6, 8], 'f32', 'xf');
    const wu = Tensor.from(gpu, new Uint32Array(4 * 8), [4, 8], 'u32', 'wu');
    const wf = Tensor.from(gpu, new Float32Array(4 * 8), [4, 8], 'f32', 'wf');
    const w9 = Tensor.from(gpu, new Float32Array(4 * 9), [4, 9], 'f16', 'w9');
    expect(() => matmulF16(xf,
      w)).toThrow(/\[matmulF16\] x 'xf' \[6, 8\] f32 must be f16 \(f32 activations: use matmul\)/);
    expect(() => matmulF16(x, wu)).toThrow(/\[matmulF16\] weight 'wu' \[4, 8\] u32 must be f32, bf16 or f16/);
    expect(() => matmulF16(x, [w, wf])).toThrow(/weight chunk 1 'wf' \[4, 8\] f32 differs in dtype/);
    expect(() => matmulF16(x, w9)).toThrow(ShapeError);
    expect(() => matmulF16(x,
      w9)).toThrow(/x 'x' \[6, 8\] f16 @ weight 'w9' \[4, 9\] f16\^T: the weight must be \[N, 8\]/);
    expect(() => matmulF16(x, [])).toThrow(ShapeError);
    expect(() => matmulF16(x, w, { out: 'bf16' as 'f16' })).toThrow(/unknown out "bf16"/);
    expect(() => matmulF16(x, w, { round: 'bf16' })).toThrow(/round 'bf16' cannot be stored in an f16 output/);
  });
});

describe('matmulF16 against the float64 reference and MLX', () => {
  it('in Deno (wgpu): MLX\'s fixture on both paths, or every seeded case where Node\'s adapter has no shader-f16',
    async (ctx) => {
    const deno = fileURLToPath(new URL('../../../node_modules/.bin/deno', import.meta.url));
    const t0 = performance.now();
    const mlxOnly = (await getGpu()).f16 && !EXHAUSTIVE;
    const env = { ...process.env, HRM_F16_MLX_ONLY: mlxOnly ? '1' : '0' };
    const { stdout } = await promisify(execFile)(deno, ['run', '-A', 'tests/kernels/matmul/deno-matmul-f16.ts'],
      { cwd: root, env, timeout: 170_000, maxBuffer: 1 << 24 });
    const r = JSON.parse(stdout.trim().split('\n').pop()!) as DenoReport;
    expect(r.runtime).toBe('deno');
    if (!r.f16) {
      // The only reason to skip: nothing here can run f16 shaders. Say so where the log shows it.
      const why = `Deno's adapter (${r.adapter}) has no shader-f16 (features: ${r.features?.join(', ')}): ` +
        'matmulF16 not checked';
      console.warn(why);
      ctx.skip(why);
    }
    expectReport(r.report!, mlxOnly);
    console.log(`matmulF16 in Deno on ${r.adapter}: ${r.report!.cases.length} cases, ` +
      `${r.report!.f16Outputs} f16 outputs (${(r.report!.within1 * 100).toFixed(3)} % within 1 ulp), ` +
      `check ${(r.report!.ms / 1000).toFixed(1)} s, run ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }, 180_000);

  it('in Node where its adapter has shader-f16', async (ctx) => {
    const gpu = await getGpu();
    if (!gpu.f16) ctx.skip(`Node's adapter has no shader-f16 (checked in Deno instead)`);
    expectReport(await checkMatmulF16(gpu, EXHAUSTIVE));
  });
});
