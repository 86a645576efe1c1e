// A captured decode step replayed per token must be the recorded step, bit for bit, at every position; a decode
// step into a quantized cache (its append inside attention) must be the composed path's, one dispatch fewer.
import { describe, expect, it, vi } from 'vitest';
import { DecodeGraph, QueueDepth } from '../../src/hrm/decode.ts';
import { generate } from '../../src/hrm/generate.ts';
import type { KvStorage } from '../../src/hrm/cache.ts';
import type { LoadedModel } from '../../src/hrm/load.ts';
import { getGpu } from '../helpers/gpu.ts';
import { runs } from '../helpers/sweep.ts';
import { fixtureDir, model } from '../../testkit/helpers/model.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel } from '../../src/hrm/load.ts';
import type { HrmModel } from '../../src/hrm/model.ts';
import { GpuValidationError } from '../../src/errors.ts';
import { CacheSlot } from '../../src/hrm/slot.ts';
import { cacheSlots } from '../../src/hrm/config.ts';
import type { DecodeMerge } from '../../src/kernels/plan/options.ts';
import { Gpu } from '../../src/kernels/gpu.ts';

const PROMPT = [5, 9, 100, 7, 31];
const FEED = [11, 300, 42, 17, 99, 123, 54, 2];

/** Prefill PROMPT into a fresh cache holding `extra` more positions. */
async function prefilled(lm: LoadedModel, extra: number, kv?: KvStorage) {
  const cache = lm.model.newCache({ capacity: PROMPT.length + extra, kv, mode: 'after-prefill' });
  (await lm.model.forward(PROMPT, cache, { mask: 'prefix', logits: 'last' }).readF32());
  return cache;
}

function build(lm: LoadedModel, cache: Awaited<ReturnType<typeof prefilled>>, mode: 'greedy' | 'logits'): DecodeGraph {
  const g = DecodeGraph.tryBuild(lm.model, cache, mode);
  if (!(g instanceof DecodeGraph)) throw new Error(`no graph: ${g.reason}`);
  return g;
}

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
    const spy = vi.spyOn(CacheSlot.prototype, 'appendAttend').mockImplementation(function (this: CacheSlot, gqkv, pass) {
      const q = this.append(gqkv, pass);
      const out = this.attend(q, gqkv, pass);
      q.dispose();
      return out;
    });
    try { return await fn(); } finally { spy.mockRestore(); }
  }

  it('quantized decode steps append inside attention: the composed logits bit for bit, one dispatch fewer a layer call', async () => {
    const gpu = await getGpu();
    for (const [which, dtype, kv] of [['hrm-tiny-b', 'bf16', { k: 4, v: 4 }], ['hrm-tiny-a', 'f32', { k: 4, v: 8 }]] as const) {
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

  it('generate() with a q4 cache: the composed path\'s tokens, its replayed step one dispatch a layer call longer than a full cache\'s', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const run = async (kv?: KvStorage) => {
      for await (const ev of generate(lm, 'The jury said', { maxTokens: 8, cache: { kv } })) if (ev.type === 'done') return ev.stats;
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
    expect((await run()).decodePath).toEqual({ replayed: (fused.decodePath as { replayed: number }).replayed - layerCalls });
  });

  it('brown f32, full cache: a step has one dispatch fewer a layer call with the merge folded, and replays either way', async () => {
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

  it('refuses, with the reason, when fewer than three positions are left', async () => {
    const lm = await model(await getGpu(), 'hrm-tiny-a', 'f32');
    const cache = await prefilled(lm, 2);
    const g = DecodeGraph.tryBuild(lm.model, cache, 'greedy');
    expect(g).toEqual({ reason: 'only 2 positions left in the cache' });
    cache.dispose();
  });

  // A model whose forward runs `before` first, then the real forward (the capture records what it does).
  const wrapped = (m: HrmModel, before: () => void): HrmModel =>
    Object.create(m, { forward: { value: (...a: Parameters<HrmModel['forward']>) => { before(); return m.forward(...a); } } });

  it('a step that copies buffers is refused with the reason (NotReplayableError)', async () => {
    const gpu = await getGpu();
    const lm = await model(gpu, 'hrm-tiny-a', 'f32');
    const cache = await prefilled(lm, 4);
    const a = lm.model.weights.lmHead.chunks[0];
    const g = DecodeGraph.tryBuild(wrapped(lm.model, () => gpu.copy({ buffer: a.buffer, offset: 0, size: 4 }, { buffer: a.buffer, offset: 4, size: 4 })), cache, 'greedy');
    expect(g).toEqual({ reason: '[capture] a buffer copy cannot be captured (only dispatches replay)' });
    expect(cache.offset).toBe(PROMPT.length);
    cache.dispose();
  });

  it('a lost device or a validation error while capturing is not mistaken for a step that cannot be replayed', async () => {
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
    const bytes = head.dtype === 'f32' ? new Uint32Array(head.shape[1]).fill(0x7fc00000) : new Uint16Array(head.shape[1] + (head.shape[1] % 2)).fill(0x7fc0);
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

  it('generate() replays by default and gives the recorded path\'s text, greedy and sampled', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    for (const temperature of [0, 0.9]) {
      const run = async (noGraph: boolean) => {
        for await (const ev of generate(lm, 'The jury said', { maxTokens: 12, sampler: { temperature, seed: 7 }, noGraph })) {
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
      for await (const ev of generate({ ...lm, tokenizer }, 'The jury said', { maxTokens: 8 })) if (ev.type === 'done') return ev.stats;
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
