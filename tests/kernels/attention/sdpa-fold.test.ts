// The folded-merge stress of the GPU machine (sdpa-fold.check.ts, bench/parity.ts) at a small shape on this driver.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { checkFold } from '../../../testkit/kernels/sdpa-fold.check.ts';

describe('sdpa fold check', () => {
  it('folded and separate merges agree in every bit over back-to-back calls; the counters end at 0', async () => {
    const cases = await checkFold(await getGpu(),
      { heads: 3, dim: 64, cap: 1100, lens: [1, 32, 33, 1100], layers: 2, reps: 3 });
    expect(cases.map((c) => [c.name, c.value])).toEqual([
      ['decode attention, folded merge vs separate: calls differing of 24 ' +
        '(3 heads of 64, cap 1100, kvLen 1/32/33/1100, 2 layers x 3)', 0],
      ['decode attention, folded merge: counters left non-zero', 0],
    ]);
    expect(cases.every((c) => c.ok)).toBe(true);
  });
});
