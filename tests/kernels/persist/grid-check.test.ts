// The grid barrier (kernels/persist/barrier.inc.wgsl) through its self-check kernel: at grids of 1 and 2 workgroups
// (resident together on a CPU driver's two threads) every value of 16 dependent steps equals the CPU's and the counts
// are left at 0; a workgroup that never arrives makes every barrier run out, flagged, and the kernel still ends; the
// planner's option checks and verdicts (plan/persist.ts), which keep a CPU driver on the per-op path under 'auto'.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { Gpu } from '../../../src/kernels/gpu.ts';
import { InputError } from '../../../src/errors.ts';
import { resolvePolicy, type KernelOptions } from '../../../src/kernels/plan/options.ts';
import { checkGrid, expected } from '../../../src/kernels/persist/grid-check.ts';
import { PERSIST_STEP, persistGrid, persistOff } from '../../../src/kernels/plan/persist.ts';
import { TEST_SPIN } from '../../helpers/persist.ts';

describe('grid barrier', () => {
  it('computes its values as the kernel defines them', () => {
    const v = expected(2, 1);
    const sum = (v[0] + 3 * v[1]) >>> 0;
    expect([...v]).toEqual([1, 0x01000194, (Math.imul(sum, 0x9e3779b1) + 1) >>> 0,
      (Math.imul(sum, 0x9e3779b1) + 8) >>> 0]);
  });

  for (const n of [1, 2]) {
    it(`runs 16 dependent steps at a grid of ${n}, every value right, the counts back at 0`, async () => {
      const gpu = await getGpu();
      expect(await checkGrid(gpu, n, { spin: TEST_SPIN })).toEqual({ n, flagged: false, why: null });
      // Twice: the counts the first run left are what the second starts from.
      expect(await checkGrid(gpu, n, { spin: TEST_SPIN, steps: 40 })).toEqual({ n, flagged: false, why: null });
    });
  }

  it('runs out, flagged, when a workgroup never arrives; the next run is right again', async () => {
    const gpu = await getGpu();
    // The first barrier, or a later one (every workgroup then skips the barriers after it): counts back at 0.
    for (const [n, absentAt] of [[1, 0], [2, 0], [1, 5], [2, 5]]) {
      const run = await checkGrid(gpu, n, { spin: 1000, absentAt });
      expect(run, `barrier ${absentAt}`)
        .toEqual({ n, flagged: true, why: `a barrier's spin ran out at a grid of ${n} workgroups` });
    }
    // More workgroups than a CPU driver's threads: those not resident arrive after the others gave up, and find the
    // poison; the dispatch ends either way, its counts back at 0.
    const wide = await checkGrid(gpu, 8, { spin: 1000 });
    expect([null, "a barrier's spin ran out at a grid of 8 workgroups"]).toContain(wide.why);
    expect((await checkGrid(gpu, 2, { spin: TEST_SPIN })).why).toBeNull();
  });
});

describe('decodeStep option and verdict', () => {
  it('checks decodeStep, persistGrid and persistSpin, naming the field', () => {
    expect(resolvePolicy({ decodeStep: 'auto', persistGrid: 3, persistSpin: 0 }))
      .toMatchObject({ decodeStep: 'auto', persistGrid: 3, persistSpin: 0 });
    const bad: Array<[unknown, RegExp]> = [
      [{ decodeStep: 'fused' }, /^\[DeviceOptions\.kernels\.decodeStep\] 'fused' must be one of per-op, persistent,/],
      [{ persistGrid: 0 }, /^\[DeviceOptions\.kernels\.persistGrid\] 0 must be a whole number from 1 below 2\^31$/],
      [{ persistSpin: 1.5 }, /^\[DeviceOptions\.kernels\.persistSpin\] 1.5 must be a whole number from 0/],
    ];
    for (const [o, why] of bad) expect(() => resolvePolicy(o as KernelOptions), JSON.stringify(o)).toThrow(InputError);
    for (const [o, why] of bad) expect(() => resolvePolicy(o as KernelOptions), JSON.stringify(o)).toThrow(why);
  });

  it('keeps the per-op path by default, and on a CPU driver under auto without running the check', async () => {
    const gpu = await getGpu();
    expect(gpu.summary.fastPaths[PERSIST_STEP]).toEqual({ on: false,
      why: "DeviceOptions.kernels.decodeStep is 'per-op' (the default until a GPU measures it)" });
    const auto = await Gpu.create({ kernels: { decodeStep: 'auto' } });
    try {
      const why = persistOff(auto);
      const path = why ?? `persistent, grid ${persistGrid(auto)}`;
      console.log(`decodeStep 'auto' on ${gpu.cpu ? 'this CPU driver' : 'this GPU'}: ${path}`);
      if (auto.cpu) {
        expect(why).toBe("a CPU driver: the grid barrier's self-check does not run there under decodeStep 'auto'");
        expect(persistGrid(auto)).toBe(0);
      }
      expect(auto.summary.fastPaths[PERSIST_STEP]).toEqual(why === null ? { on: true } : { on: false, why });
    } finally {
      auto.destroy();
    }
  });

  it("checks the forced grid under 'persistent', on a CPU driver too", async () => {
    const two = await Gpu.create({ kernels: { decodeStep: 'persistent', persistGrid: 2, persistSpin: TEST_SPIN } });
    try {
      expect([persistOff(two), persistGrid(two)]).toEqual([null, 2]);
      expect(two.summary.fastPaths[PERSIST_STEP]).toEqual({ on: true });
    } finally {
      two.destroy();
    }
  });

  it("keeps the per-op step under decodeMlp 'fold' (the persistent MLP has the two products' sums)", async () => {
    const fold = await Gpu.create({ kernels: { decodeStep: 'persistent', decodeMlp: 'fold', persistGrid: 1 } });
    try {
      const why = "DeviceOptions.kernels.decodeMlp is 'fold' (the persistent MLP keeps the two products' sums)";
      expect([persistOff(fold), persistGrid(fold)]).toEqual([why, 0]);
      expect(fold.summary.fastPaths[PERSIST_STEP]).toEqual({ on: false, why });
    } finally {
      fold.destroy();
    }
  });
});
