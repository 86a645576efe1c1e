// Capture and replay at the Gpu's level (src/gpu/capture.ts over the batch's routing, batch.ts): while a capture
// runs, dispatches, uploads and allocations go to it and nothing is encoded or submitted; a replay encodes the
// dispatches again and computes on the inputs' contents of its time. A copy while capturing, and a capture or a
// replay over an open batch, are refused with the op named. (The model's decode step: tests/hrm/decode.test.ts.)
import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { capture, replay } from '../../src/gpu/capture.ts';
import { bufferId } from '../../src/gpu/pool.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { NotReplayableError } from '../../src/errors.ts';
import { add } from '../../src/kernels/ops/ops.ts';

describe('capture and replay', async () => {
  const gpu = await getGpu();

  it('records dispatches, uploads and allocations instead of running them; replays them on new inputs', async () => {
    await gpu.sync();
    const one = Tensor.from(gpu, new Float32Array([1]), [1], 'f32', 'one');
    const x = Tensor.from(gpu, new Float32Array([5]), [1], 'f32', 'x');
    const submit = gpu.device.queue.submit.bind(gpu.device.queue);
    let submits = 0;
    gpu.device.queue.submit = (b: Iterable<GPUCommandBuffer>) => { submits++; submit(b); };
    const dispatched = gpu.dispatchCount;
    let temp: GPUBuffer | null = null;
    const cap = capture(gpu, () => {
      const step = Tensor.from(gpu, new Float32Array([2]), [1], 'f32', 'step');
      const t = add(x, one);
      const y = add(t, step);
      temp = t.buffer;
      t.dispose();
      return { y, step };
    });
    gpu.device.queue.submit = submit;
    expect(submits).toBe(0);
    expect(gpu.dispatchCount).toBe(dispatched);
    expect(gpu.idle).toBe(true);
    expect(cap.dispatches.map((d) => d.label)).toEqual(['add', 'add']);
    expect(cap.uploads.map((u) => [...new Float32Array(u.data.buffer)])).toEqual([[2]]);
    const ids = (bs: Iterable<GPUBuffer | null>) => [...bs].map((b) => bufferId(b!)).sort((p, q) => p - q);
    expect(ids(cap.allocated)).toEqual(ids([cap.result.step.buffer, temp, cap.result.y.buffer]));
    expect(cap.uniforms).toHaveLength(1);   // both adds' blocks in one chunk
    // The temporary went back to the pool: claiming keeps a later allocation from binding it.
    const claimed = gpu.claim(cap.allocated);
    expect(ids(claimed)).toEqual(ids([temp]));

    await replay(gpu, cap.dispatches, [...cap.uniforms, ...cap.uploads]);
    expect(gpu.dispatchCount).toBe(dispatched + 2);
    expect((await cap.result.y.read())[0]).toBe(8);
    gpu.write(x.buffer, 0, new Float32Array([10]));
    await replay(gpu, cap.dispatches, [...cap.uniforms, ...cap.uploads]);
    expect((await cap.result.y.read())[0]).toBe(13);

    for (const b of claimed) gpu.release(b);
    for (const t of [one, x, cap.result.y, cap.result.step]) t.dispose();
  });

  it('refuses a buffer copy while capturing, then records into the batch again', async () => {
    const a = Tensor.from(gpu, new Float32Array([3]), [1], 'f32', 'a');
    const b = Tensor.empty(gpu, [1], 'f32', 'b');
    const copy = () => capture(gpu, () => gpu.copy(a.binding('copy'), b.binding('copy')));
    expect(copy).toThrow(NotReplayableError);
    expect(copy).toThrow('[capture] a buffer copy cannot be captured');
    expect(gpu.idle).toBe(true);
    const sum = add(a, a);
    expect(gpu.idle).toBe(false);   // the dispatch went into a batch, not a capture
    expect((await sum.read())[0]).toBe(6);
    for (const t of [a, b, sum]) t.dispose();
  });

  it('refuses to capture or replay over an open batch', async () => {
    const a = Tensor.from(gpu, new Float32Array([1]), [1], 'f32', 'a');
    const open = add(a, a);
    expect(() => capture(gpu, () => 0)).toThrow('[capture] flush the open batch');
    expect(() => replay(gpu, [], [])).toThrow('[replay] flush the open batch');
    expect((await open.read())[0]).toBe(2);
    for (const t of [a, open]) t.dispose();
  });
});
