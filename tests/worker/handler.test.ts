// The worker's side for real (Node/Dawn, the embedded model): WorkerHandler and HrmWorkerClient over a MessageChannel,
// so every message is structured-cloned as between a page and its worker. Each answer is checked against the same
// call made directly on a model loaded in this thread: tokens, text, logits (bit for bit), REFRACT's figures, and
// the errors' class and message.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  formatPrompt, generate, HrmBackend, loadModel, logits, runRefract, type LoadedModel,
} from '../../src/index.ts';
import { dirFiles, HrmModel } from '../../src/advanced.ts';
import { PROMPTS_V01 } from '../../src/refract/index.ts';
import { prefillMatmulPath } from '../../src/kernels/plan/matmul.ts';
import { HrmWorkerClient, type WorkerPort } from '../../src/worker/client.ts';
import { WorkerHandler, type WorkerHandlerOptions } from '../../src/worker/handler.ts';
import { WorkerError } from '../../src/worker/errors.ts';
import { DeviceLostError, InputError } from '../../src/errors.ts';
import type { GenerateEvent } from '../../src/worker/protocol.ts';

function connect(opts: WorkerHandlerOptions = {}): { client: HrmWorkerClient; handler: WorkerHandler; close(): void } {
  const { port1, port2 } = new MessageChannel();
  const handler = new WorkerHandler((reply, transfer) => port1.postMessage(reply, transfer ?? []), opts);
  port1.onmessage = (ev) => handler.onmessage(ev);
  const client = new HrmWorkerClient(port2 as unknown as WorkerPort);
  port2.start();
  return { client, handler, close: () => { port1.close(); port2.close(); } };
}

async function collect(events: AsyncIterable<GenerateEvent>, onText?: (n: number) => void): Promise<GenerateEvent[]> {
  const out: GenerateEvent[] = [];
  for await (const ev of events) { out.push(ev); if (ev.type === 'text') onText?.(out.length); }
  return out;
}

/** The events without their timings (they differ run to run). */
const untimed = (evs: GenerateEvent[]) =>
  evs.map((e) => (e.type === 'done' ? { ...e, stats: { ...e.stats, promptMs: 0, waitMs: 0, decodeMs: 0 } } : e));

const bytes = (x: Float32Array) => Buffer.from(x.buffer, x.byteOffset, x.byteLength);

describe('the model in a worker (Node, over a MessageChannel)', () => {
  let direct: LoadedModel;
  let w: ReturnType<typeof connect>;
  beforeAll(async () => {
    direct = await loadModel();
    w = connect();
  });
  afterAll(() => {
    direct?.model.gpu.destroy();
    w?.handler.loaded?.model.gpu.destroy();
    w?.close();
  });

  it('loads the embedded model with progress, then generates the same events as the library', async () => {
    const stages = new Set<string>();
    const info = await w.client.load(undefined, { progressCallback: (p) => stages.add(p.stage) });
    expect([...stages]).toEqual(['config', 'tokenizer', 'weights']);
    expect(info).toMatchObject({
      name: direct.name, checkpoint: direct.checkpoint, tokenizer: true, dtype: 'f32', quant: null,
      weightBytes: direct.model.weights.bytes, warnings: [],
    });
    expect(info.config).toEqual(direct.config);
    expect(info.adapter.runtime).toBe('node');
    const opts = { condition: 'noisy', maxTokens: 8 };
    const want = await collect(generate(direct, 'The jury said', opts));
    const got = await collect(w.client.generate('The jury said', opts));
    expect(untimed(got)).toEqual(untimed(want));
    const ids = direct.tokenizer!.encode(formatPrompt('The jury said', 'noisy', { chatTemplate: direct.chatTemplate }));
    const pieces = ids.map((id) => direct.tokenizer!.decode([id]));
    expect(await w.client.tokenize('The jury said', { condition: 'noisy' })).toEqual({ ids, pieces });
    const raw = await w.client.tokenize('The jury said', { raw: true });
    expect(raw.ids).toEqual(direct.tokenizer!.encode('The jury said'));
    expect(got.at(-1)).toMatchObject({ type: 'done', stats: { stopReason: 'max_tokens' } });
  });

  it('logits equal the library\'s bit for bit (f32, bf16 activations, quantized and TurboQuant caches)', async () => {
    const ids = direct.tokenizer!.encode('The jury said that the city');
    const cases = [{}, { dtype: 'bf16' as const }, { mask: 'causal' as const, kv: 'ctk=q8_0,ctv=q4_0' },
      { mask: 'causal' as const, kv: 'ctk=turbo3,ctv=q8_0' }];
    for (const opts of cases) {
      const variant = opts.dtype && new HrmModel(direct.model.gpu, direct.config, direct.model.weights, opts.dtype);
      const model = variant ? { ...direct, model: variant } : direct;
      const want = await logits(model, ids, opts);
      const got = await w.client.logits(ids, opts);
      expect(got.length).toBe(ids.length * direct.config.vocab_size);
      expect(bytes(got).equals(bytes(want))).toBe(true);
    }
  });

  it('an abort stops the generation in the worker; the next call runs as usual', async () => {
    const full = await collect(w.client.generate('The jury said', { maxTokens: 40 }));
    const ctl = new AbortController();
    const stream = w.client.generate('The jury said', { maxTokens: 40, signal: ctl.signal });
    const stopped = await collect(stream, (n) => { if (n === 2) ctl.abort(); });
    const [a, b] = [full.at(-1)!, stopped.at(-1)!];
    if (a.type !== 'done' || b.type !== 'done') throw new Error('no done event');
    expect(b.stats.stopReason).toBe('aborted');
    expect(b.stats.ids.length).toBeLessThan(a.stats.ids.length);
    expect(b.stats.ids).toEqual(a.stats.ids.slice(0, b.stats.ids.length));
    expect((await w.client.generateText('The jury said', { maxTokens: 40 })).stats.ids).toEqual(a.stats.ids);
  });

  it('a REFRACT run gives the library\'s figures, with its progress', async () => {
    const corpus = 'The jury said that the city had no evidence of fraud. '.repeat(10);
    const run = { candidate: 'ctk=q4_0,ctv=q4_0', prompts: PROMPTS_V01.slice(0, 1), chunks: 1, ctx: 32, nPredict: 4,
      corpus };
    const want = await runRefract({ ...run, backend: new HrmBackend(direct), model: direct.name });
    const stages = new Set<string>();
    const got = await w.client.runRefract({ ...run, onProgress: (s) => stages.add(s) });
    expect([...stages]).toEqual(['trajectory', 'kld']);
    expect(got.axes.kld.mean_kld).toBe(want.axes.kld.mean_kld);
    expect(got.axes.gtm.score).toBe(want.axes.gtm.score);
    expect(got.composite).toBe(want.composite);
  });

  it('open: the device before a load; a failed load on it keeps the model; app sources, timePass, sync', async () => {
    const embedded = direct.name; // the embedded model's folder
    // The app's own description of a source, read by its `files` option.
    const o = connect({ files: (s) => dirFiles((s as { dir: string }).dir) });
    try {
      const dev = await o.client.open();
      expect(dev.adapter.features).toEqual(direct.model.gpu.summary.features);
      expect(dev.adapter.fastPaths).toEqual(direct.model.gpu.summary.fastPaths);
      expect(dev.prefillMatmuls).toBe(prefillMatmulPath(direct.model.gpu));
      const info = await o.client.load({ dir: embedded });
      const w = direct.model.weights;
      expect(info).toMatchObject({ name: embedded, weightBytes: w.bytes, weightDtype: w.L[0].gqkv.dtype });
      const gpu = o.handler.loaded!.model.gpu;
      const missing = await o.client.load({ dir: `${embedded}-missing` }).catch((e) => e);
      expect(missing.message).toMatch(/config\.json/);
      expect(o.handler.loaded?.name).toBe(embedded); // still loaded, on the device open gave
      expect(o.handler.loaded!.model.gpu).toBe(gpu);
      const want = await collect(generate(direct, 'The jury said', { maxTokens: 4 }));
      expect(untimed(await collect(o.client.generate('The jury said', { maxTokens: 4 })))).toEqual(untimed(want));
      await o.client.load({ dir: embedded });
      expect(o.handler.loaded!.model.gpu).toBe(gpu); // a second load on the same device
      const ms = await o.client.timePass(16, { dtype: 'bf16' });
      expect(ms).toBeGreaterThan(0);
      expect(Number.isFinite(ms)).toBe(true);
      await expect(o.client.timePass(0)).rejects.toThrow('[timePass] positions must be a whole number from 1 (got 0)');
      await o.client.sync();
    } finally {
      await o.client.dispose();
      o.close();
    }
  });

  it('errors keep their class and message; a lost device fails the call in flight, and a new load works', async () => {
    const bad = await w.client.generateText('x', { cache: { kv: 'ctk=q9_9' } }).catch((e) => e);
    const ref = await (async () => collect(generate(direct, 'x', { cache: { kv: 'ctk=q9_9' } })))().catch((e) => e);
    expect(bad).toBeInstanceOf(InputError);
    expect(bad.message).toBe(ref.message);
    const fresh = connect();
    const none = new WorkerError('worker', 'no model is loaded in the worker: call load() first');
    await expect(fresh.client.logits([1, 2])).rejects.toThrow(none);
    fresh.close();
    // Sampled, not greedy: greedy decoding queues steps ahead, and those rejected by the loss are nobody's to catch
    // (an unhandled rejection in decode.ts's greedySteps, the library's own, with or without a worker).
    const sampled = { maxTokens: 200, sampler: { temperature: 0.8, seed: 1 } };
    const running = collect(w.client.generate('The jury said', sampled), (n) => {
      if (n === 2) w.handler.loaded!.model.gpu.destroy();
    });
    const lost = await running.catch((e) => e);
    expect(lost).toBeInstanceOf(DeviceLostError);
    expect(lost.message).toMatch(/^\[worker\] the worker's GPU device was lost \(destroyed: .*\); load the model/);
    expect(w.client.info).toBeNull();
    await w.client.load();
    expect((await w.client.generateText('The jury said', { maxTokens: 3 })).stats.decodeTokens).toBe(2);
  });
});
