// Option keys a call does not know are refused, naming the key and where it belongs (issue 42, item 4): written as
// transformers.js, WebLLM or mlx-lm users write them, they used to be ignored, and a user who asked for sampling got
// greedy text. Each call checks before any work, so no GPU is needed here; the worker's calls revive the error as
// the same class on the page's side (a real WorkerHandler over a MessageChannel, no model loaded).
import { describe, expect, it } from 'vitest';
import { generate, generateText, type GenerateModel } from '../../src/hrm/generate.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { runRefract } from '../../src/refract/runner.ts';
import { HrmWorkerClient, type WorkerPort } from '../../src/worker/client.ts';
import { WorkerHandler } from '../../src/worker/handler.ts';
import { UnknownOptionError } from '../../src/errors.ts';
import { FakeBackend } from '../refract/fake-backend.ts';

// Never reached: the options are refused first.
const lm = {} as GenerateModel;
const first = (o: object) => generate(lm, 'The jury said', o as never).next();

describe('unknown option keys', () => {
  it('generate names the key and where it belongs', async () => {
    const cases: Array<[object, RegExp]> = [
      [{ temperature: 0.8 }, /\[generate\] unknown option 'temperature' in the options \(it belongs in sampler\.temp/],
      [{ topP: 0.9 }, /'topP'.*sampler\.topP/],
      [{ top_p: 0.9 }, /'top_p'.*sampler\.topP/],
      [{ kv: 'ctk=q8_0,ctv=q8_0' }, /'kv'.*cache\.kv/],
      [{ max_new_tokens: 20 }, /'max_new_tokens'.*maxTokens/],
      [{ maxTokens: 4, sampler: { temperature: 0.5, top_p: 0.9 } }, /'top_p' in sampler \(it is topP\)/],
      [{ cache: { kv: 'q8_0', bits: 8 } }, /'bits' in cache \(known: kv, mode\)/],
      [{ maxToken: 4 }, /'maxToken' in the options \(known: condition, maxTokens, stop, signal/],
    ];
    for (const [opts, message] of cases) {
      const e = await first(opts).catch((x: unknown) => x);
      expect(e, JSON.stringify(opts)).toBeInstanceOf(UnknownOptionError);
      expect((e as Error).message).toMatch(message);
    }
    // Known keys pass the check (and reach the model, which this fake does not have).
    const known = first({ maxTokens: 4, sampler: { temperature: 0.5 } });
    await expect(known).rejects.not.toBeInstanceOf(UnknownOptionError);
    // A key left undefined asks for nothing: a wrapper may forward its optional fields as they are.
    await expect(first({ maxTokens: 4, top_p: undefined })).rejects.not.toBeInstanceOf(UnknownOptionError);
  });

  it('generateText takes onText, and refuses what generate refuses', async () => {
    const hot = generateText(lm, 'x', { temperature: 0.8 } as never);
    await expect(hot).rejects.toThrow(/\[generateText\] unknown option 'temperature'/);
    await expect(generateText(lm, 'x', { onText: () => {} })).rejects.not.toBeInstanceOf(UnknownOptionError);
    await expect(first({ onText: () => {} })).rejects.toThrow(/'onText'.*generateText's/);
  });

  it('loadModel and runRefract refuse before loading or running anything', async () => {
    await expect(loadModel(undefined, { onProgress: () => {} } as never))
      .rejects.toThrow(/\[loadModel\] unknown option 'onProgress' in the options \(it is progressCallback\)/);
    await expect(loadModel(undefined, { kv: 'q8_0' } as never)).rejects.toBeInstanceOf(UnknownOptionError);
    const backend = new FakeBackend();
    const run = (o: object) => runRefract({ backend, model: 'fake', candidate: 'ctk=q8_0,ctv=q8_0', ...o } as never);
    await expect(run({ n_predict: 8 }))
      .rejects.toThrow(/\[refract\] unknown option 'n_predict' in the options \(it is nPred/);
    await expect(run({ axes: { niah: true } })).rejects.toThrow(/'niah' in axes \(known: rniah, plad\)/);
    expect(backend.calls).toEqual({ completion: 0, trajectory: 0, kld: 0, tokenize: 0 });
  });

  it('the worker client gets the same error, named, with no model loaded', async () => {
    const { port1, port2 } = new MessageChannel();
    const handler = new WorkerHandler((reply, transfer) => port1.postMessage(reply, transfer ?? []));
    port1.onmessage = (ev) => handler.onmessage(ev);
    const client = new HrmWorkerClient(port2 as unknown as WorkerPort);
    port2.start();
    try {
      const gen = client.generateText('x', { temperature: 0.8 } as never);
      await expect(gen).rejects.toBeInstanceOf(UnknownOptionError);
      await expect(client.generateText('x', { top_p: 0.8 } as never)).rejects.toThrow(/'top_p'.*sampler\.topP/);
      const refract = client.runRefract({ candidate: 'q8_0', skip_kld: true } as never);
      await expect(refract).rejects.toThrow(/'skip_kld'.*skipKld/);
      const load = client.load(undefined, { kv: 'q8_0' } as never);
      await expect(load).rejects.toThrow(/\[loadModel\] unknown option 'kv'/);
    } finally {
      port1.close(); port2.close();
    }
  });
});
