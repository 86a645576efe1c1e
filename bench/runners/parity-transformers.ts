// Parity with transformers at a model's full size on this device (issue 32): a model folder (tools/parity-1b/make.py:
// random weights of the HRM-Text-1B shape) and the reference.safetensors tools/train-embedded/reference.py wrote for
// it (transformers' HrmTextForCausalLM, f32 with TF32 off, and bf16), checked over the kernel paths this device
// runs, one model load each (RUNS): f32 activations against transformers f32; bf16 with the tensor cores' default
// schedule (staged tiles, split-K by rule, folded decode merge), then with the direct kernel split four ways, the
// separate decode merge, attention off the tensor cores and storage bindings cut to 128 MiB (the embedding and
// lm_head in row chunks; 128 MiB is the 512 x 65536 f32 logits, which one binding must hold); q8 / q4 KV caches
// and q8 / q4 weights against our own full-precision run (bench/harness/tf-parity.ts states each bound and why).
//   node parity-transformers.mjs --model DIR [--ref DIR] [--runs f32,bf16,...] [--steps 32] [--json FILE]
// Prints a Markdown list (one line per check, as bench/runners/parity.ts) and writes { passed, failed, checks } to
// --json; exits 1 if a check fails. bench/h200.sh runs it on every H200 run where python has transformers.
import { existsSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Gpu } from '../../src/kernels/gpu.ts';
import type { DeviceOptions } from '../../src/gpu/device.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel } from '../../src/index.ts';
import type { ActDtype } from '../../src/hrm/cache.ts';
import type { QuantSpec } from '../../src/hrm/config.ts';
import { SafetensorsFile } from '../../src/io/safetensors.ts';
import { fileSource } from '../../src/io/sources.ts';
import { checkRun, type PromptOutputs, type TfCheck } from '../harness/tf-parity.ts';
import { checkLine } from '../harness/format.ts';

/** One kernel path: a Gpu's options, the activation dtype, weights dense or quantized (then held against `dense`). */
export interface PathRun {
  name: string;
  dtype: ActDtype;
  device?: DeviceOptions;
  quantize?: QuantSpec;
  /** Quantized KV caches also run on this path (bits). */
  caches?: number[];
  /** The run (dense weights, same dtype) a quantized-weights run is held against; it must run before. */
  dense?: string;
}

export const RUNS: readonly PathRun[] = [
  { name: 'f32', dtype: 'f32', caches: [8, 4] },
  { name: 'bf16', dtype: 'bf16', caches: [8, 4] },
  {
    name: 'bf16-direct-split4-separate-mlpfold-128MiB', dtype: 'bf16', device: {
      bindingLimit: 128 * 2 ** 20,
      kernels: {
        sgmat: { kernel: 'direct', splitK: 4 }, decodeMerge: 'separate', attentionTensorCores: false, decodeMlp: 'fold',
      },
    },
  },
  { name: 'bf16-q8-weights', dtype: 'bf16', quantize: { bits: 8, groupSize: 64 }, dense: 'bf16' },
  { name: 'bf16-q4-weights', dtype: 'bf16', quantize: { bits: 4, groupSize: 64 }, dense: 'bf16' },
];

export interface TfReport { passed: number; failed: number; checks: TfCheck[] }

export interface ParityOptions {
  model: string;
  /** The folder of reference.safetensors, and of exact.safetensors where there is one (default: model). */
  ref?: string;
  runs: readonly PathRun[];
  steps: number;
  prompts?: number[];
  requireLogits?: boolean;
  /** The Gpu of a run (default Gpu.create with its options); `own` says whether the runner destroys it. */
  gpu?: (run: PathRun) => Promise<{ gpu: Gpu; own: boolean }>;
  log?: (line: string) => void;
}

/** Every run's checks; a run that throws is one failed check naming it and the error. */
export async function transformersParity(o: ParityOptions): Promise<TfReport> {
  const dir = o.ref ?? o.model;
  const ref = await SafetensorsFile.open(fileSource(`${dir}/reference.safetensors`));
  const exactPath = `${dir}/exact.safetensors`;
  const exact = existsSync(exactPath) ? await SafetensorsFile.open(fileSource(exactPath)) : undefined;
  const outputs = new Map<string, PromptOutputs[]>();
  const checks: TfCheck[] = [];
  for (const run of o.runs) {
    const t0 = performance.now();
    const dense = run.dense === undefined ? undefined : outputs.get(run.dense);
    if (run.dense !== undefined && !dense) {
      const name = `${run.name}: needs its dense run '${run.dense}' before it in the runs`;
      checks.push({ name, figure: Infinity, bound: 0, ok: false });
      continue;
    }
    const { gpu, own } = await (o.gpu ?? (async (r) => ({ gpu: await Gpu.create(r.device), own: true })))(run);
    try {
      const lm = await loadModel(dirFiles(`${o.model}/`), { gpu, dtype: run.dtype, quantize: run.quantize });
      try {
        const mine: PromptOutputs[] = [];
        checks.push(...await checkRun(lm, ref, {
          name: run.name, dtype: run.dtype, caches: run.caches ?? [], weightBits: run.quantize?.bits, dense,
        }, { steps: o.steps, prompts: o.prompts, requireLogits: o.requireLogits ?? true, exact }, mine));
        outputs.set(run.name, mine);
      } finally {
        lm.model.dispose();
      }
    } catch (e) {
      const name = `${run.name}: ran (${(e as Error).message.split('\n')[0]})`;
      checks.push({ name, figure: Infinity, bound: 0, ok: false });
    } finally {
      if (own) gpu.destroy();
    }
    o.log?.(`[parity-transformers] ${run.name}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const failed = checks.filter((c) => !c.ok).length;
  return { passed: checks.length - failed, failed, checks };
}

const bound = (c: TfCheck) => (Number.isInteger(c.bound) ? String(c.bound) : c.bound.toExponential(2));

/** The Markdown list bench/runners/parity.ts prints, one line per check. */
export function markdown(r: TfReport, device: string): string {
  return [`Parity with transformers on ${device}: **${r.passed} passed, ${r.failed} failed**`,
    ...r.checks.map((c) => checkLine(c.ok, c.name, c.figure, bound(c))),
  ].join('\n');
}

async function main(): Promise<void> {
  const { values: v } = parseArgs({ options: {
    model: { type: 'string' }, ref: { type: 'string' }, runs: { type: 'string' },
    steps: { type: 'string', default: '32' }, json: { type: 'string' },
  } });
  if (!v.model) throw new Error('parity-transformers: --model DIR is required (a folder make.py wrote)');
  const names = v.runs?.split(',') ?? RUNS.map((r) => r.name);
  const unknown = names.find((n) => !RUNS.some((r) => r.name === n));
  if (unknown) {
    throw new Error(`parity-transformers: --runs '${unknown}' is none of ${RUNS.map((r) => r.name).join(', ')}`);
  }
  const steps = Number(v.steps);
  if (!Number.isInteger(steps) || steps < 1) {
    throw new Error(`parity-transformers: --steps '${v.steps}' must be an integer >= 1`);
  }
  const runs = RUNS.filter((r) => names.includes(r.name));
  let device = 'this device';
  const r = await transformersParity({ model: v.model, ref: v.ref, runs, steps, log: (l) => console.error(l),
    gpu: async (run) => {
      const gpu = await Gpu.create(run.device);
      device = gpu.summary.description || gpu.summary.vendor;
      return { gpu, own: true };
    } });
  console.log(markdown(r, device));
  // A failed check's figure may be Infinity, which JSON has no number for: written as the string "Infinity".
  const finite = (_: string, x: unknown) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : x);
  if (v.json) writeFileSync(v.json, JSON.stringify(r, finite, 1) + '\n');
  process.exit(r.failed ? 1 : 0);
}

if (/parity-transformers\.(ts|mjs)$/.test(process.argv[1] ?? '')) {
  main().catch((e) => { console.error((e as Error).message); process.exit(2); });
}
