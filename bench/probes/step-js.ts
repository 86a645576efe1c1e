// What a replayed decode step costs JavaScript, per KV-cache kind (issue 30: "JS a decode step (replayed)", full 5.9
// ms, q8 7.7, q4 4.7 on the H200). The JavaScript of recording a step does not depend on the GPU, so it is timed on
// any adapter, a CPU driver included (its GPU times mean nothing). Per cache: the captured step's structure (what a
// replay calls: dispatches, pipeline changes, bind groups and their bindings, uploads, patched words), and per step
// the wall time of DecodeGraph.next() returning (bench/suites/model.ts's "JS ms a step"), of replay() alone, and of
// replay()'s parts (uploads, encoding, submit), each with the GPU idle before it, so that a CPU driver's threads do
// not run beside the timed JavaScript. The caches take turns step by step: a host's speed drifts over a run (on the
// H200 a replayed dispatch cost 4-6 us of JavaScript in some stretches of a bench run and 7-10 in others, whatever
// the cache), and caches timed one after the other would each meet another stretch.
// `npx tsx bench/probes/step-js.ts [--config 1b|tiny] [--steps N] [--prompt N] [--caches full,q8,q4] [--gpu-paths]`
// (N rounds: each form of each cache once a round); one JSON line per cache: medians, least values, and the median
// ratio to each other cache within a round. The 1B shape takes ~1 minute a round on lavapipe; tiny, under a second.
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { type Dispatch, type Upload } from '../../src/gpu/gpu.ts';
import { Gpu } from '../../src/kernels/gpu.ts';
import { replay } from '../../src/gpu/capture.ts';
import { HRM_TEXT_1B, parseConfig } from '../../src/hrm/config.ts';
import { HrmModel } from '../../src/hrm/model.ts';
import { DecodeGraph } from '../../src/hrm/decode.ts';
import { randomWeights } from '../../testkit/hrm/random-weights.ts';
import { CACHES, type CacheName } from '../harness/settings.ts';
import { promptIds } from '../suites/model-figures.ts';
import { now, stats } from '../timing/stats.ts';

const { values: o } = parseArgs({
  options: {
    config: { type: 'string', default: '1b' }, steps: { type: 'string', default: '40' },
    prompt: { type: 'string', default: '8' }, caches: { type: 'string', default: 'full,q8,q4' },
    'gpu-paths': { type: 'boolean', default: false },
  },
});
const steps = Number(o.steps), prompt = Number(o.prompt);
const config = o.config === 'tiny'
  ? parseConfig(JSON.parse(readFileSync('models/hrm-text-brown-10m/config.json', 'utf8')), 'brown-10m')
  : HRM_TEXT_1B;
const gpu = await Gpu.create();
// On a CPU driver the kernels take barrier-free variants, a step of other dispatches than a GPU's; --gpu-paths
// plans the GPU's kernels instead, so that the step replayed is the one the H200 replays (gpu.cpu is readonly to
// the library, which reads it when planning).
if (o['gpu-paths']) (gpu as { cpu: boolean }).cpu = false;
const t0 = now();
const model = new HrmModel(gpu, config, await randomWeights(gpu, config, 1), 'bf16');
await gpu.sync();
const took = (since: number) => `${((now() - since) / 1000).toFixed(1)} s`;
console.error(`[step-js] ${o.config} random weights in ${took(t0)} on ${gpu.summary.description}`);

/** What the graph replays: its fields are private to DecodeGraph; the probe reads them to describe the step. */
interface Replayed { dispatches: Dispatch[]; uploads: Upload[]; patches: unknown[] }

/** What one replay of the step calls, counted from the captured dispatches and uploads. */
function structure(r: Replayed) {
  let pipelineChanges = 0, bindings = 0, last: GPUComputePipeline | null = null;
  for (const d of r.dispatches) {
    if (d.pipeline !== last) pipelineChanges++;
    last = d.pipeline;
    bindings += d.key.split(',').length - 1;
  }
  const labels = new Map<string, number>();
  for (const d of r.dispatches) labels.set(d.label, (labels.get(d.label) ?? 0) + 1);
  return {
    dispatches: r.dispatches.length, pipelineChanges, pipelines: new Set(r.dispatches.map((d) => d.pipeline)).size,
    bindGroups: new Set(r.dispatches.map((d) => d.bindGroup)).size,
    bindingsPerDispatch: +(bindings / r.dispatches.length).toFixed(2), uploads: r.uploads.length,
    uploadBytes: r.uploads.reduce((n, u) => n + u.data.byteLength, 0), patchedWords: r.patches.length,
    labels: Object.fromEntries(labels),
  };
}

/** replay()'s calls, each part timed (ms): the uploads, the pass encoded and finished, the submit. */
function parts(r: Replayed): { upload: number; encode: number; submit: number } {
  const device = gpu.device;
  const a = now();
  for (const u of r.uploads) device.queue.writeBuffer(u.buffer, u.offset, u.data);
  const b = now();
  const enc = device.createCommandEncoder({ label: 'replay' });
  const pass = enc.beginComputePass({ label: 'replay' });
  let last: GPUComputePipeline | null = null;
  for (let i = 0; i < r.dispatches.length; i++) {
    const d = r.dispatches[i];
    if (d.pipeline !== last) pass.setPipeline((last = d.pipeline));
    pass.setBindGroup(0, d.bindGroup);
    pass.dispatchWorkgroups(d.workgroups[0], d.workgroups[1], d.workgroups[2]);
  }
  pass.end();
  const cb = enc.finish();
  const c = now();
  device.queue.submit([cb]);
  return { upload: b - a, encode: c - b, submit: now() - c };
}

const med = (xs: number[]) => +stats(xs).median.toFixed(3);
const least = (xs: number[]) => +Math.min(...xs).toFixed(3);
/** Median over rounds of a's time over b's in the same round: the comparison that the machine's drift spares. */
const paired = (a: number[], b: number[]) => +stats(a.map((v, i) => v / b[i])).median.toFixed(3);
/** One cache's graph and its samples (ms a step): next() returning, replay() alone, replay()'s parts and their sum. */
interface Samples {
  next: number[]; rep: number[]; upload: number[]; encode: number[]; submit: number[]; parts: number[];
}
interface Run extends Samples { name: CacheName; graph: DecodeGraph; r: Replayed }
const runs: Run[] = [];
for (const name of String(o.caches).split(',') as CacheName[]) {
  const cache = model.newCache({ capacity: prompt + steps + 8, kv: CACHES[name], mode: 'after-prefill' });
  await model.forward(promptIds(prompt, config.vocab_size, 1), cache, { mask: 'prefix', logits: 'last' }).readF32();
  const graph = DecodeGraph.tryBuild(model, cache, 'greedy', cache.capacity);   // one graph over every step
  if (!(graph instanceof DecodeGraph)) throw new Error(`[step-js] ${name}: not replayed: ${graph.reason}`);
  graph.feed(1);
  runs.push({ name, graph, r: graph as unknown as Replayed, next: [], rep: [], upload: [], encode: [], submit: [],
    parts: [] });
}
// Each form of each cache once a round, in an order shuffled anew every round, so that every cache meets the
// machine's load alike and no form always follows the same one (on lavapipe the step after the full cache's ran
// ~30 % slower, whichever cache it was). replay() and the parts write the cache's next position again (only
// JavaScript is timed); next() advances it.
const forms = runs.flatMap((x) => [
  async () => { const a = now(); const p = x.graph.next(); x.next.push(now() - a); await p; },
  async () => { const a = now(); const p = replay(gpu, x.r.dispatches, x.r.uploads); x.rep.push(now() - a); await p; },
  async () => {
    const t = parts(x.r);
    x.upload.push(t.upload); x.encode.push(t.encode); x.submit.push(t.submit); x.parts.push(t.upload +
      t.encode + t.submit);
  },
]);
let seed = 12345;
const random = (n: number) => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) % n;
const t1 = now();
for (let i = 0; i < steps; i++) {
  const order = forms.map((_, f) => f);
  for (let f = order.length - 1; f > 0; f--) {
    const j = random(f + 1);
    [order[f], order[j]] = [order[j], order[f]];
  }
  for (const f of order) {
    await gpu.sync();
    await forms[f]();
  }
  if (i === 0) console.error(`[step-js] a round of ${forms.length} steps in ${took(t1)}`);
}
await gpu.sync();
for (const x of runs) {
  const n = x.graph.size;
  const others = runs.filter((y) => y !== x);
  const vs = (k: keyof Samples) => Object.fromEntries(others.map((y) => [y.name, paired(x[k], y[k])]));
  console.log(JSON.stringify({
    config: o.config, gpuPaths: o['gpu-paths'], cache: x.name, steps, nextMs: med(x.next),
    usPerDispatch: +((med(x.next) * 1000) / n).toFixed(2), replayMs: med(x.rep),
    parts: {
      uploadMs: med(x.upload), encodeMs: med(x.encode), submitMs: med(x.submit),
      encodeUsPerDispatch: +((med(x.encode) * 1000) / n).toFixed(2),
      submitUsPerDispatch: +((med(x.submit) * 1000) / n).toFixed(2),
    },
    // The least of each: the work itself, where other processes share the machine (the CPU driver's host).
    min: { nextMs: least(x.next), replayMs: least(x.rep), partsMs: least(x.parts) },
    nextMsQuartiles: [+stats(x.next).q1.toFixed(3), +stats(x.next).q3.toFixed(3)],
    paired: { next: vs('next'), replay: vs('rep'), parts: vs('parts') }, ...structure(x.r),
  }));
}
process.exit(0);
