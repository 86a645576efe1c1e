// Quantized weights next to bf16: prefill and decode tok/s of the model with random bf16, q8 and q4 (group 64)
// weights made on the GPU, the full-precision KV cache, and the memory the weights plus a 4096-token cache need.
// Node/Dawn: `npx tsx bench/runners/qweights.ts [--config tiny|1b] [--quick] [--ctx N]` (on CPU-only machines:
// --config tiny --quick).
// Prints a markdown table; the harness's figures (ModelBench) are reused unchanged.
import { parseArgs } from 'node:util';
import { Gpu } from '../../src/gpu/gpu.ts';
import { HrmModel } from '../../src/hrm/model.ts';
import { cacheBytes } from '../../src/hrm/cache.ts';
import { parameterCount, type QuantSpec } from '../../src/hrm/config.ts';
import { disposeWeights, randomWeights } from '../../src/hrm/weights.ts';
import { benchConfig } from '../harness/harness.ts';
import { ModelBench } from '../suites/model.ts';
import { modelInfo } from '../suites/model-figures.ts';
import { defaults, type ConfigName } from '../harness/settings.ts';
import { now } from '../timing/stats.ts';

const { values: v } = parseArgs({
  options: { config: { type: 'string' }, quick: { type: 'boolean' }, ctx: { type: 'string' } },
});
const config = (v.config ?? 'tiny') as ConfigName;
if (config !== 'tiny' && config !== '1b') {
  throw new Error(`--config must be tiny or 1b (got ${JSON.stringify(v.config)})`);
}
const s = { ...defaults(config, Boolean(v.quick)), caches: ['full' as const] };
const ctx = Number(v.ctx ?? 4096);
const { name, config: c } = benchConfig(s);
const gpu = await Gpu.create();
const info = modelInfo(name, c, parameterCount(c));
const MiB = 2 ** 20;
const rows: string[] = [];
const kinds: Array<[string, QuantSpec | undefined]> =
  [['bf16', undefined], ['q8 g64', { bits: 8, groupSize: 64 }], ['q4 g64', { bits: 4, groupSize: 64 }]];
for (const [label, quant] of kinds) {
  const weights = await randomWeights(gpu, c, s.seed, quant);
  const t0 = now();
  const clock = { left: () => s.budget - (now() - t0) / 1000 };
  const log = (m: string) => process.stderr.write(`${label}: ${m}\n`);
  const bench = new ModelBench(gpu, new HrmModel(gpu, c, weights, s.dtype), info, s, clock, log);
  try {
    const r = await bench.run('full', null);
    const prefill = r.prefill.map((p) => `${p.tokens}: ${p.tokPerS.median.toFixed(1)}`).join(', ');
    const decode = r.decode ? r.decode.tokPerS.median.toFixed(2) : `- (${r.errors.concat(r.skipped).join('; ')})`;
    const mem = weights.bytes + cacheBytes(c, ctx, s.dtype, { k: null, v: null });
    const mib = (b: number) => (b / MiB).toFixed(1);
    rows.push(`| ${label} | ${mib(weights.bytes)} | ${prefill} | ${decode} | ${mib(mem)} |`);
  } finally {
    disposeWeights(weights);
  }
}
const adapter = `${gpu.summary.description || gpu.summary.vendor} (${gpu.summary.runtime})`;
process.stdout.write(`${name}, ${s.dtype} activations, full KV cache, ${adapter}\n\n` +
  '| weights | MiB on the GPU | prefill tok/s (tokens: median) | ' +
  `decode tok/s (${s.prompt}-token prompt) | weights + ${ctx}-token cache, MiB |\n|---|---|---|---|---|\n` +
  `${rows.join('\n')}\n`);
gpu.destroy();
process.exit(0);
