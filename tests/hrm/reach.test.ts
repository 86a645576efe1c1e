// A decode step's attention covers a reach, not the cache's capacity (issue 42, item 1: a step's cost on a CPU
// driver grows with the workgroups it dispatches): the reach function itself, and generate() across reach
// boundaries, whose graphs are built one reach at a time, against the recorded path (noGraph), into full, q8/q4 and
// TurboQuant caches. The kernels' bits at any reach are tested beside them (tests/kernels/append_attend,
// qappend_attend, sdpa_one, qsdpa_one, turbo/turbo-reach).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { attentionReach, MIN_REACH, reachFor } from '../../src/kernels/plan/reach.ts';
import { ShapeError } from '../../src/errors.ts';
import { DecodeGraph } from '../../src/hrm/decode.ts';
import { generate, type GenerateStats } from '../../src/hrm/generate.ts';
import { getGpu } from '../helpers/gpu.ts';
import { model } from '../../testkit/helpers/model.ts';

describe('attentionReach', () => {
  it('is the keys in use rounded up to a power of two, at least MIN_REACH, at most the capacity', () => {
    expect(MIN_REACH).toBe(64);
    expect([0, 1, 63, 64, 65, 128, 129, 1000, 1024, 1025].map((n) => attentionReach(n, 4096)))
      .toEqual([64, 64, 64, 64, 128, 128, 256, 1024, 1024, 2048]);
    expect([1, 50, 65, 4000, 4088].map((n) => attentionReach(n, 4088))).toEqual([64, 64, 128, 4088, 4088]);
    expect(attentionReach(3, 20), 'a cache smaller than the least reach').toBe(20);
  });

  it('reachFor takes a fixed reach that covers the keys and fits the cache, else attentionReach', () => {
    expect(reachFor('op', 70, 300)).toBe(128);
    expect(reachFor('op', 70, 300, 70)).toBe(70);
    expect(reachFor('op', 70, 300, 300)).toBe(300);
    for (const bad of [69, 301, 80.5]) {
      expect(() => reachFor('op', 70, 300, bad)).toThrow(ShapeError);
      expect(() => reachFor('op', 70, 300, bad)).toThrow(`reach ${bad} must be an integer in [kvLen 70, capacity 300]`);
    }
  });
});

describe('generate() across reach boundaries', { timeout: 300_000 }, () => {
  afterEach(() => { vi.restoreAllMocks(); });

  // 60 prompt ids: the graphs reach 64 keys (positions 60..63), then 128 (64..127), then the capacity.
  const promptIds = Array.from({ length: 60 }, (_, i) => 20 + ((i * 37) % 1900));

  /** generate's stats with and without graphs, and the reach of each graph built (its `end`) or why none was. */
  async function both(maxTokens: number, temperature: number, kv?: string) {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const run = async (noGraph: boolean): Promise<GenerateStats> => {
      const opts = { maxTokens, promptIds, noGraph, sampler: { temperature, seed: 3 }, cache: { kv } };
      for await (const ev of generate(lm, '', opts)) if (ev.type === 'done') return ev.stats;
      throw new Error('no done event');
    };
    const ends: Array<number | string> = [];
    const build = DecodeGraph.tryBuild.bind(DecodeGraph);
    vi.spyOn(DecodeGraph, 'tryBuild').mockImplementation((...a) => {
      const g = build(...a);
      ends.push(g instanceof DecodeGraph ? g.end : g.reason);
      return g;
    });
    const replayed = await run(false);
    const recorded = await run(true);
    return { replayed, recorded, ends };
  }

  it('greedy: three graphs (64, 128 keys, the capacity), the recorded path\'s tokens', async () => {
    const { replayed, recorded, ends } = await both(75, 0);
    expect(ends).toEqual([64, 128, 135]);
    expect(replayed.stopReason).toBe('max_tokens');
    expect(replayed.decodePath).toHaveProperty('replayed');
    expect(replayed.ids).toHaveLength(75);
    expect(replayed.ids).toEqual(recorded.ids);
  });

  it('greedy into a q8 / q4 cache (qsdpa_one): three graphs, the recorded path\'s tokens', async () => {
    const { replayed, recorded, ends } = await both(75, 0, 'ctk=q8_0,ctv=q4_0');
    expect(ends).toEqual([64, 128, 135]);
    expect(replayed.ids).toHaveLength(75);
    expect(replayed.ids).toEqual(recorded.ids);
  });

  it('greedy into turbo4 / turbo3 sides (turbo_one): three graphs, the recorded path\'s tokens', async () => {
    const { replayed, recorded, ends } = await both(75, 0, 'ctk=turbo4,ctv=turbo3');
    expect(ends).toEqual([64, 128, 135]);
    expect(replayed.ids).toHaveLength(75);
    expect(replayed.ids).toEqual(recorded.ids);
  }, 600_000); // a turbo side costs more on a CPU driver: 112 s on a loaded machine

  it('greedy into a turbo3 K beside a full V (decoded over the reach): three graphs, the same tokens', async () => {
    const { replayed, recorded, ends } = await both(75, 0, 'ctk=turbo3,ctv=f16');
    expect(ends).toEqual([64, 128, 135]);
    expect(replayed.ids).toHaveLength(75);
    expect(replayed.ids).toEqual(recorded.ids);
  }, 600_000);

  it('greedy into a q8 K beside a full V (decoded over the reach): three graphs, the same tokens', async () => {
    const { replayed, recorded, ends } = await both(75, 0, 'ctk=q8_0,ctv=f16');
    expect(ends).toEqual([64, 128, 135]);
    expect(replayed.ids).toHaveLength(75);
    expect(replayed.ids).toEqual(recorded.ids);
  }, 600_000);

  it('sampled: two graphs, then the cache\'s last two positions recorded, the recorded path\'s tokens', async () => {
    const { replayed, recorded, ends } = await both(70, 0.9);
    expect(ends).toEqual([64, 128, 'only 2 positions left in the cache']);
    expect(replayed.stopReason).toBe('max_tokens');
    expect(replayed.ids).toHaveLength(70);
    expect(replayed.ids).toEqual(recorded.ids);
  });
});
