// The uniform arena (src/gpu/uniforms.ts): blocks packed at the device's minUniformBufferOffsetAlignment into 64 KiB
// chunks, the next chunk when a block does not fit; `take` hands out each used chunk's bytes (copies, or views for
// a submit) and the arena starts over in the same buffers.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { UniformArena } from '../../src/gpu/uniforms.ts';

const CHUNK = 64 * 1024;

describe('uniform arena', async () => {
  const gpu = await getGpu();
  const align = gpu.device.limits.minUniformBufferOffsetAlignment;
  const block = (i: number, bytes = 12) => new Uint8Array(bytes).fill(i % 251 + 1);

  it('packs blocks at the device\'s alignment, a chunk at a time, and hands out their bytes where they lie', () => {
    const arena = new UniformArena(gpu.device);
    const perChunk = CHUNK / align;
    const views = Array.from({ length: perChunk + 3 }, (_, i) => arena.uniform(block(i)));
    const aligned = Array.from({ length: perChunk }, (_, i) => i * align);
    expect(views.slice(0, perChunk).map((v) => v.offset)).toEqual(aligned);
    expect(views.every((v) => v.size === 12)).toBe(true);
    expect(views.slice(0, perChunk).every((v) => v.buffer === views[0].buffer)).toBe(true);
    const second = views[perChunk];
    expect(second.buffer).not.toBe(views[0].buffer);   // the first chunk is full: the next one starts at 0
    expect(views.slice(perChunk).map((v) => v.offset)).toEqual([0, align, 2 * align]);

    const ups = arena.take();
    expect(ups.map((u) => [u.buffer, u.offset, u.data.byteLength])).toEqual([
      [views[0].buffer, 0, CHUNK], [second.buffer, 0, 3 * align],
    ]);
    for (const [i, v] of views.entries()) {
      const data = ups[v.buffer === second.buffer ? 1 : 0].data;
      expect([...data.subarray(v.offset, v.offset + 12)]).toEqual([...block(i)]);
    }
  });

  it('moves a block that would cross the chunk\'s end to the next chunk whole', () => {
    const arena = new UniformArena(gpu.device);
    const first = arena.uniform(block(1, CHUNK - align));
    const big = arena.uniform(block(2, 2 * align));
    expect(first.offset).toBe(0);
    expect(big.buffer).not.toBe(first.buffer);
    expect(big.offset).toBe(0);
    expect(arena.take().map((u) => u.data.byteLength)).toEqual([CHUNK - align, 2 * align]);
  });

  it('starts over in the same buffers once taken; a taken copy keeps its bytes, a view sees the next batch\'s', () => {
    const arena = new UniformArena(gpu.device);
    const a = arena.uniform(block(7));
    const [copy] = arena.take();
    const b = arena.uniform(block(9));
    expect(b.buffer).toBe(a.buffer);
    expect(b.offset).toBe(0);
    expect(copy.data[0]).toBe(8);
    const [view] = arena.take(false);
    arena.uniform(block(20));
    expect(view.data[0]).toBe(21);   // a view of the arena: only for a submit, which writes it at once
    expect(arena.take()).toHaveLength(1);
    expect(arena.take()).toEqual([]);   // nothing staged since
  });
});
