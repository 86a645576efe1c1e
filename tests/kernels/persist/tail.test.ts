// The persistent kernel's OPROJ variant (kernels/persist/mlp.wgsl): a decode layer's whole tail after attention,
// x += o_proj(attn), a grid barrier, then the MLP (norm + gate_up + SwiGLU, a barrier, down + residual), against the
// per-op path it replaces (three gemv_wide products, matmul's path 'gemv', as a GPU runs a decode step), bit for bit
// at grids of 1 and 2 workgroups, f32 and bf16; a run-out at either barrier (a workgroup that never arrives) leaves
// x untouched and sets the flag, and a rerun is right; an o_proj the per-op path would not run on gemv_wide is
// refused. Then mlpStep with o_proj: the variant's grid measured under its own key, and a run-out redone per op,
// o_proj included.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { EPS, asDtype, asRound, type WDType } from '../../helpers/matmul-cases.ts';
import { Gpu } from '../../../src/kernels/gpu.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { matmul } from '../../../src/kernels/matmul/matmul.ts';
import { mlpGrid, mlpRuns, mlpStep, persistentMlp, persistMlpShape, readControl,
  takeFlag } from '../../../src/kernels/persist/mlp.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import { expectBits, TEST_SPIN } from '../../helpers/persist.ts';
import { sweep } from '../../helpers/sweep.ts';

interface Case { K: number; I: number; HD: number; dtype: WDType; round: Round; why: string }

// Each case is pipelines of its own (the kernel variant, the per-op products): the CPU driver takes the first two.
const CASES: Case[] = [
  { K: 512, I: 1024, HD: 512, dtype: 'bf16', round: 'bf16', why: 'the decode tests\' shape: o_proj 1 unit a lane' },
  { K: 256, I: 768, HD: 512, dtype: 'f32', round: 'none', why: 'f32: o_proj 2 units a lane, down 3' },
  { K: 512, I: 512, HD: 1536, dtype: 'bf16', round: 'bf16', why: 'o_proj 3 units a lane, down 1' },
];

function operands(gpu: Gpu, c: Case, seed: number) {
  const w = (s: number, rows: number, cols: number, label: string) => Tensor.from(gpu,
    asDtype(c.dtype, randn(seed + s, rows * cols, 1 / Math.sqrt(cols))), [rows, cols], c.dtype, label);
  return {
    xv: asRound(c.round, randn(seed, c.K, 3)),
    attn: Tensor.from(gpu, asRound(c.round, randn(seed + 4, c.HD, 1)), [1, c.HD], 'f32', 'attn'),
    wo: w(3, c.K, c.HD, 'o_proj'),
    gu: w(1, 2 * c.I, c.K, 'gate_up'),
    down: w(2, c.K, c.I, 'down'),
  };
}
type Operands = ReturnType<typeof operands>;

/**
 * x after the per-op tail on matmul's path 'gemv' (else, `own`, the Gpu's own path): o_proj's residual product, the
 * norm + SwiGLU one, down's.
 */
async function perOp(gpu: Gpu, o: Operands, round: Round, own = false): Promise<Float32Array> {
  const x = Tensor.from(gpu, o.xv, [1, o.xv.length], 'f32', 'x.ref');
  const path = own ? {} : { path: 'gemv' as const };
  matmul(o.attn, o.wo, { ...path, round, accumulate: x });
  const a = matmul(x, o.gu, { ...path, round, norm: { eps: EPS }, swiglu: true });
  matmul(a, o.down, { ...path, round, accumulate: x });
  const got = (await x.read()) as Float32Array;
  for (const t of [a, x]) t.dispose();
  return got;
}

function dispose(o: Operands): void {
  for (const t of [o.attn, o.wo, o.gu, o.down]) t.dispose();
}

describe('persistent tail: o_proj, a grid barrier, then the MLP, in one dispatch', () => {
  for (const c of sweep(CASES, (_, i) => i < 2)) {
    it(`equals the per-op gemv_wide path bit for bit at grids 1 and 2: K ${c.K}, I ${c.I}, HD ${c.HD}, ${c.why}`,
      async () => {
      const gpu = await getGpu();
      const o = operands(gpu, c, c.K + c.HD);
      try {
        const want = await perOp(gpu, o, c.round);
        for (const grid of [1, 2]) {
          const x = Tensor.from(gpu, o.xv, [1, c.K], 'f32', 'x');
          const oProj = { attn: o.attn, w: o.wo };
          expect(persistMlpShape(x, o.gu, o.down, oProj), 'gemv_wide shapes').toMatchObject({ OPROJ: 1 });
          expect(persistentMlp(x, o.gu, o.down, { eps: EPS, round: c.round, grid, spin: TEST_SPIN, oProj }))
            .toBe(true);
          expectBits((await x.read()) as Float32Array, want, `${c.why}, grid ${grid}`);
          expect([...await readControl(gpu)], 'arrivals, exits, flag').toEqual([0, 0, 0]);
          x.dispose();
        }
      } finally {
        dispose(o);
      }
    });
  }

  it('a run-out at either barrier (o_proj\'s, the MLP\'s) leaves x untouched, sets the flag; a rerun is right',
    async () => {
    const gpu = await getGpu();
    const c = CASES[0];
    const o = operands(gpu, c, 17);
    const x = Tensor.from(gpu, o.xv, [1, c.K], 'f32', 'x');
    const oProj = { attn: o.attn, w: o.wo };
    try {
      const want = await perOp(gpu, o, c.round);
      // Barrier 1 at a grid of 1, where barrier 0 completes at the arrival, so its 64 spins run out at 1 only.
      for (const absentAt of [0, 1]) {
        gpu.write(x.buffer, x.offset, o.xv);
        const grid = absentAt === 0 ? 2 : 1;
        expect(persistentMlp(x, o.gu, o.down, { eps: EPS, round: c.round, grid, spin: 64, absentAt, oProj }))
          .toBe(true);
        expect([...await readControl(gpu)], `arrivals, exits, flag: barrier ${absentAt}`).toEqual([0, 0, 1]);
        expect(await takeFlag(gpu)).toBe(true);
        expectBits((await x.read()) as Float32Array, o.xv, `x after a run-out at barrier ${absentAt}`);
        // The counts are back at 0: the same dispatch (as a captured step replays it) runs right again.
        expect(persistentMlp(x, o.gu, o.down, { eps: EPS, round: c.round, grid: 2, spin: TEST_SPIN, oProj }))
          .toBe(true);
        expectBits((await x.read()) as Float32Array, want, `a rerun after a run-out at barrier ${absentAt}`);
        expect([...await readControl(gpu)], 'arrivals, exits, flag after the rerun').toEqual([0, 0, 0]);
      }
    } finally {
      x.dispose();
      dispose(o);
    }
  });

  it('refuses an o_proj the per-op path would not run on gemv_wide, or of other dtypes', async () => {
    const gpu = await getGpu();
    const x = Tensor.empty(gpu, [1, 512], 'f32', 'x');
    const [gu, down] = [Tensor.empty(gpu, [2048, 512], 'bf16', 'gu'), Tensor.empty(gpu, [512, 1024], 'bf16', 'down')];
    const narrow = { attn: Tensor.empty(gpu, [1, 320], 'f32', 'attn'), w: Tensor.empty(gpu, [512, 320], 'bf16', 'o') };
    const f32 = { attn: Tensor.empty(gpu, [1, 512], 'f32', 'attn'), w: Tensor.empty(gpu, [512, 512], 'f32', 'o') };
    try {
      expect(persistMlpShape(x, gu, down), 'the MLP alone').not.toBeNull();
      for (const [why, oProj] of [['HD 320: 40 units a row', narrow], ['f32 o_proj, bf16 MLP', f32]] as const) {
        expect(persistMlpShape(x, gu, down, oProj), why).toBeNull();
        expect(persistentMlp(x, gu, down, { eps: EPS, grid: 2, spin: 1, oProj }), why).toBe(false);
      }
    } finally {
      for (const t of [x, gu, down, narrow.attn, narrow.w, f32.attn, f32.w]) t.dispose();
    }
  });
});

describe('mlpStep with o_proj', () => {
  it("measures the variant's grid under its own key, then redoes a run-out per op, o_proj included", async () => {
    const warnings: string[] = [];
    const gpu = await Gpu.create({ kernels: { decodeStep: 'persistent', persistSpin: 2 ** 22 },
      warn: (m) => warnings.push(m) });
    const c = CASES[0];
    const o = operands(gpu, c, 23);
    const x = Tensor.from(gpu, o.xv, [1, c.K], 'f32', 'x');
    const oProj = { attn: o.attn, w: o.wo };
    try {
      expect(await mlpGrid(x, o.gu, o.down)).toBeGreaterThanOrEqual(1);
      const r0 = mlpRuns(gpu);
      expect(await mlpGrid(x, o.gu, o.down, oProj), 'the OPROJ variant').toBeGreaterThanOrEqual(1);
      expect(mlpRuns(gpu), 'measured on its own').toBeGreaterThan(r0);
      const r1 = mlpRuns(gpu);
      const step = (absent: boolean) => mlpStep(x, o.gu, o.down, { eps: EPS, round: c.round, oProj,
        absentAt: absent ? 0 : undefined });
      expect(await step(false)).toBe('persistent');
      expect(mlpRuns(gpu), 'once measured, one dispatch').toBe(r1 + 1);
      expectBits((await x.read()) as Float32Array, await perOp(gpu, o, c.round), 'a persistent step');
      gpu.write(x.buffer, x.offset, o.xv);
      expect(await step(true)).toBe('per-op');
      expectBits((await x.read()) as Float32Array, await perOp(gpu, o, c.round, true), 'the redone step');
      expect(warnings.length).toBe(1);
    } finally {
      x.dispose();
      dispose(o);
      gpu.destroy();
    }
  });
});
