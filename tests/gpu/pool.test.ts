// The buffer pool (src/gpu/pool.ts): sizes round up to whole words, a released buffer is handed out again for its
// size class only, the oldest free buffer of a size first whatever order they came back in (what replay's equal
// bind groups rely on, capture.ts "Pool order"), claimed buffers stay out, and trim destroys the free ones.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { BufferPool, bufferId } from '../../src/gpu/pool.ts';
import { BindingSizeError } from '../../src/errors.ts';

describe('buffer pool', async () => {
  const gpu = await getGpu();

  it('rounds sizes up to 4 bytes and hands a released buffer out again for its size class only', () => {
    const pool = new BufferPool(gpu.device);
    const a = pool.allocate(10, 'a');
    expect(a.size).toBe(12);
    expect(pool.allocate(0, 'empty').size).toBe(4);
    pool.release(a);
    const b = pool.allocate(16, 'b');
    expect(b).not.toBe(a);
    expect(pool.allocate(9, 'c')).toBe(a);   // 9 bytes round to 12: a's class
    expect(pool.allocate(12, 'd')).not.toBe(a);   // a is handed out: none of 12 is free
    pool.trim();
  });

  it('hands out the oldest free buffer of a size first, whatever order they came back in', () => {
    const pool = new BufferPool(gpu.device);
    const made = [pool.allocate(64, 'x'), pool.allocate(64, 'y'), pool.allocate(64, 'z')];
    for (const i of [2, 0, 1]) pool.release(made[i]);
    const again = [pool.allocate(64, '1'), pool.allocate(64, '2'), pool.allocate(64, '3')];
    expect(again.map(bufferId)).toEqual(made.map(bufferId));
    expect(bufferId(made[0])).toBeLessThan(bufferId(made[1]));   // ids follow creation order
    pool.trim();
  });

  it('claim takes free buffers out until released and leaves buffers in use alone', () => {
    const pool = new BufferPool(gpu.device);
    const [x, y] = [pool.allocate(32, 'x'), pool.allocate(32, 'y')];
    pool.release(x);
    const taken = pool.claim([x, y]);
    expect(taken.length).toBe(1);
    expect(taken[0]).toBe(x);
    const fresh = pool.allocate(32, 'fresh');
    expect(fresh).not.toBe(x);
    expect(fresh).not.toBe(y);
    pool.release(x);
    expect(pool.allocate(32, 'back')).toBe(x);
    pool.trim();
  });

  it('trim destroys the free buffers and forgets them', async () => {
    const pool = new BufferPool(gpu.device);
    const x = pool.allocate(8, 'x');
    pool.release(x);
    pool.trim();
    expect(pool.allocate(8, 'y')).not.toBe(x);
    gpu.device.pushErrorScope('validation');
    gpu.device.queue.writeBuffer(x, 0, new Uint8Array(8));
    expect(await gpu.device.popErrorScope()).not.toBeNull();   // destroyed: the queue refuses to write it
    pool.trim();
  });

  it('refuses a buffer over the adapter\'s maxBufferSize with a BindingSizeError naming it', () => {
    const pool = new BufferPool(gpu.device);
    const max = gpu.device.limits.maxBufferSize;
    expect(() => pool.allocate(max + 1, 'huge')).toThrow(BindingSizeError);
    const size = Math.ceil((max + 1) / 4) * 4;
    expect(() => pool.allocate(max + 1, 'huge')).toThrow(`[huge] needs a buffer of ${size} bytes`);
  });
});
