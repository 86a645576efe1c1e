// gemv_mlp (a decode layer's MLP in one dispatch) against the float64 composition of its ops, its counts left at 0,
// and the operands it refuses or leaves to the two products.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { ulpStats } from '../../../testkit/helpers/half-ulp.ts';
import { runs } from '../../helpers/sweep.ts';
import { EPS, U, asDtype, asRound, fusedTol, type WDType } from '../../helpers/matmul-cases.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../../src/errors.ts';
import { mlpFold } from '../../../src/kernels/matmul/gemv-mlp.ts';
import { matmulFusedRef, matmulRef } from '../../../src/kernels/matmul/matmul.ref.ts';
import { addRef } from '../../../src/kernels/ops/ops.ref.ts';
import { countersLeft } from '../../../testkit/kernels/sdpa-fold.check.ts';
import type { Round } from '../../../src/kernels/common/codes.ts';
import type { Gpu } from '../../../src/gpu/gpu.ts';
import { checkMlpFold } from '../../../testkit/kernels/gemv-mlp.check.ts';

interface Case {
  K: number; I: number; dtype: WDType; round: Round; units?: number; group?: number; prefetch?: boolean; why: string;
}

// Each case is a pipeline of its own (seconds of LLVM on a cold CPU driver): the CPU driver takes the first three.
const CASES: Case[] = [
  { K: 256, I: 768, dtype: 'bf16', round: 'bf16', why: 'the embedded model: 96 blocks in 10 groups, the last of 6' },
  {
    K: 40, I: 48, dtype: 'f32', round: 'none', units: 4, group: 5, prefetch: true,
    why: '5 units a row over 16 lanes (masked), 12 blocks, a last group of 2, down prefetched',
  },
  {
    K: 1032, I: 64, dtype: 'f16', round: 'f16', units: 16, group: 1,
    why: '3 units a lane, the last masked; 5 down rows a thread; groups of one',
  },
  { K: 64, I: 32, dtype: 'bf16', round: 'none', group: 100, why: 'one group holding every block' },
  { K: 1536, I: 4096, dtype: 'bf16', round: 'bf16', why: "HRM-Text-1B's shape: 512 blocks in 23 groups" },
];

function operands(gpu: Gpu, c: Case, seed: number) {
  // The residual well away from unit RMS (a missing norm shows) and holding activation-dtype values; weights of a
  // model's scale, so the sums stay O(1).
  const xv = asRound(c.round, randn(seed, c.K, 3));
  const guv = asDtype(c.dtype, randn(seed + 1, 2 * c.I * c.K, 1 / Math.sqrt(c.K)));
  const dv = asDtype(c.dtype, randn(seed + 2, c.K * c.I, 2 / Math.sqrt(c.I)));
  return {
    xv, guv, dv,
    x: Tensor.from(gpu, xv, [1, c.K], 'f32', 'x'),
    gu: Tensor.from(gpu, guv, [2 * c.I, c.K], c.dtype, 'gate_up'),
    down: Tensor.from(gpu, dv, [c.K, c.I], c.dtype, 'down'),
  };
}

/**
 * f32: |got - want| within the error of a's f32 sums carried through down (fusedTol), down's own sum (Higham 3.1)
 * and the residual add's rounding. Halves: a rounding flips near a midpoint (in a or in the output), by one ulp; a
 * flipped activation can move the output across the next midpoint too, so two.
 */
function expectClose(got: Float32Array, c: Case, o: ReturnType<typeof operands>): number {
  const { K, I, round } = c;
  const a = matmulFusedRef(o.xv, o.guv, 1, 2 * I, K, { round, norm: EPS, swiglu: true });
  const want = addRef(o.xv, matmulRef(a, o.dv, 1, K, I, round), round);
  if (round !== 'none') {
    const s = ulpStats(round, got, want);
    expect(s.worst, `${c.why}: ${JSON.stringify(s)}`).toBeLessThanOrEqual(2);
    return s.exact;
  }
  const aTol = fusedTol(Float32Array.from(o.xv), o.guv, 1, 2 * I, K, true, true, null);
  for (let n = 0; n < K; n++) {
    let carried = 0, abs = 0;
    for (let i = 0; i < I; i++) {
      carried += Math.abs(o.dv[n * I + i]) * aTol[i];
      abs += Math.abs(o.dv[n * I + i] * a[i]);
    }
    const bound = carried + (I + 1) * U * abs + U * Math.abs(want[n]) + 1e-30;
    const what = `${c.why}: output ${n} (got ${got[n]}, want ${want[n]})`;
    expect(Math.abs(got[n] - want[n]), what).toBeLessThanOrEqual(bound);
  }
  return 1;
}

describe('gemv_mlp: x += down(silu(gate) * up) in one dispatch', async () => {
  const gpu = await getGpu();

  for (const [i, c] of CASES.entries()) {
    if (!runs(i < 3)) continue;
    it(`${c.dtype} weights, round ${c.round}, K ${c.K}, I ${c.I}: ${c.why}`, async () => {
      const o = operands(gpu, c, 40 + i);
      const { units, group, prefetch } = c;
      const out = mlpFold(o.x, o.gu, o.down, { eps: EPS, round: c.round, units, group, prefetch });
      expect(out).toBe(o.x);
      const exact = expectClose(await o.x.read() as Float32Array, c, o);
      expect(exact).toBeGreaterThanOrEqual(0.9);
      // Every count is back at 0 for the next dispatch.
      expect(await countersLeft(gpu, 64), 'counters left non-zero').toBe(0);
      for (const t of [o.gu, o.down]) t.dispose();
    });
  }

  it('run twice in one batch: the second reads the first one\'s x, and sees its counts reset', async () => {
    const c = CASES[0];
    const o = operands(gpu, c, 7);
    mlpFold(o.x, o.gu, o.down, { eps: EPS, round: c.round });
    const once = operands(gpu, c, 7);
    mlpFold(once.x, once.gu, once.down, { eps: EPS, round: c.round });
    mlpFold(o.x, o.gu, o.down, { eps: EPS, round: c.round });
    const x1 = await once.x.read() as Float32Array;
    const again = { ...once, xv: x1 };
    expectClose(await o.x.read() as Float32Array, c, again);
  });

  it('the GPU machine\'s stress, small: batched calls give their lone runs\' bits; the counts end at 0', async () => {
    for (const bits of [undefined, 4] as const) {
      const cases = await checkMlpFold(gpu, { K: 256, I: 768, layers: 2, reps: 3, bits });
      const what = `K 256, I 768, ${bits ? '4-bit' : 'bf16'} weights, 2 layers x 3`;
      expect(cases.map((c) => [c.name, c.value])).toEqual([
        [`decode MLP in one dispatch vs alone: calls differing of 6 (${what})`, 0],
        [`decode MLP in one dispatch vs float64: worst bf16 ulps (${what})`, cases[1].value],
        [`decode MLP in one dispatch: counters left non-zero (${what})`, 0],
      ]);
      expect(cases.every((c) => c.ok)).toBe(true);
    }
  });

  it('operands it cannot take give null (the caller composes two products); wrong ones are named errors', () => {
    const o = operands(gpu, { K: 64, I: 44, dtype: 'bf16', round: 'none', why: '' }, 3);
    expect(mlpFold(o.x, o.gu, o.down, { eps: EPS }), 'I 44: no whole blocks of 8 units').toBeNull();
    const two = Tensor.from(gpu, new Float32Array(128), [2, 64], 'f32', 'x2');
    const gu = Tensor.from(gpu, new Float32Array(2 * 64 * 64), [128, 64], 'bf16', 'gate_up');
    const down = Tensor.from(gpu, new Float32Array(64 * 64), [64, 64], 'bf16', 'down');
    expect(mlpFold(two, gu, down, { eps: EPS }), 'two x rows').toBeNull();
    const x = Tensor.from(gpu, new Float32Array(64), [1, 64], 'f32', 'x');
    expect(() => mlpFold(x, gu, down, { eps: EPS, units: 12 })).toThrow(InputError);
    expect(() => mlpFold(x, gu, down, { eps: EPS, group: 0 })).toThrow(/group 0/);
    expect(() => mlpFold(x, gu, o.down, { eps: EPS })).toThrow(ShapeError);
    const downF32 = Tensor.from(gpu, new Float32Array(64 * 64), [64, 64], 'f32', 'down');
    expect(() => mlpFold(x, gu, downF32, { eps: EPS })).toThrow(DTypeError);
    expect(() => mlpFold(x, gu, down, { eps: Number.NaN })).toThrow(/eps NaN/);
    for (const t of [o.x, o.gu, o.down, two, gu, down, x, downF32]) t.dispose();
  });
});
