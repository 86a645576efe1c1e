// A decode graph refuses what it cannot replay with the reason (too few positions, a buffer copy), tells a device
// error while capturing from such a refusal, fails clearly on a NaN or an id outside the vocabulary; QueueDepth
// queues about QUEUE_MS of greedy steps (decode.test.ts: the replayed steps equal the recorded ones).
import { describe, expect, it } from 'vitest';
import { DecodeGraph, QueueDepth } from '../../src/hrm/decode.ts';
import { getGpu } from '../helpers/gpu.ts';
import { build, PROMPT, prefilled } from '../helpers/decode.ts';
import { fixtureDir, model } from '../../testkit/helpers/model.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel } from '../../src/hrm/load.ts';
import type { HrmModel } from '../../src/hrm/model.ts';
import { GpuValidationError } from '../../src/errors.ts';

describe('decode graph: refusals and errors', { timeout: 300_000 }, () => {
  it('refuses, with the reason, when fewer than three positions are left', async () => {
    const lm = await model(await getGpu(), 'hrm-tiny-a', 'f32');
    const cache = await prefilled(lm, 2);
    const g = DecodeGraph.tryBuild(lm.model, cache, 'greedy');
    expect(g).toEqual({ reason: 'only 2 positions left in the cache' });
    cache.dispose();
  });

  // A model whose forward runs `before` first, then the real forward (the capture records what it does).
  const wrapped = (m: HrmModel, before: () => void): HrmModel => Object.create(m, {
    forward: { value: (...a: Parameters<HrmModel['forward']>) => { before(); return m.forward(...a); } },
  });

  it('a step that copies buffers is refused with the reason (NotReplayableError)', async () => {
    const gpu = await getGpu();
    const lm = await model(gpu, 'hrm-tiny-a', 'f32');
    const cache = await prefilled(lm, 4);
    const a = lm.model.weights.lmHead.chunks[0];
    const copying = wrapped(lm.model,
      () => gpu.copy({ buffer: a.buffer, offset: 0, size: 4 }, { buffer: a.buffer, offset: 4, size: 4 }));
    const g = DecodeGraph.tryBuild(copying, cache, 'greedy');
    expect(g).toEqual({ reason: '[capture] a buffer copy cannot be captured (only dispatches replay)' });
    expect(cache.offset).toBe(PROMPT.length);
    cache.dispose();
  });

  it('a lost device or a validation error while capturing is not mistaken for a step that cannot be replayed',
    async () => {
    const gpu = await getGpu();
    const lm = await model(gpu, 'hrm-tiny-a', 'f32');
    const cache = await prefilled(lm, 4);
    // A real WebGPU validation error (MAP_READ cannot go with STORAGE), handed to the device watch as if it had
    // arrived uncaptured while the step was being captured: the next allocation reports it.
    gpu.device.pushErrorScope('validation');
    gpu.device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE });
    const err = await gpu.device.popErrorScope();
    expect(err).not.toBeNull();
    const m = wrapped(lm.model, () => { gpu.watch.uncaptured ??= err; });
    expect(() => DecodeGraph.tryBuild(m, cache, 'greedy')).toThrow(GpuValidationError);
    // The same cache still builds a graph once the device is healthy.
    const g = build(lm, cache, 'greedy');
    g.dispose();
    cache.dispose();
  });

  it('a greedy step whose logits hold a NaN fails with a clear error instead of feeding a token on', async () => {
    const gpu = await getGpu();
    const lm = await loadModel(dirFiles(fixtureDir('hrm-tiny-a')), { gpu, dtype: 'f32' });
    const head = lm.model.weights.lmHead.chunks[0];
    // One lm_head row of NaN (f32 or bf16 bits) makes that logit NaN at every position.
    const bytes = head.dtype === 'f32' ? new Uint32Array(head.shape[1]).fill(0x7fc00000)
      : new Uint16Array(head.shape[1] + (head.shape[1] % 2)).fill(0x7fc0);
    gpu.write(head.buffer, head.offset, bytes);
    const cache = await prefilled(lm, 4);
    const g = build(lm, cache, 'greedy');
    g.feed(1);
    await expect(g.next()).rejects.toThrow(/logits hold a NaN/);
    g.dispose();
    cache.dispose();
    lm.model.dispose();
  });

  it('rejects a token outside the vocabulary', async () => {
    const lm = await model(await getGpu(), 'hrm-tiny-a', 'f32');
    const cache = await prefilled(lm, 4);
    const g = build(lm, cache, 'logits');
    expect(() => g.feed(lm.config.vocab_size)).toThrow(/outside the vocabulary/);
    g.dispose();
    cache.dispose();
  });
});

describe('QueueDepth', () => {
  /** Depth after tokens read every `ms` milliseconds. */
  const after = (ms: number, reads = 30, fixed?: number) => {
    const q = new QueueDepth(fixed);
    for (let i = 0; i < reads; i++) q.read(1000 + i * ms);
    return q.depth;
  };

  it('queues about QUEUE_MS of steps, within [1, MAX]', () => {
    expect(new QueueDepth().depth).toBe(QueueDepth.START);   // nothing read yet
    expect(QueueDepth.START).toBeLessThanOrEqual(2);   // a stop before any step was timed leaves two at most
    expect(after(6)).toBe(Math.ceil(QueueDepth.QUEUE_MS / 6));   // an H200 decode step: 17
    expect(after(40)).toBe(3);   // a fast CPU driver's step
    expect(after(150)).toBe(1);   // lavapipe's step over a 4096-position cache: a stop leaves that one step
    expect(after(0.5)).toBe(QueueDepth.MAX);
  });

  it('follows the step time as it changes, and a fixed depth stays', () => {
    const q = new QueueDepth();
    for (let i = 0; i < 30; i++) q.read(i * 5);
    const fast = q.depth;
    for (let i = 0; i < 30; i++) q.read(150 + i * 15);
    expect(fast).toBe(20);
    expect(q.depth).toBe(7);
    expect(after(1, 30, 7)).toBe(7);
  });
});
