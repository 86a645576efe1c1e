// A long batch is submitted in parts while it is recorded (Gpu.dispatch: after 32 dispatches, then parts 1.25 times
// the last, rounded up, up to 256, starting over with each batch), so the GPU starts
// on a prefill's first layers while JavaScript records the rest: results stay in order, and an error in a part
// submitted early is still reported, at the next read.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { GpuValidationError } from '../../src/errors.ts';
import { add } from '../../src/kernels/ops/ops.ts';

describe('early submits of long batches', async () => {
  const gpu = await getGpu();

  it('600 dependent adds give 600 in parts of 32, 40, 50, 63, 79, 99, 124 and the rest; the next batch starts at 32 '
    + 'again', async () => {
    const submit = gpu.device.queue.submit.bind(gpu.device.queue);
    let submits = 0;
    gpu.device.queue.submit = (b: Iterable<GPUCommandBuffer>) => { submits++; submit(b); };
    try {
      await gpu.sync();
      const one = Tensor.from(gpu, new Float32Array([1]), [1], 'f32', 'one');
      for (const [n, parts] of [[600, 8], [100, 3]]) {
        await gpu.sync();
        submits = 0;
        let x = Tensor.from(gpu, new Float32Array([0]), [1], 'f32', 'x');
        for (let i = 0; i < n; i++) {
          const y = add(x, one);
          x.dispose();
          x = y;
        }
        expect((await x.read())[0]).toBe(n);
        // 600: seven parts (487 dispatches), then the rest with the read; 100: 32 + 40, the rest
        expect(submits).toBe(parts);
        x.dispose();
      }
      one.dispose();
    } finally {
      gpu.device.queue.submit = submit;
    }
  });

  it.skipIf(!gpu.timestamps)('timelineNext times each part\'s pass: 600 adds in eight passes, in order, their '
    + 'dispatches counted; the next batch untimed (needs timestamp-query)', async () => {
    await gpu.sync();
    const one = Tensor.from(gpu, new Float32Array([1]), [1], 'f32', 'one');
    const run = async () => {
      let x = Tensor.from(gpu, new Float32Array([0]), [1], 'f32', 'x');
      for (let i = 0; i < 600; i++) { const y = add(x, one); x.dispose(); x = y; }
      expect((await x.read())[0]).toBe(600);
      x.dispose();
    };
    gpu.timelineNext();
    await run();
    const t = gpu.lastTimeline;
    expect(t.map((p) => p.dispatches)).toEqual([32, 40, 50, 63, 79, 99, 124, 113]);
    expect(t[0].startMs).toBe(0);
    for (const [i, p] of t.entries()) {
      expect(p.endMs).toBeGreaterThanOrEqual(p.startMs);
      if (i) expect(p.startMs).toBeGreaterThanOrEqual(t[i - 1].endMs);
    }
    await run();
    expect(gpu.lastTimeline).toBe(t);   // untimed: the last timeline stays
    one.dispose();
  });

  it('a validation error in an early part is reported at the next read', async () => {
    const one = Tensor.from(gpu, new Float32Array([1]), [1], 'f32', 'one');
    const gone = gpu.device.createBuffer({ size: 4, usage: GPUBufferUsage.STORAGE });
    gone.destroy();
    const bad = new Tensor(gpu, gone, [1], 'f32', 'destroyed', 0, false);
    add(bad, one).dispose();
    let x = one;
    for (let i = 0; i < 300; i++) x = add(x, one);
    await expect(x.read()).rejects.toThrow(GpuValidationError);
    await gpu.sync();
    // The device goes on working after the reported error.
    expect((await add(one, one).read())[0]).toBe(2);
  });
});
