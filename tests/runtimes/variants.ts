// Deno entry of the pipeline-variant sweep (variants.test.ts): creates, on this adapter, every pipeline the GPU
// paths use, so that none reaches a user untranslated (naga panicked on two on an H200: kernels/specialize.ts).
// The variants come from the code itself, in two steps:
//  1. Trace: the model's paths run with Kernel.dispatch only noting (kernel, overrides): nothing executes, but
//     every wrapper picks its kernel and overrides as it would. Forced where this adapter allows: the GPU kernels
//     and the CPU drivers' barrier-free ones (Gpu.cpu), with and without shader-f16, each decode merge (MERGES)
//     and decode MLP (MLPS), paired: they choose kernels of their own.
//     Shapes: HRM-Text-1B's layers (one per stack; the layer count changes no shape) and the embedded model's, with
//     bf16/q8/q4 weights, f32/bf16 activations, the bench's CACHES, and the bench's prompts (prefill 128
//     and 512, a decode step after each) plus a 3-token one (the few-row matrix-vector and decode-attention paths).
//     Where the adapter has shader-f16, matmulF16 too (f16 activations: the bench's f16 GEMV rows) over those
//     layers' dense weights, each output form. Subgroup kernels are traced only where the adapter has subgroups
//     (the wrappers choose them then).
//  2. Create: each traced variant, and each kernel the loaded modules made (allKernels) with its defaults, through
//     createComputePipelineAsync in an error scope of its own (Kernel.pipelineDescriptor: as a dispatch would).
// A kernel whose WGSL enables a feature this device lacks is not created but listed as unavailable. Not traced:
// the benchmark's forced shapes (bench/suites/gemv.ts: --sweep-gemv's shapes); their kernels are created here.
// Prints one JSON line: { adapter, features, created, failed, unavailable, unmade, traced, traceMs, ms }.
import { readdirSync, readFileSync, writeSync } from 'node:fs';
import { Gpu } from '../../src/kernels/gpu.ts';
import { allKernels, Kernel, overrideKey, type DispatchArgs, type Overrides } from '../../src/kernels/kernel.ts';
import { HrmModel } from '../../src/hrm/model.ts';
import { HRM_TEXT_1B, parseConfig, type HrmConfig, type QuantSpec } from '../../src/hrm/config.ts';
import { EMBEDDED_MODEL } from '../../src/hrm/files.ts';
import { disposeWeights, type HrmWeights } from '../../src/hrm/weights.ts';
import { randomWeights } from '../../testkit/hrm/random-weights.ts';
import { matmulF16, type MatmulF16Options } from '../../src/kernels/matmul/matmul-f16.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { argmaxRows } from '../../src/kernels/ops/ops.ts';
import { kernelPolicy, MERGES, MLPS } from '../../src/kernels/plan/options.ts';
import { CACHES } from '../../bench/harness/settings.ts';
import { SHADERS } from '../../src/kernels/shaders.gen.ts';
import { runtimeSpecializes } from '../../src/kernels/specialize.ts';

// Every kernel module (the wrappers make their Kernels at load), so that allKernels() lists every entry in use.
const kernelsDir = new URL('../../src/kernels/', import.meta.url);
for (const dir of readdirSync(kernelsDir, { withFileTypes: true }).filter((d) => d.isDirectory())) {
  for (const f of readdirSync(new URL(`${dir.name}/`, kernelsDir))) {
    if (f.endsWith('.ts') && !f.endsWith('.ref.ts')) await import(new URL(`${dir.name}/${f}`, kernelsDir).href);
  }
}

const t0 = performance.now();
const gpu = await Gpu.create();
const device = gpu.device;
const embeddedConfig = new URL(`../../models/${EMBEDDED_MODEL}/config.json`, import.meta.url);
const embedded = parseConfig(JSON.parse(readFileSync(embeddedConfig, 'utf8')));
const CONFIGS: HrmConfig[] = [{ ...HRM_TEXT_1B, num_layers_per_stack: 1 }, { ...embedded, num_layers_per_stack: 1 }];
const WEIGHTS: Array<QuantSpec | undefined> = [undefined, { bits: 8, groupSize: 64 }, { bits: 4, groupSize: 64 }];
const PROMPTS = [3, 128, 512];
const F16_OUTPUTS: MatmulF16Options[] = [{ out: 'f16' }, { out: 'f32' }, { out: 'f32', round: 'bf16' }];

/** A prefill of each prompt length and a decode step after it, with each of the bench's caches. */
function traceModel(model: HrmModel): void {
  const c = model.config;
  for (const kv of Object.values(CACHES)) {
    for (const n of PROMPTS.filter((p) => p < c.max_position_embeddings)) {
      const cache = model.newCache({ capacity: n + 1, kv });
      const ids = Array.from({ length: n }, (_, i) => (i * 7) % c.vocab_size);
      model.forward(ids, cache, { mask: 'prefix', logits: 'last' }).dispose();
      const logits = model.forward([1], cache, { mask: 'causal', logits: 'last' });
      argmaxRows(logits).dispose();
      logits.dispose();
      cache.dispose();
    }
  }
}

/** matmulF16 (f16 activations: the API and the bench's f16 GEMV rows) over a layer's dense weights, each output. */
function traceF16(weights: HrmWeights): void {
  const layer = weights.L[0];
  for (const w of [layer.gqkv, layer.o, layer.gateUp, layer.down]) {
    if (w.quant) continue;
    for (const M of [1, ...PROMPTS]) {
      const x = Tensor.empty(gpu, [M, w.cols], 'f16', 'x');
      for (const opts of F16_OUTPUTS) matmulF16(x, w.chunks, opts).dispose();
      x.dispose();
    }
  }
}

// ---- 1. trace -------------------------------------------------------------------------------------------------
const traced = new Map<string, { kernel: Kernel; overrides: Overrides }>();
const dispatch = Kernel.prototype.dispatch;
Kernel.prototype.dispatch = function (this: Kernel, _gpu: Gpu, args: DispatchArgs) {
  const overrides = { ...args.overrides };
  traced.set(`${this.file}#${this.entry}{${overrideKey(overrides)}}`, { kernel: this, overrides });
};
const flags = gpu as unknown as { cpu: boolean; f16: boolean };
const policy = kernelPolicy(gpu);
const hasF16 = gpu.f16;
const choices = { cpu: [false, true], f16: hasF16 ? [true, false] : [false], merge: MERGES };
for (const c of CONFIGS) {
  for (const quant of WEIGHTS) {
    const weights = await randomWeights(gpu, c, 0, quant);
    for (const cpu of choices.cpu) {
      for (const f16 of choices.f16) {
        for (const merge of choices.merge) {
          Object.assign(flags, { cpu, f16 });
          // As the flags: a trace, one device for every choice.
          Object.assign(policy, { decodeMerge: merge, decodeMlp: MLPS[MERGES.indexOf(merge)] });
          for (const dtype of ['f32', 'bf16'] as const) traceModel(new HrmModel(gpu, c, weights, dtype));
        }
      }
    }
    if (hasF16) {
      Object.assign(flags, { cpu: false, f16: true });
      traceF16(weights);
    }
    disposeWeights(weights);
  }
}
Kernel.prototype.dispatch = dispatch;
const traceMs = Math.round(performance.now() - t0);
await gpu.flush('variant trace');

// ---- 2. create ------------------------------------------------------------------------------------------------
const variants = [...traced.values()];
for (const kernel of allKernels()) {
  const key = `${kernel.file}#${kernel.entry}{}`;
  if (!traced.has(key)) variants.push({ kernel, overrides: {} });
}
/** The features a kernel's WGSL enables that this device lacks ('enable f16;' is shader-f16). */
function missing(k: Kernel): string[] {
  const wanted = [...k.source.matchAll(/^enable\s+([\w, ]+);/gm)].flatMap((m) => m[1].split(',').map((s) => s.trim()));
  const feature = (e: string) => (e === 'f16' ? 'shader-f16' : e);
  return wanted.map(feature).filter((f) => !device.features.has(f));
}
const failed: string[] = [];
const unavailable = new Map<string, string[]>();
let created = 0;
const unrolled = new Set<string>();
// One at a time, each named on stderr first: a translator that panics (naga did) ends the process, and the last
// line then names the variant (the test prints it).
for (const { kernel, overrides } of variants) {
  const name = `${kernel.file}#${kernel.entry}{${overrideKey(overrides)}}`;
  const lacks = missing(kernel);
  if (lacks.length) {
    unavailable.set(`${kernel.file}#${kernel.entry}`, lacks);
    continue;
  }
  writeSync(2, `creating ${name}\n`);
  device.pushErrorScope('validation');
  const made = device.createComputePipelineAsync(kernel.pipelineDescriptor(device, overrides))
    .then(() => null, (e: Error) => e.message);
  const scoped = device.popErrorScope();
  const problem = (await made) ?? (await scoped)?.message ?? null;
  if (problem) failed.push(`${name}: ${problem.split('\n').filter(Boolean).slice(0, 3).join(' | ')}`);
  else created++;
  // What a GPU (not this CPU driver) compiles under naga: the loops unrolled (kernels/unroll.ts). Only the module is
  // made (naga's validation): a CPU driver compiling the unrolled pipelines would take minutes for nothing.
  const code = kernel.moduleCode(overrides, name, { specialize: runtimeSpecializes(), unroll: true });
  if (unrolled.has(code)) continue;
  unrolled.add(code);
  device.pushErrorScope('validation');
  device.createShaderModule({ code, label: `${name} unrolled` });
  const bad = await device.popErrorScope();
  if (bad) failed.push(`${name} unrolled: ${bad.message.split('\n').filter(Boolean).slice(0, 3).join(' | ')}`);
}
// Entry points in the shaders that no loaded module made a Kernel for: the sweep would not see their variants.
const made = new Set(allKernels().map((k) => `${k.file}#${k.entry}`));
const unmade = Object.entries(SHADERS)
  .flatMap(([file, src]) => [...src.matchAll(/@compute\b[^{]*?\bfn\s+(\w+)/g)].map((m) => `${file}#${m[1]}`))
  .filter((e) => !made.has(e));
console.log(JSON.stringify({
  adapter: gpu.summary.description ||
    gpu.summary.vendor, features: gpu.summary.features, created, unrolled: unrolled.size,
  failed: failed.sort(), unavailable: Object.fromEntries([...unavailable].sort()), unmade,
  traced: [...traced.keys()].sort(), traceMs, ms: Math.round(performance.now() - t0),
}));
gpu.destroy();
