// The quantized folded-merge stress of the GPU machine (qsdpa-fold.check.ts, bench/parity.ts) at a small shape on
// this driver: head dim 64 (chunks of 128 keys), a capacity past 1024 (the 256-thread softmax sum).
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { checkQuantFold } from '../../../testkit/kernels/qsdpa-fold.check.ts';

describe('qsdpa fold check', () => {
  it('batched calls give the bits of the same calls alone and agree with the passes; the counters end at 0',
    async () => {
    const cases = await checkQuantFold(await getGpu(),
      { heads: 3, dim: 64, cap: 1100, lens: [1, 127, 128, 129, 1100], bits: [[4, 4], [8, 3]], reps: 3 });
    expect(cases.map((c) => [c.name, c.value])).toEqual([
      ['quantized decode attention, folded values merge in a batch vs alone: calls differing of 30 ' +
        '(3 heads of 64, cap 1100, kvLen 1/127/128/129/1100, K/V bits 4/4, 8/3 x 3)', 0],
      ["quantized decode attention, folded values merge vs qsdpa's passes: calls beyond 2e-6 relative of 10", 0],
      ['quantized decode attention, folded values merge: counters left non-zero', 0],
    ]);
    expect(cases.every((c) => c.ok)).toBe(true);
  });
});
