// The persistent kernel's NEXT variant (kernels/persist/mlp.wgsl): a decode layer's whole tail after attention
// (x += o_proj(attn), the MLP) and then, after one more grid barrier, the next layer's rms-normed gqkv projection,
// against the per-op path it replaces (four gemv_wide products, matmul's path 'gemv', as a GPU runs a decode step):
// x and gqkv bit for bit at grids of 1 and 2 workgroups, f32 and bf16, gqkv's per-op gemv_wide of 256 threads and of
// 128 (N >= 4096: 32 lanes a row, its norm's tree over 128 threads); a run-out at each barrier sets the flag, leaves
// x as the contract says (untouched, updated at the last) and gqkv unwritten, and a rerun is right; a gqkv of
// another dtype or width, or an output of the wrong size, is refused, and so is mlpStep with `next` (its
// contract, x untouched after a run-out, would not hold).
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { EPS, asDtype, asRound, type WDType } from '../../helpers/matmul-cases.ts';
import type { Gpu } from '../../../src/kernels/gpu.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { matmul } from '../../../src/kernels/matmul/matmul.ts';
import { mlpStep, persistentMlp, persistMlpShape, readControl, takeFlag } from '../../../src/kernels/persist/mlp.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import { expectBits, TEST_SPIN } from '../../helpers/persist.ts';

interface Case { K: number; I: number; HD: number; N: number; dtype: WDType; round: Round; why: string; seed?: number }

const CASES: Case[] = [
  { K: 512, I: 1024, HD: 512, N: 1536, dtype: 'bf16', round: 'bf16', why: 'the decode tests\' shape' },
  { K: 256, I: 768, HD: 512, N: 1000, dtype: 'f32', round: 'none', why: 'f32, a last gqkv block part full' },
  // The two trees' sums differ in about one x in five (a seed where they do: 7; the trees are alike below K 1024).
  { K: 1024, I: 512, HD: 512, N: 4096, dtype: 'f32', round: 'none', why: 'gqkv 32 lanes, its norm 128 threads',
    seed: 7 },
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
    gqkv: w(5, c.N, c.K, 'gqkv'),
  };
}
type Operands = ReturnType<typeof operands>;

/** x and the next gqkv after the per-op path on matmul's path 'gemv': o_proj, norm + SwiGLU, down, norm + gqkv. */
async function perOp(gpu: Gpu, o: Operands, round: Round): Promise<{ x: Float32Array; gq: Float32Array }> {
  const x = Tensor.from(gpu, o.xv, [1, o.xv.length], 'f32', 'x.ref');
  const path = 'gemv' as const;
  matmul(o.attn, o.wo, { path, round, accumulate: x });
  const a = matmul(x, o.gu, { path, round, norm: { eps: EPS }, swiglu: true });
  matmul(a, o.down, { path, round, accumulate: x });
  const gq = matmul(x, o.gqkv, { path, round, norm: { eps: EPS } });
  const got = { x: (await x.read()) as Float32Array, gq: (await gq.read()) as Float32Array };
  for (const t of [a, x, gq]) t.dispose();
  return got;
}

/**
 * x and gqkv (NaN before) after the NEXT variant at `grid`, barrier `absentAt` made to run out where given, and the
 * barrier words (arrivals, exits, flag) after it.
 */
async function persistent(gpu: Gpu, o: Operands, c: Case, grid: number, absentAt?: number) {
  const x = Tensor.from(gpu, o.xv, [1, c.K], 'f32', 'x');
  const out = Tensor.from(gpu, new Float32Array(c.N).fill(NaN), [1, c.N], 'f32', 'gq');
  const oProj = { attn: o.attn, w: o.wo };
  const next = { w: o.gqkv, out };
  try {
    expect(persistMlpShape(x, o.gu, o.down, oProj, next), 'gemv_wide shapes')
      .toMatchObject({ OPROJ: 1, NEXT: 1, TQ: c.N >= 4096 ? 128 : 256 });
    const spin = absentAt === undefined ? TEST_SPIN : 64;
    expect(persistentMlp(x, o.gu, o.down, { eps: EPS, round: c.round, grid, spin, absentAt,
      oProj, next })).toBe(true);
    return { x: (await x.read()) as Float32Array, gq: (await out.read()) as Float32Array,
      control: [...await readControl(gpu)] };
  } finally {
    for (const t of [x, out]) t.dispose();
  }
}

function dispose(o: Operands): void {
  for (const t of [o.attn, o.wo, o.gu, o.down, o.gqkv]) t.dispose();
}

describe('persistent tail with the next layer\'s norm + gqkv, in one dispatch', () => {
  for (const c of CASES) {
    it(`equals the per-op gemv_wide path bit for bit at grids 1 and 2: K ${c.K}, N ${c.N}, ${c.why}`, async () => {
      const gpu = await getGpu();
      const o = operands(gpu, c, c.seed ?? c.K + c.N);
      try {
        const want = await perOp(gpu, o, c.round);
        for (const grid of [1, 2]) {
          const got = await persistent(gpu, o, c, grid);
          expectBits(got.x, want.x, `${c.why}, x, grid ${grid}`);
          expectBits(got.gq, want.gq, `${c.why}, gqkv, grid ${grid}`);
          expect(got.control, 'arrivals, exits, flag').toEqual([0, 0, 0]);
        }
      } finally {
        dispose(o);
      }
    });
  }

  it('a run-out at each barrier: the flag; x untouched but at the last (x updated, gqkv unwritten); a rerun right',
    async () => {
    const gpu = await getGpu();
    const c = CASES[0];
    const o = operands(gpu, c, 17);
    try {
      const want = await perOp(gpu, o, c.round);
      // Barriers: 0 after o_proj, 1 after gate_up, 2 after down + residual (then the norm + gqkv). A later one at a
      // grid of 1, where the barriers before it complete at the arrival, so its 64 spins run out there only.
      for (const k of [0, 1, 2]) {
        const got = await persistent(gpu, o, c, k === 0 ? 2 : 1, k);
        expect(got.control, `arrivals, exits, flag: barrier ${k}`).toEqual([0, 0, 1]);
        expect(await takeFlag(gpu)).toBe(true);
        expectBits(got.x, k === 2 ? want.x : o.xv, `x after a run-out at barrier ${k}`);
        expectBits(got.gq, new Float32Array(c.N).fill(NaN), `gqkv after a run-out at barrier ${k}`);
        // The counts are back at 0: the same dispatch (as a captured step replays it) runs right again.
        const again = await persistent(gpu, o, c, 2);
        expectBits(again.x, want.x, `x, a rerun after barrier ${k}`);
        expectBits(again.gq, want.gq, `gqkv, a rerun after barrier ${k}`);
        expect(again.control, 'arrivals, exits, flag after the rerun').toEqual([0, 0, 0]);
      }
    } finally {
      dispose(o);
    }
  });

  it('refuses a gqkv of another dtype or width, an output of the wrong size; mlpStep refuses next', async () => {
    const gpu = await getGpu();
    const x = Tensor.empty(gpu, [1, 512], 'f32', 'x');
    const [gu, down] = [Tensor.empty(gpu, [2048, 512], 'bf16', 'gu'), Tensor.empty(gpu, [512, 1024], 'bf16', 'down')];
    const next = (N: number, K: number, dtype: 'bf16' | 'f32', outN = N) => ({ w: Tensor.empty(gpu, [N, K], dtype,
      'gqkv'), out: Tensor.empty(gpu, [1, outN], 'f32', 'gq') });
    const cases = [['an output of 1000 for 1536 rows', next(1536, 512, 'bf16', 1000)],
      ['f32 gqkv, bf16 MLP', next(1536, 512, 'f32')], ['K 256 rows for x of 512', next(1536, 256, 'bf16')]] as const;
    const ok = next(1536, 512, 'bf16');
    try {
      expect(persistMlpShape(x, gu, down, undefined, ok), 'the MLP and a gqkv').toMatchObject({ NEXT: 1 });
      for (const [why, q] of cases) {
        expect(persistMlpShape(x, gu, down, undefined, q), why).toBeNull();
        expect(persistentMlp(x, gu, down, { eps: EPS, grid: 2, spin: 1, next: q }), why).toBe(false);
      }
      await expect(mlpStep(x, gu, down, { eps: EPS, next: ok })).rejects.toThrow(/\[mlpStep\] next/);
    } finally {
      for (const t of [x, gu, down, ok.w, ok.out, ...cases.flatMap(([, q]) => [q.w, q.out])]) t.dispose();
    }
  });
});
