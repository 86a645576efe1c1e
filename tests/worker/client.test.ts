// HrmWorkerClient against a scripted worker (fake-worker.ts; Node, no GPU): what it sends for each call, how it
// streams, aborts and rebuilds errors, and that a worker which dies or loses its device fails every call in flight.
import { describe, expect, it } from 'vitest';
import { HrmWorkerClient } from '../../src/worker/client.ts';
import { WorkerError } from '../../src/worker/errors.ts';
import { errorPayload, type GenerateEvent, type GenerateStats, type Request } from '../../src/worker/protocol.ts';
import { DeviceLostError, FormatError, InputError, NetworkError, ShapeError } from '../../src/errors.ts';
import { RefractError } from '../../src/refract/backend.ts';
import { FakeWorker } from './fake-worker.ts';

function setup() {
  const w = new FakeWorker();
  return { w, hrm: new HrmWorkerClient(w) };
}

const call = (r: Request) => {
  if (r.type !== 'call') throw new Error(`expected a call, got ${JSON.stringify(r)}`);
  return r;
};

const stats = (stopReason: GenerateStats['stopReason'], ids: number[]): GenerateStats => ({
  promptTokens: 5, promptMs: 1, waitMs: 0, decodeTokens: ids.length, decodeMs: 2, ids, stopReason, cacheBytes: 64,
  decodePath: { replayed: 7 }, persistentSteps: 0,
});

// A broken client hangs on a request that never comes: a short timeout makes that a quick failure.
describe('HrmWorkerClient', { timeout: 10_000 }, () => {
  it('load sends the source as clonable data, reports progress in order, and keeps the model info', async () => {
    const { w, hrm } = setup();
    const seen: number[] = [];
    const progressCallback = (p: { loaded: number }) => seen.push(p.loaded);
    const loading = hrm.load(new URL('https://example.org/m/'), { dtype: 'bf16', progressCallback });
    const r = call(await w.request(0));
    const args = { source: 'https://example.org/m/', options: { dtype: 'bf16' } };
    expect(r).toEqual({ type: 'call', id: r.id, method: 'load', args });
    for (const loaded of [0, 5, 10]) {
      w.reply({ type: 'progress', id: r.id, progress: { stage: 'weights', loaded, total: 10, progress: loaded * 10 } });
    }
    const info = { name: 'm', checkpoint: 'm/model.safetensors', tokenizer: true, dtype: 'bf16', weightBytes: 10 };
    w.reply({ type: 'result', id: r.id, value: info as never });
    expect(await loading).toEqual(info);
    expect(seen).toEqual([0, 5, 10]);
    expect(hrm.info).toEqual(info);
    // Files cross as an array of File (a FileList is iterable); no source: the embedded model.
    const file = new File(['{}'], 'config.json');
    void hrm.load(new Set([file]));
    void hrm.load();
    const [a, b] = [call(await w.request(1)), call(await w.request(2))];
    // (Node 20 clones a File as {}, browsers keep it: check what was sent.)
    expect(w.sent[1]).toMatchObject({ method: 'load', args: { source: [file] } });
    expect(Array.isArray((a.args as { source: unknown }).source)).toBe(true);
    expect(b.args).toEqual({ source: undefined, options: {} });
  });

  it('generate streams the worker\'s events in order and ends after its result', async () => {
    const { w, hrm } = setup();
    const events: GenerateEvent[] = [
      { type: 'text', text: 'The' }, { type: 'text', text: ' jury' },
      { type: 'done', text: 'The jury', stats: stats('max_tokens', [1, 2]) },
    ];
    const got: GenerateEvent[] = [];
    const done = (async () => {
      for await (const ev of hrm.generate('p', { maxTokens: 2, cache: { kv: 'ctk=q8_0' } })) got.push(ev);
    })();
    const r = call(await w.request(0));
    expect(r.method).toBe('generate');
    expect(r.args).toEqual({ prompt: 'p', options: { maxTokens: 2, cache: { kv: 'ctk=q8_0' } } });
    for (const event of events) w.reply({ type: 'event', id: r.id, event });
    w.reply({ type: 'result', id: r.id, value: null });
    await done;
    expect(got).toEqual(events);
    expect(w.received).toHaveLength(1); // a generation that ended by itself sends no abort
  });

  it('an aborted signal crosses as an abort of that call; the stream ends with the worker\'s result', async () => {
    const { w, hrm } = setup();
    const ctl = new AbortController();
    const r = hrm.generateText('p', { signal: ctl.signal, onText: () => ctl.abort() });
    const req = call(await w.request(0));
    w.reply({ type: 'event', id: req.id, event: { type: 'text', text: 'a' } });
    expect(await w.request(1)).toEqual({ type: 'abort', id: req.id });
    w.reply({ type: 'event', id: req.id, event: { type: 'done', text: 'a', stats: stats('aborted', [3]) } });
    w.reply({ type: 'result', id: req.id, value: null });
    const res = await r;
    expect(res.text).toBe('a');
    expect(res.stats.stopReason).toBe('aborted');
  });

  it('leaving the loop early aborts the generation in the worker', async () => {
    const { w, hrm } = setup();
    const loop = (async () => { for await (const ev of hrm.generate('p')) if (ev.type === 'text') break; })();
    const req = call(await w.request(0));
    w.reply({ type: 'event', id: req.id, event: { type: 'text', text: 'a' } });
    await loop;
    expect(await w.request(1)).toEqual({ type: 'abort', id: req.id });
  });

  it('logits arrive as the Float32Array the worker transferred', async () => {
    const { w, hrm } = setup();
    const p = hrm.logits([1, 2, 3], { mask: 'causal' });
    const req = call(await w.request(0));
    expect(req.args).toEqual({ ids: [1, 2, 3], options: { mask: 'causal' } });
    const sent = Float32Array.from([0.5, -1, Math.fround(Math.PI), NaN]);
    w.reply({ type: 'result', id: req.id, value: sent }, [sent.buffer]);
    expect(sent.length).toBe(0); // moved, not copied
    expect([...(await p)]).toEqual([0.5, -1, Math.fround(Math.PI), NaN]);
  });

  it('runRefract forwards progress and its signal', async () => {
    const { w, hrm } = setup();
    const ctl = new AbortController();
    const seen: string[] = [];
    const onProgress = (s: string, d: number, t: number, eta: number | null) => seen.push(`${s} ${d}/${t} ${eta}`);
    const p = hrm.runRefract({ candidate: 'ctk=q4_0', chunks: 1, signal: ctl.signal, onProgress });
    const req = call(await w.request(0));
    expect(req.args).toEqual({ options: { candidate: 'ctk=q4_0', chunks: 1 } });
    w.reply({ type: 'progress', id: req.id, progress: { stage: 'kld', done: 1, total: 2, etaSeconds: 3 } });
    await new Promise((r) => setTimeout(r, 5));
    ctl.abort();
    expect(await w.request(1)).toEqual({ type: 'abort', id: req.id });
    w.reply({ type: 'result', id: req.id, value: { candidate: 'ctk=q4_0' } as never });
    expect(await p).toEqual({ candidate: 'ctk=q4_0' });
    expect(seen).toEqual(['kld 1/2 3']);
  });

  it('errors thrown in the worker arrive as the same class with the same message', async () => {
    const { w, hrm } = setup();
    const thrown = [
      new ShapeError('matmul', 'x [2, 3] @ w [4, 5]'), new NetworkError('fetch', 'HTTP 503 for config.json', true, 503),
      new RefractError('refract', 'noise floor 90 < 99'), new TypeError('not a function'),
      new DOMException('stopped', 'AbortError'),
      Object.assign(new Error('custom'), { name: 'WeirdError' }),
    ];
    for (const [i, e] of thrown.entries()) {
      const p = hrm.logits([i]);
      const req = call(await w.request(i));
      w.reply({ type: 'error', id: req.id, error: errorPayload(e) });
      const got = await p.then(() => null, (x: Error) => x);
      expect(got?.name).toBe(e.name);
      expect(got?.message).toBe(e.message);
      // Comparing prototypes directly: pretty-printing DOMException.prototype throws in Node.
      expect(got?.constructor === e.constructor, `${e.name}: ${got?.constructor?.name}`).toBe(true);
    }
    const p = hrm.logits([9]).catch((x) => x);
    w.reply({ type: 'error', id: call(await w.request(thrown.length)).id, error: errorPayload(thrown[1]) });
    const net = await p;
    expect(net).toBeInstanceOf(NetworkError);
    expect([net.op, net.transient, net.status]).toEqual(['fetch', true, 503]);
    // A minified worker bundle renames its classes (and so their `name`s): an error crosses by its export name.
    const renamed = Object.assign(new FormatError('safetensors', 'model.safetensors: truncated?'), { name: 'e' });
    expect(errorPayload(renamed).name).toBe('FormatError');
    const q = hrm.logits([10]).catch((x) => x);
    w.reply({ type: 'error', id: call(await w.request(thrown.length + 1)).id, error: errorPayload(renamed) });
    const format = await q;
    expect(format).toBeInstanceOf(FormatError);
    expect(format.message).toBe('[safetensors] model.safetensors: truncated?');
  });

  it('a worker that crashes fails every pending call at once, and every later call', async () => {
    const { w, hrm } = setup();
    const a = hrm.logits([1]).catch((e) => e);
    const b = hrm.load().catch((e) => e);
    await w.request(1);
    w.crash('Uncaught RangeError: Array buffer allocation failed');
    for (const e of [await a, await b]) {
      expect(e).toBeInstanceOf(WorkerError);
      expect(e.message).toBe('[worker] the worker stopped: Uncaught RangeError: Array buffer allocation failed');
    }
    expect(w.terminated).toBe(true);
    await expect(hrm.logits([1])).rejects.toThrow(/the worker stopped/);
    expect(w.received).toHaveLength(2);
  });

  it('terminate fails the calls in flight; a lost device fails them too but the worker stays usable', async () => {
    const { w, hrm } = setup();
    const heard: string[] = [];
    hrm.onLost((m) => heard.push(m));
    const gen = (async () => { for await (const _ of hrm.generate('p')) { /* none */ } })().catch((e) => e);
    await w.request(0);
    w.reply({ type: 'lost', message: 'the worker\'s GPU device was lost (unknown: reset)' });
    const e = await gen;
    expect(e).toBeInstanceOf(DeviceLostError);
    expect(e.message).toBe('[worker] the worker\'s GPU device was lost (unknown: reset)');
    expect(heard).toEqual(['the worker\'s GPU device was lost (unknown: reset)']); // the app hears it once
    const again = hrm.logits([2]);
    const req = call(await w.request(1));
    w.reply({ type: 'error', id: req.id, error: errorPayload(new InputError('worker', 'load first')) });
    await expect(again).rejects.toBeInstanceOf(InputError);
    const pending = hrm.logits([3]);
    await w.request(2);
    hrm.terminate();
    await expect(pending).rejects.toThrow('[worker] the worker was terminated');
    expect(w.terminated).toBe(true);
  });

  it('open, timePass, sync and an app\'s own source description cross as their calls', async () => {
    const { w, hrm } = setup();
    const opened = hrm.open({ f16: false });
    const o = call(await w.request(0));
    expect(o).toEqual({ type: 'call', id: o.id, method: 'open', args: { device: { f16: false } } });
    const dev = { adapter: { features: ['subgroups'] }, prefillMatmuls: 'tiled f32 (no shader-f16)' };
    w.reply({ type: 'result', id: o.id, value: dev as never });
    expect(await opened).toEqual(dev);
    // A plain object is not a list of Files: it crosses as it is, for the worker's `files` option.
    const file = new File(['{}'], 'config.json');
    void hrm.load({ kind: 'folder', files: [file], label: 'm' });
    expect(call(await w.request(1)).args).toMatchObject({ source: { kind: 'folder', label: 'm' } });
    const timed = hrm.timePass(16, { dtype: 'bf16' });
    const t = call(await w.request(2));
    expect(t.args).toEqual({ positions: 16, options: { dtype: 'bf16' } });
    w.reply({ type: 'result', id: t.id, value: 12.5 });
    expect(await timed).toBe(12.5);
    const synced = hrm.sync();
    const sy = call(await w.request(3));
    expect(sy).toMatchObject({ method: 'sync', args: {} });
    w.reply({ type: 'result', id: sy.id, value: null });
    expect(await synced).toBeUndefined();
  });

  it('arguments that cannot cross (a function) reject at the call and leave nothing pending', async () => {
    const { w, hrm } = setup();
    const err = await hrm.logits([1], { mask: (() => 'prefix') as never }).catch((e) => e);
    expect(err.name).toBe('DataCloneError');
    expect(w.received).toHaveLength(0);
    hrm.terminate(); // nothing pending: nothing else to reject
  });
});
