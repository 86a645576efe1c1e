// Deno entry of the worker test (deno.test.ts): the embedded model in a Deno Web Worker (e2e.worker.ts, the browser
// test's worker script) through HrmWorkerClient, and on this thread; prints one JSON line to compare.
import { HrmWorkerClient, type WorkerPort } from '../../src/worker/index.ts';
import { generate, loadModel, logits } from '../../src/index.ts';
import type { GenerateEvent } from '../../src/worker/protocol.ts';

const ids = async (it: AsyncIterable<GenerateEvent>) => {
  for await (const ev of it) if (ev.type === 'done') return { ids: ev.stats.ids, stopReason: ev.stats.stopReason };
  throw new Error('no done event');
};
const w = new Worker(new URL('./e2e.worker.ts', import.meta.url).href, { type: 'module' });
const hrm = new HrmWorkerClient(w as unknown as WorkerPort);
const info = await hrm.load();
const opts = { condition: 'noisy', maxTokens: 6 };
const worker = await ids(hrm.generate('The jury said', opts));
const lm = await loadModel();
const main = await ids(generate(lm, 'The jury said', opts));
const prompt = lm.tokenizer!.encode('The jury said that the city');
const [a, b] = [await logits(lm, prompt), await hrm.logits(prompt)];
const bits = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);
const same = a.length === b.length && bits(a).every((w, i) => w === bits(b)[i]);
console.log(JSON.stringify({ runtime: info.adapter.runtime, worker, main, logits: { length: b.length, same } }));
hrm.terminate();
lm.model.gpu.destroy();
