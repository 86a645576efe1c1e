// The persistent MLP tail (kernels/persist/mlp.wgsl) against the per-op path it replaces (two gemv_wide products,
// matmul's path 'gemv', as a GPU runs a decode step), bit for bit, at grids of 1 and 2 workgroups, f32 / bf16 / f16
// weights and activations, HRM-Text-1B's shape; its barrier counts left at 0, so that a captured dispatch replays
// three times in one pass as three per-op steps. Then mlpStep on a Gpu whose barrier
// is made to run out: the step is redone on the per-op path (x untouched by the failed kernel), the Gpu warns once
// and stays per-op; where no option forces the grid, the kernel variant's own, at most the self-check's.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { EPS, asDtype, asRound, type WDType } from '../../helpers/matmul-cases.ts';
import { Gpu } from '../../../src/kernels/gpu.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { matmul, type MatmulOptions } from '../../../src/kernels/matmul/matmul.ts';
import { mlpGrid, mlpStep, persistentMlp, persistMlpShape, readControl } from '../../../src/kernels/persist/mlp.ts';
import { PERSIST_STEP, persistGrid, persistOff } from '../../../src/kernels/plan/persist.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import { capture, replay } from '../../../src/gpu/capture.ts';
import { expectBits, TEST_SPIN } from '../../helpers/persist.ts';
import { sweep } from '../../helpers/sweep.ts';

interface Case { K: number; I: number; dtype: WDType; round: Round; why: string }

// Each case is a pipeline of its own per path; the CPU driver takes the first three (the 1B shape passed there too,
// in 27 s of a loaded 2-core machine: HRM_EXHAUSTIVE=1 runs it).
const CASES: Case[] = [
  { K: 512, I: 1024, dtype: 'bf16', round: 'bf16', why: '128 gate_up blocks of 8, 32 down blocks of 16 rows' },
  { K: 256, I: 768, dtype: 'f32', round: 'none', why: 'f32 weights and activations, 3 units a lane of down' },
  { K: 512, I: 512, dtype: 'f16', round: 'f16', why: 'f16 weights and rounding' },
  { K: 1536, I: 4096, dtype: 'bf16', round: 'bf16', why: "HRM-Text-1B's shape: 3 and 8 units a lane" },
];

function operands(gpu: Gpu, c: Case, seed: number) {
  const xv = asRound(c.round, randn(seed, c.K, 3));
  return {
    xv,
    gu: Tensor.from(gpu, asDtype(c.dtype, randn(seed + 1, 2 * c.I * c.K, 1 / Math.sqrt(c.K))), [2 * c.I, c.K],
      c.dtype, 'gate_up'),
    down: Tensor.from(gpu, asDtype(c.dtype, randn(seed + 2, c.K * c.I, 2 / Math.sqrt(c.I))), [c.K, c.I], c.dtype,
      'down'),
  };
}

/** x after the per-op MLP (matmul's norm + SwiGLU product, then its residual product) with `o`'s path. */
async function perOp(gpu: Gpu, xv: Float32Array, gu: Tensor, down: Tensor, round: Round,
  o: MatmulOptions): Promise<Float32Array> {
  const x = Tensor.from(gpu, xv, [1, xv.length], 'f32', 'x.ref');
  const a = matmul(x, gu, { ...o, round, norm: { eps: EPS }, swiglu: true });
  matmul(a, down, { ...o, round, accumulate: x });
  const got = (await x.read()) as Float32Array;
  for (const t of [a, x]) t.dispose();
  return got;
}

describe('persistent MLP: one dispatch, a grid barrier between gate_up and down', () => {
  for (const c of sweep(CASES, (_, i) => i < 3)) {
    it(`equals the per-op gemv_wide path bit for bit at grids 1 and 2: K ${c.K}, I ${c.I}, ${c.why}`, async () => {
      const gpu = await getGpu();
      const o = operands(gpu, c, c.K + c.I);
      try {
        const want = await perOp(gpu, o.xv, o.gu, o.down, c.round, { path: 'gemv' });
        expect(want.filter((v, i) => v !== o.xv[i]).length, 'the MLP changes x').toBeGreaterThan(c.K / 2);
        for (const grid of [1, 2]) {
          const x = Tensor.from(gpu, o.xv, [1, c.K], 'f32', 'x');
          expect(persistMlpShape(x, o.gu, o.down), 'gemv_wide shapes').not.toBeNull();
          expect(persistentMlp(x, o.gu, o.down, { eps: EPS, round: c.round, grid, spin: TEST_SPIN })).toBe(true);
          expectBits((await x.read()) as Float32Array, want, `${c.why}, grid ${grid}`);
          expect([...await readControl(gpu)], 'arrivals, exits, flag').toEqual([0, 0, 0]);
          x.dispose();
        }
      } finally {
        for (const t of [o.gu, o.down]) t.dispose();
      }
    });
  }

  it('leaves shapes the per-op path does not run on gemv_wide to it (the embedded model: K 320, I 960)', async () => {
    const gpu = await getGpu();
    const x = Tensor.empty(gpu, [1, 320], 'f32', 'x');
    const [gu, down] = [Tensor.empty(gpu, [1920, 320], 'bf16', 'gu'), Tensor.empty(gpu, [320, 960], 'bf16', 'down')];
    expect(persistMlpShape(x, gu, down)).toBeNull();
    expect(persistentMlp(x, gu, down, { eps: EPS, grid: 2, spin: 1 })).toBe(false);
    for (const t of [x, gu, down]) t.dispose();
  });
});

describe('persistent MLP captured and replayed', () => {
  it('three replays in one pass equal three per-op steps bit for bit, the counts back at 0', async () => {
    const gpu = await getGpu();
    const c = CASES[0];
    const o = operands(gpu, c, 11);
    const x = Tensor.from(gpu, o.xv, [1, c.K], 'f32', 'x');
    await gpu.flush();
    const step = capture(gpu, () => persistentMlp(x, o.gu, o.down, { eps: EPS, round: c.round, grid: 2,
      spin: TEST_SPIN }));
    const held = gpu.claim(step.allocated);
    try {
      expect([step.result, step.dispatches.length]).toEqual([true, 1]);
      const d = step.dispatches;
      await replay(gpu, [...d, ...d, ...d], [...step.uniforms, ...step.uploads]);
      let want = o.xv;
      for (let i = 0; i < 3; i++) want = await perOp(gpu, want, o.gu, o.down, c.round, { path: 'gemv' });
      expectBits((await x.read()) as Float32Array, want, 'three replayed steps');
      expect([...await readControl(gpu)], 'arrivals, exits, flag').toEqual([0, 0, 0]);
    } finally {
      for (const b of held) gpu.release(b);
      for (const t of [x, o.gu, o.down]) t.dispose();
    }
  });
});

describe('mlpStep: a barrier that runs out', () => {
  it('redoes the step on the per-op path, warns once and stays per-op', async () => {
    const warnings: string[] = [];
    const gpu = await Gpu.create({ kernels: { decodeStep: 'persistent', persistGrid: 2, persistSpin: TEST_SPIN },
      warn: (m) => warnings.push(m) });
    const c = CASES[0];
    const o = operands(gpu, c, 7);
    const x = Tensor.from(gpu, o.xv, [1, c.K], 'f32', 'x');
    try {
      const step = (absent: boolean) => mlpStep(x, o.gu, o.down,
        { eps: EPS, round: c.round, absentAt: absent ? 0 : undefined });
      expect(await step(false)).toBe('persistent');
      expectBits((await x.read()) as Float32Array, await perOp(gpu, o.xv, o.gu, o.down, c.round, { path: 'gemv' }),
        'persistent step');
      gpu.write(x.buffer, x.offset, o.xv);
      expect(await step(true)).toBe('per-op');
      // The redo is the Gpu's own per-op path (on a CPU driver its 'rows' kernels) from the untouched x.
      expectBits((await x.read()) as Float32Array, await perOp(gpu, o.xv, o.gu, o.down, c.round, {}), 'redone step');
      expect(warnings).toEqual([`hrm-webgpu: ${persistOff(gpu)}`]);
      expect(persistOff(gpu)).toMatch(/^a grid barrier of the persistent MLP ran out of spins at a grid of 2: per-op/);
      expect(gpu.summary.fastPaths[PERSIST_STEP]).toEqual({ on: false, why: persistOff(gpu) });
      expect([...await readControl(gpu)], 'arrivals, exits, flag').toEqual([0, 0, 0]);
      expect(await step(false)).toBe('per-op');
      expect(warnings.length).toBe(1);
    } finally {
      for (const t of [x, o.gu, o.down]) t.dispose();
      gpu.destroy();
    }
  });

  it("runs at the kernel variant's own grid where no option forces one, at most the self-check's", async () => {
    const gpu = await Gpu.create({ kernels: { decodeStep: 'persistent', persistSpin: 2 ** 22 } });
    const c = CASES[2];
    const o = operands(gpu, c, 5);
    const x = Tensor.from(gpu, o.xv, [1, c.K], 'f32', 'x');
    try {
      const [max, grid] = [persistGrid(gpu), await mlpGrid(x, o.gu, o.down)];
      console.log(`grids on ${gpu.cpu ? 'this CPU driver' : 'this GPU'}: self-check ${max}, persistent MLP ${grid}`);
      expect(grid).toBeGreaterThanOrEqual(1);
      expect(grid).toBeLessThanOrEqual(max);
      expect(await mlpStep(x, o.gu, o.down, { eps: EPS, round: c.round })).toBe('persistent');
      expectBits((await x.read()) as Float32Array, await perOp(gpu, o.xv, o.gu, o.down, c.round, { path: 'gemv' }),
        `a step at grid ${grid}`);
    } finally {
      for (const t of [x, o.gu, o.down]) t.dispose();
      gpu.destroy();
    }
  });
});
