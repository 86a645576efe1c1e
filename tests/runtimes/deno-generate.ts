// Deno entry of the generation smoke test: the embedded model, greedy, prints the ids and text as one JSON line.
import { Gpu } from '../../src/kernels/gpu.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { generate } from '../../src/hrm/generate.ts';

const gpu = await Gpu.create();
const lm = await loadModel(dirFiles(new URL('../fixtures/hrm-text-brown-6m', import.meta.url).pathname),
  { gpu, dtype: 'f32' });
let text = '';
let ids: number[] = [];
for await (const ev of generate(lm, 'The jury said', { condition: 'noisy', maxTokens: 6 })) {
  if (ev.type === 'text') text += ev.text; else ids = ev.stats.ids;
}
console.log(JSON.stringify({ runtime: gpu.summary.runtime, ids, text }));
gpu.destroy();
