// GPU timestamps (src/gpu/profiler.ts through Gpu.profileNext): every dispatch of the next batch in a timed pass of
// its own, labelled, in order, up to the capacity asked; a profiled batch is not submitted in early parts (its
// passes share one query set) and is not idle; the batch after it runs untimed again. An adapter without
// timestamp-query gets an error naming the op. (The timeline, timelineNext, is in early-submit.test.ts.)
import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { Profiler } from '../../src/gpu/profiler.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { GpuValidationError } from '../../src/errors.ts';
import { add, softmaxRows } from '../../src/kernels/ops/ops.ts';

describe('profiler', async () => {
  const gpu = await getGpu();

  /** `n` dispatches alternating add and softmax_rows; resolves to the number of queue submits they took. */
  async function run(n: number): Promise<number> {
    const submit = gpu.device.queue.submit.bind(gpu.device.queue);
    let submits = 0;
    gpu.device.queue.submit = (b: Iterable<GPUCommandBuffer>) => { submits++; submit(b); };
    const one = Tensor.from(gpu, new Float32Array([1]), [1], 'f32', 'one');
    let x = Tensor.from(gpu, new Float32Array([0]), [1], 'f32', 'x');
    try {
      for (let i = 0; i < n; i++) {
        const y = i % 2 ? softmaxRows(x) : add(x, one);
        x.dispose();
        x = y;
      }
      expect((await x.read())[0]).toBe(n % 2 ? 2 : 1);   // softmax of one value is 1; add makes it 2
    } finally {
      gpu.device.queue.submit = submit;
      x.dispose();
      one.dispose();
    }
    return submits;
  }

  const NO_TIMESTAMPS = !gpu.timestamps;   // the reason each timing test below is skipped where it is
  it.skipIf(NO_TIMESTAMPS)('times each dispatch of the next batch in order, in one submit; the batch after is untimed '
    + '(needs timestamp-query)', async () => {
    await gpu.sync();
    gpu.profileNext();
    expect(gpu.idle).toBe(false);   // capture and replay wait for a profiled batch
    expect(await run(41)).toBe(1);   // 41 dispatches: unprofiled, the first 32 would go early
    const t = gpu.lastTimings;
    expect(t.map((d) => d.label)).toEqual(Array.from({ length: 41 }, (_, i) => (i % 2 ? 'softmax_rows' : 'add')));
    for (const d of t) expect(Number.isFinite(d.ms) && d.ms >= 0).toBe(true);
    expect(gpu.idle).toBe(true);
    expect(await run(41)).toBe(2);   // early parts again
    expect(gpu.lastTimings).toBe(t);
  });

  it.skipIf(NO_TIMESTAMPS)('times only the first `capacity` dispatches (needs timestamp-query)', async () => {
    await gpu.sync();
    gpu.profileNext(4);
    await run(9);
    expect(gpu.lastTimings.map((d) => d.label)).toEqual(['add', 'softmax_rows', 'add', 'softmax_rows']);
  });

  it('names the op when the adapter has no timestamp-query', () => {
    const device = { features: new Set<string>() } as unknown as GPUDevice;
    const p = new Profiler(device);
    expect(() => p.profileNext(8)).toThrow(GpuValidationError);
    expect(() => p.profileNext(8)).toThrow('[profile] this adapter does not offer timestamp-query');
    expect(() => p.timelineNext(8)).toThrow('[timeline] this adapter does not offer timestamp-query');
    expect(p.profiling).toBe(false);
  });
});
