import { Gpu } from './src/gpu/gpu.ts';
import { HrmModel } from './src/hrm/model.ts';
import { randomWeights } from './src/hrm/weights.ts';
import { DecodeGraph } from './src/hrm/decode.ts';
import { parseConfig } from './src/hrm/config.ts';
import tiny from './models/hrm-text-brown-6m/config.json' with { type: 'json' };
const gpu = await Gpu.create();
const c = parseConfig(tiny, 'x');
const w = await randomWeights(gpu, c, 1);
const m = new HrmModel(gpu, c, w, 'bf16');
for (const kv of [{ k: null, v: null }, { k: 8, v: 8 }, { k: 4, v: 4 }]) {
  const cache = m.newCache({ capacity: 64, kv, mode: 'after-prefill' });
  const l = m.forward([1, 2, 3, 4], cache, { mask: 'prefix' }); await l.read(); l.dispose();
  const l2 = m.forward([5], cache, { mask: 'causal', logits: 'last' }); await l2.read(); l2.dispose();
  const g = DecodeGraph.tryBuild(m, cache, 'greedy') as any;
  if (g.reason) { console.log(kv, g.reason); continue; }
  const ups = g.uploads as { data: Uint8Array; buffer: GPUBuffer }[];
  const pipes = new Set(g.dispatches.map((d: any) => d.pipeline)).size;
  let switches = 0; let last = null; for (const d of g.dispatches) { if (d.pipeline !== last) switches++; last = d.pipeline; }
  console.log(JSON.stringify(kv), 'dispatches', g.dispatches.length, 'uploads', ups.length, 'bytes', ups.reduce((a, u) => a + u.data.byteLength, 0), 'patches', g.patches.length, 'pipelines', pipes, 'switches', switches);
  const labels: Record<string, number> = {}; for (const d of g.dispatches) labels[d.label] = (labels[d.label] ?? 0) + 1; console.log(labels);
  // time the JS of replay (no waiting)
  for (let i = 0; i < 3; i++) { await g.next(); }
  const t0 = performance.now(); const ps = []; for (let i = 0; i < 20; i++) ps.push(g.next());
  const t1 = performance.now(); await Promise.all(ps);
  console.log('JS per step ms', ((t1 - t0) / 20).toFixed(3), 'per dispatch us', ((t1 - t0) / 20 / g.dispatches.length * 1000).toFixed(2));
  g.dispose(); cache.dispose();
}
gpu.destroy(); process.exit(0);
