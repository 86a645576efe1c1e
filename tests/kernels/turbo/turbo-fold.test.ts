// The TurboQuant folded-merge stress of the GPU machine (turbo-fold.check.ts, bench/runners/parity.ts) at a small
// shape on this driver: head dim 64 (padded to a 128-value group), up to 130 32-key chunks (the merge's second tile
// of 128).
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { checkTurboFold, type TurboFoldStress } from '../../../testkit/kernels/turbo-fold.check.ts';

describe('turbo fold check', () => {
  it('batched calls give the bits of the same calls alone, agree with the general path; counters at 0', async () => {
    const s: TurboFoldStress = {
      heads: 2, dim: 64, cap: 4130, lens: [1, 31, 33, 4097, 4130], types: [['turbo3', 'turbo3']], reps: 3,
    };
    const cases = await checkTurboFold(await getGpu(), s);
    expect(cases.map((c) => c.value)).toEqual([0, 0, 0]);
    expect(cases[0].name).toContain('calls differing of 15');
    expect(cases.every((c) => c.ok)).toBe(true);
  });
});
