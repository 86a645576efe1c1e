// A captured decode step replayed per token must be the recorded step, bit for bit, at every position; a decode
// step into a quantized cache (its append inside attention) must be the composed path's, one dispatch fewer
// (decode-errors.test.ts: what a graph refuses, its errors, the queue's depth).
import { describe, expect, it, vi } from 'vitest';
import { generate } from '../../src/hrm/generate.ts';
import type { KvStorage } from '../../src/hrm/cache.ts';
import { getGpu } from '../helpers/gpu.ts';
import { runs } from '../helpers/sweep.ts';
import { build, PROMPT, prefilled } from '../helpers/decode.ts';
import { fixtureDir, model } from '../../testkit/helpers/model.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { CacheSlot } from '../../src/hrm/slot.ts';
import { cacheSlots } from '../../src/hrm/config.ts';
import type { DecodeMerge } from '../../src/kernels/plan/options.ts';
import { Gpu } from '../../src/kernels/gpu.ts';

const FEED = [11, 300, 42, 17, 99, 123, 54, 2];

describe('decode graph', { timeout: 300_000 }, () => {
  const cases: Array<[string, 'brown' | 'hrm-tiny-a' | 'hrm-tiny-b', 'f32' | 'bf16', KvStorage | undefined]> = [
    ['brown f32, full cache', 'brown', 'f32', undefined],
    ['tiny-a bf16, full cache', 'hrm-tiny-a', 'bf16', undefined],
    ['tiny-a f32, kv8', 'hrm-tiny-a', 'f32', { k: 8, v: 8 }],
    ['tiny-b bf16, kv4', 'hrm-tiny-b', 'bf16', { k: 4, v: 4 }],
    ['tiny-a bf16, K 8 bits and V full', 'hrm-tiny-a', 'bf16', { k: 8, v: null }],
  ];
  for (const [i, [name, which, dtype, kv]] of cases.entries()) {
    it(`${name}: replayed logits equal recorded ones at every position`, async () => {
      const lm = await model(await getGpu(), which, dtype);
      const a = await prefilled(lm, FEED.length, kv), b = await prefilled(lm, FEED.length, kv);
      const g = build(lm, b, 'logits');
      for (const t of FEED) {
        const want = await lm.model.forward([t], a, { mask: 'causal' }).readF32();
        g.feed(t);
        expect(await g.nextLogits()).toEqual(want);
        expect(b.offset).toBe(a.offset);
      }
      g.dispose();
      a.dispose(); b.dispose();
    });

    // The chaining does not depend on the cache: a full and a quantized one (HRM_EXHAUSTIVE=1: every case).
    const greedy = runs(i === 0 || i === 3);
    if (greedy) it(`${name}: greedy steps chain on the GPU and pick the recorded path's tokens`, async () => {
      const lm = await model(await getGpu(), which, dtype);
      const a = await prefilled(lm, FEED.length, kv), b = await prefilled(lm, FEED.length, kv);
      const want: number[] = [];
      let tok = FEED[0];
      for (let i = 0; i < FEED.length; i++) {
        const row = await lm.model.forward([tok], a, { mask: 'causal' }).readF32();
        tok = row.indexOf(Math.max(...row));
        want.push(tok);
      }
      const g = build(lm, b, 'greedy');
      g.feed(FEED[0]);
      // All steps queued before the first is read: each reads the token the previous one wrote.
      const got = await Promise.all(FEED.map(() => g.next()));
      expect(got).toEqual(want);
      g.dispose();
      // The cache stays usable by ordinary forwards after the graph is gone.
      expect(b.offset).toBe(PROMPT.length + FEED.length);
      a.dispose(); b.dispose();
    });
  }

  /**
   * While `fn` runs, every slot appends and attends as before the fused decode paths (ropeAppend, then attention:
   * the reference they are bit for bit equal to).
   */
  async function composed<T>(fn: () => Promise<T>): Promise<T> {
    const spy = vi.spyOn(CacheSlot.prototype, 'appendAttend').mockImplementation(function (this: CacheSlot, gqkv,
      pass) {
      const q = this.append(gqkv, pass);
      const out = this.attend(q, gqkv, pass);
      q.dispose();
      return out;
    });
    try { return await fn(); } finally { spy.mockRestore(); }
  }

  it('quantized decode steps append inside attention: the composed logits bit for bit, one dispatch fewer a ' +
    'layer call', async () => {
    const gpu = await getGpu();
    const kinds = [['hrm-tiny-b', 'bf16', { k: 4, v: 4 }], ['hrm-tiny-a', 'f32', { k: 4, v: 8 }]] as const;
    for (const [which, dtype, kv] of kinds) {
      const lm = await model(gpu, which, dtype);
      const a = await prefilled(lm, FEED.length, kv), b = await prefilled(lm, FEED.length, kv);
      for (const t of FEED) {
        const step = async (cache: typeof a) => {
          const d0 = gpu.dispatchCount;
          const logits = lm.model.forward([t], cache, { mask: 'causal' });
          return { dispatches: gpu.dispatchCount - d0, logits: await logits.readF32() };
        };
        const want = await composed(() => step(a));
        const got = await step(b);
        expect(got.logits, `${which} kv ${kv.k}/${kv.v} at ${b.offset}`).toEqual(want.logits);
        expect(want.dispatches - got.dispatches, 'one dispatch fewer per slot').toBe(b.slots.length);
      }
      a.dispose(); b.dispose();
    }
  });

  it('generate() with a q4 cache: the composed path\'s tokens, its replayed step one dispatch a layer call longer ' +
    'than a full cache\'s', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const run = async (kv?: KvStorage) => {
      for await (const ev of generate(lm, 'The jury said', { maxTokens: 8, cache: { kv } })) {
        if (ev.type === 'done') return ev.stats;
      }
      throw new Error('no done event');
    };
    const q4 = { k: 4, v: 4 };
    const before = await composed(() => run(q4));
    const fused = await run(q4);
    expect(fused.ids).toEqual(before.ids);
    const layerCalls = cacheSlots(lm.config);
    expect(before.decodePath).toHaveProperty('replayed');
    expect(fused.decodePath).toEqual({ replayed: (before.decodePath as { replayed: number }).replayed - layerCalls });
    // A full cache's step has one dispatch fewer again: its merge is folded into the split.
    expect((await run()).decodePath).toEqual({
      replayed: (fused.decodePath as { replayed: number }).replayed - layerCalls });
  });

  it('brown f32, full cache: a step has one dispatch fewer a layer call with the merge folded, and replays ' +
    'either way', async () => {
    // The merge is the Gpu's (DeviceOptions.kernels): the separate one runs on a Gpu of its own, beside the shared.
    const separate = await Gpu.create({ kernels: { decodeMerge: 'separate' } });
    const models = {
      fold: await model(await getGpu(), 'brown', 'f32'),
      separate: await loadModel(dirFiles(fixtureDir('brown')), { gpu: separate, dtype: 'f32' }),
    };
    const calls = cacheSlots(models.fold.config);
    const size: Partial<Record<DecodeMerge, number>> = {};
    try {
      for (const merge of ['separate', 'fold'] as const) {
        const lm = models[merge];
        const a = await prefilled(lm, 4), b = await prefilled(lm, 4);
        const g = build(lm, b, 'logits');
        size[merge] = g.size;
        for (const t of FEED.slice(0, 3)) {
          const want = await lm.model.forward([t], a, { mask: 'causal' }).readF32();
          g.feed(t);
          expect(await g.nextLogits(), `${merge} merge`).toEqual(want);
        }
        g.dispose();
        a.dispose(); b.dispose();
      }
    } finally {
      models.separate.model.dispose();
      separate.destroy();
    }
    // One dispatch fewer per layer call (24 here). The totals depend on the driver: a CPU driver runs the norms
    // as dispatches of their own (186 and 210 on lavapipe), a GPU fuses them into the projections.
    expect(size.separate! - size.fold!).toBe(calls);
  });

  it('generate() replays by default and gives the recorded path\'s text, greedy and sampled', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    for (const temperature of [0, 0.9]) {
      const run = async (noGraph: boolean) => {
        const o = { maxTokens: 12, sampler: { temperature, seed: 7 }, noGraph };
        for await (const ev of generate(lm, 'The jury said', o)) {
          if (ev.type === 'done') return ev;
        }
        throw new Error('no done event');
      };
      const [replayed, recorded] = [await run(false), await run(true)];
      expect(replayed.stats.decodePath).toHaveProperty('replayed');
      expect(recorded.stats.decodePath).toEqual({ recorded: 'disabled by noGraph' });
      expect(replayed.stats.ids).toEqual(recorded.stats.ids);
      expect(replayed.text).toBe(recorded.text);
    }
  });

  it('generate() stops at every eos id the tokenizer lists, not only the config\'s', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const run = async (tokenizer: typeof lm.tokenizer) => {
      for await (const ev of generate({ ...lm, tokenizer }, 'The jury said', { maxTokens: 8 })) {
        if (ev.type === 'done') return ev.stats;
      }
      throw new Error('no done event');
    };
    const free = await run(lm.tokenizer);
    expect(free.stopReason).toBe('max_tokens');
    // The third token generated becomes a second eos id: generation ends before it.
    const eosIds = [...lm.tokenizer!.eosTokenIds, free.ids[2]];
    const stopped = await run(Object.create(lm.tokenizer, { eosTokenIds: { value: eosIds } }));
    expect(stopped.stopReason).toBe('eos');
    expect(stopped.ids).toEqual(free.ids.slice(0, free.ids.indexOf(free.ids[2])));
  });
});
