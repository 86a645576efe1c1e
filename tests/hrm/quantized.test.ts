// Quantized HRM models (MLX's layout, quantize-on-load, hrm convert) on the tiny fixture: logits equal an f32 forward
// over the dequantized weights, greedy paths agree, a converted checkpoint reads back as quantize-on-load, decode
// replay still matches, and bad checkpoints fail naming the tensor or key.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { getGpu } from '../helpers/gpu.ts';
import { fixtureDir } from '../../testkit/helpers/model.ts';
import { expectBitExact } from '../helpers/quant-check.ts';
import { Gpu } from '../../src/kernels/gpu.ts';
import { FormatError, InputError } from '../../src/errors.ts';
import { Checkpoint, SafetensorsFile, decode, encodeSafetensors, readEntry,
  type TensorToWrite } from '../../src/io/safetensors.ts';
import { bytesSource } from '../../src/io/sources.ts';
import { dirFiles, type ModelFiles } from '../../src/hrm/files.ts';
import { loadModel, type LoadedModel } from '../../src/hrm/load.ts';
import { convertQuantized } from '../../src/hrm/convert.ts';
import { scaleRound } from '../../src/hrm/quantized.ts';
import type { QuantSpec } from '../../src/hrm/config.ts';
import { DecodeGraph } from '../../src/hrm/decode.ts';
import { dequantizeExact, quantizeRef } from '../../src/kernels/quant/quant.ref.ts';

const DIR = fixtureDir('hrm-tiny-a');
const IDS = [6, 12, 495, 7, 100, 33, 250, 9, 77, 401, 3];

/** A model folder held in memory. */
function memFiles(name: string, files: Record<string, string | Uint8Array>): ModelFiles {
  return {
    name,
    text: async (f) => (typeof files[f] === 'string' ? files[f] as string : null),
    bytes: async (f) => (files[f] instanceof Uint8Array ? bytesSource(f, files[f] as Uint8Array) : null),
  };
}

/** The fixture's tensors (values as f32 plus their dtype) and config. */
async function fixtureTensors() {
  const f = await SafetensorsFile.open(await dirFiles(DIR).bytes('model.safetensors') as never);
  const ck = await Checkpoint.fromFiles([f]);
  const out = new Map<string, { dtype: 'BF16' | 'F32'; shape: number[]; values: Float32Array }>();
  for (const n of ck.names) {
    const e = ck.entry(n);
    out.set(n, { dtype: e.dtype as 'BF16', shape: e.shape, values: decode(e, await readEntry(e)) as Float32Array });
  }
  return { tensors: out, config: (await dirFiles(DIR).text('config.json'))! };
}

/**
 * The fixture quantized on the CPU (quantizeRef: mx.quantize's Metal rules) as an MLX-layout checkpoint, and its
 * dense f32 twin holding the dequantized values (the f32 forward the quantized model must equal).
 */
async function builtCheckpoints(spec: QuantSpec, modules: Record<string, QuantSpec | false> = {}) {
  const { tensors, config } = await fixtureTensors();
  const quant: Record<string, TensorToWrite> = {}, twin: Record<string, TensorToWrite> = {};
  for (const [n, t] of tensors) {
    const m = n.slice(0, -'.weight'.length);
    if (!n.endsWith('.weight') || modules[m] === false) { quant[n] = twin[n] = { dtype: 'F32', shape: t.shape,
      data: t.values }; continue; }
    const [rows, cols] = t.shape;
    const s = modules[m] || spec;
    const q = quantizeRef(t.values, rows, cols, { bits: s.bits, groupSize: s.groupSize, round: scaleRound(t.dtype) });
    quant[n] = { dtype: 'U32', shape: [rows, (cols * s.bits) / 32], data: q.q };
    quant[`${m}.scales`] = { dtype: 'F32', shape: [rows, cols / s.groupSize], data: q.scales };
    quant[`${m}.biases`] = { dtype: 'F32', shape: [rows, cols / s.groupSize], data: q.biases };
    twin[n] = { dtype: 'F32', shape: t.shape,
      data: Float32Array.from(dequantizeExact(q.q, q.scales, q.biases, rows, cols, s.bits, s.groupSize)) };
  }
  const entries = Object.fromEntries(Object.entries(modules).map(([m, v]) => [m,
    v && { group_size: v.groupSize, bits: v.bits }]));
  const qConfig = JSON.stringify({ ...JSON.parse(config),
    quantization: { group_size: spec.groupSize, bits: spec.bits, ...entries } });
  return { quant, twin, config, qConfig };
}

async function logits(lm: LoadedModel, mask: 'prefix' | 'causal'): Promise<Float32Array> {
  const cache = lm.model.newCache({ capacity: IDS.length });
  const out = await lm.model.forward(IDS, cache, { mask }).readF32();
  cache.dispose();
  return out;
}

/** Greedy ids from a prefilled prompt, one forward per token. */
async function greedy(lm: LoadedModel, n: number): Promise<number[]> {
  const cache = lm.model.newCache({ capacity: IDS.length + n });
  let row = await lm.model.forward(IDS, cache, { mask: 'prefix', logits: 'last' }).readF32();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    out.push(row.indexOf(Math.max(...row)));
    row = await lm.model.forward([out[i]], cache, { mask: 'causal' }).readF32();
  }
  cache.dispose();
  return out;
}

describe('quantized HRM (tiny fixture)', () => {
  for (const spec of [{ bits: 4, groupSize: 64 }, { bits: 8, groupSize: 128 }]) {
    it(`q${spec.bits} g${spec.groupSize}: quantize-on-load is mx.quantize bit for bit, and its f32 logits equal the `
      + `dense twin's`, async () => {
      const gpu = await getGpu();
      const { quant, twin, config, qConfig } = await builtCheckpoints(spec);
      const onLoad = await loadModel(dirFiles(DIR), { gpu, dtype: 'f32', quantize: spec });
      // The GPU-quantized tensors are the CPU reference's (mx.quantize's Metal rules, bf16 scales).
      const w = onLoad.model.weights.H[1].gateUp;
      expectBitExact(await w.chunks[0].read(),
        quant['model.H_module.layers.1.mlp.gate_up_proj.weight'].data as Uint32Array, 'gate_up q');
      expect(w.quant!.scales[0].dtype).toBe('bf16');   // stored as a bf16 checkpoint holds them
      expectBitExact(await w.quant!.scales[0].read(),
        quant['model.H_module.layers.1.mlp.gate_up_proj.scales'].data as Float32Array, 'gate_up scales');
      const loaded = await loadModel(memFiles('mlx-layout',
        { 'config.json': qConfig, 'model.safetensors': encodeSafetensors(quant) }), { gpu, dtype: 'f32' });
      const dense = await loadModel(memFiles('twin',
        { 'config.json': config, 'model.safetensors': encodeSafetensors(twin) }), { gpu, dtype: 'f32' });
      for (const mask of ['prefix', 'causal'] as const) {
        const [a, b, ref] = [await logits(onLoad, mask), await logits(loaded, mask), await logits(dense, mask)];
        expectBitExact(a, b, `${mask}: quantize-on-load vs the MLX-layout checkpoint`);
        // Summation order only (f32 everywhere): the bound the f32 path keeps against MLX.
        const worst = a.reduce((m, v, i) => Math.max(m, Math.abs(v - ref[i])), 0);
        expect(worst, mask).toBeLessThan(2e-4);
      }
      expect(await greedy(onLoad, 8)).toEqual(await greedy(dense, 8));
      for (const lm of [onLoad, loaded, dense]) lm.model.dispose();
    });
  }

  it('mlx-lm\'s per-module entries: one module at 8 bits, lm_head left dense, logits as the dense twin\'s',
    async () => {
    const gpu = await getGpu();
    const M = 'model.H_module.layers.0.mlp.down_proj';
    const { quant, twin, config, qConfig } = await builtCheckpoints({ bits: 4, groupSize: 64 },
      { [M]: { bits: 8, groupSize: 32 }, lm_head: false });
    const lm = await loadModel(memFiles('mixed',
      { 'config.json': qConfig, 'model.safetensors': encodeSafetensors(quant) }), { gpu, dtype: 'f32' });
    const dense = await loadModel(memFiles('twin',
      { 'config.json': config, 'model.safetensors': encodeSafetensors(twin) }), { gpu, dtype: 'f32' });
    expect(lm.model.weights.H[0].down.quant).toMatchObject({ bits: 8, groupSize: 32 });
    expect(lm.model.weights.H[0].gateUp.quant).toMatchObject({ bits: 4, groupSize: 64 });
    expect(lm.model.weights.lmHead.quant).toBeUndefined();
    const [a, ref] = [await logits(lm, 'prefix'), await logits(dense, 'prefix')];
    expect(a.reduce((m, v, i) => Math.max(m, Math.abs(v - ref[i])), 0)).toBeLessThan(2e-4);
    lm.model.dispose();
    dense.model.dispose();
  });

  it('hrm convert writes MLX\'s layout that reads back as quantize-on-load (bf16 mode, bit for bit)', async () => {
    const gpu = await getGpu();
    const spec = { bits: 4, groupSize: 64 };
    const conv = await convertQuantized(gpu, dirFiles(DIR), spec);
    const f = await SafetensorsFile.open(bytesSource('converted', conv.safetensors));
    expect(f.entry('model.L_module.layers.0.attn.o_proj.weight')).toMatchObject({ dtype: 'U32', shape: [128, 16] });
    expect(f.entry('model.L_module.layers.0.attn.o_proj.scales')).toMatchObject({ dtype: 'BF16', shape: [128, 2] });
    expect(JSON.parse(conv.config).quantization).toEqual({ group_size: 64, bits: 4 });
    const back = await loadModel(memFiles('converted',
      { 'config.json': conv.config, 'model.safetensors': conv.safetensors }), { gpu, dtype: 'bf16' });
    const onLoad = await loadModel(dirFiles(DIR), { gpu, dtype: 'bf16', quantize: spec });
    expectBitExact(await logits(back, 'prefix'), await logits(onLoad, 'prefix'), 'converted vs quantize-on-load');
    back.model.dispose();
    onLoad.model.dispose();
  });

  it('weights larger than a binding are row-chunked: the same logits as unchunked', async () => {
    // Activations (logits [11, 512] f32) fit; the quantize-on-load f32 chunks of 64 rows set the packed chunks.
    const small = await Gpu.create({ bindingLimit: 32768 });
    const spec = { bits: 4, groupSize: 32 };
    const chunked = await loadModel(dirFiles(DIR), { gpu: small, dtype: 'bf16', quantize: spec });
    expect(chunked.model.weights.lmHead.chunks.length).toBeGreaterThan(1);
    const big = await loadModel(dirFiles(DIR), { gpu: await getGpu(), dtype: 'bf16', quantize: spec });
    expect(big.model.weights.lmHead.chunks.length).toBe(1);
    expectBitExact(await logits(chunked, 'prefix'), await logits(big, 'prefix'), 'chunked vs one chunk');
    small.destroy();
    big.model.dispose();
  });

  it('a replayed decode step equals the recorded one on a quantized model, greedy chains too', async () => {
    const lm = await loadModel(dirFiles(DIR),
      { gpu: await getGpu(), dtype: 'bf16', quantize: { bits: 4, groupSize: 64 } });
    const feed = [11, 300, 42, 17];
    const [a, b] = [lm.model.newCache({ capacity: IDS.length + feed.length }),
      lm.model.newCache({ capacity: IDS.length + feed.length })];
    for (const c of [a, b]) await lm.model.forward(IDS, c, { mask: 'prefix', logits: 'last' }).readF32();
    const g = DecodeGraph.tryBuild(lm.model, b, 'logits');
    if (!(g instanceof DecodeGraph)) throw new Error(`no graph: ${g.reason}`);
    for (const t of feed) {
      const want = await lm.model.forward([t], a, { mask: 'causal' }).readF32();
      g.feed(t);
      expect(await g.nextLogits()).toEqual(want);
    }
    g.dispose();
    // Greedy steps chained on the GPU pick what one forward per token picks.
    const [c, d] = [lm.model.newCache({ capacity: IDS.length + 6 }), lm.model.newCache({ capacity: IDS.length + 6 })];
    for (const x of [c, d]) await lm.model.forward(IDS, x, { mask: 'prefix', logits: 'last' }).readF32();
    const want: number[] = [];
    for (let i = 0, tok = feed[0]; i < 5; i++) {
      const row = await lm.model.forward([tok], c, { mask: 'causal' }).readF32();
      want.push((tok = row.indexOf(Math.max(...row))));
    }
    const chain = DecodeGraph.tryBuild(lm.model, d, 'greedy');
    if (!(chain instanceof DecodeGraph)) throw new Error(`no graph: ${chain.reason}`);
    chain.feed(feed[0]);
    expect(await Promise.all(want.map(() => chain.next()))).toEqual(want);
    chain.dispose();
    for (const x of [a, b, c, d]) x.dispose();
    lm.model.dispose();
  });
});

describe('quantized checkpoints with bad input', { timeout: 120_000 }, () => {
  const M = 'model.L_module.layers.0.mlp.down_proj';
  const cases: Array<[string, (t: Record<string, TensorToWrite>, c: Record<string, unknown>) => void, RegExp]> = [
    ['missing scales', (t) => { delete t[`${M}.scales`]; }, new RegExp(`missing tensor '${M}.scales'`)],
    ['missing biases', (t) => { delete t[`${M}.biases`]; }, new RegExp(`missing tensor '${M}.biases'`)],
    ['packed at other bits than the config says', (_t, c) => { c.quantization = { group_size: 64, bits: 8 }; },
      /tensor '.*\.weight' is U32 \[\d+, \d+\]; 8-bit/],
    ['scales of another group size', (_t, c) => { c.quantization = { group_size: 32, bits: 4 }; },
      /'.*\.scales' is F32 \[\d+, \d+\]; group size 32/],
    ['bits MLX does not offer', (_t, c) => { c.quantization = { group_size: 64, bits: 7 }; },
      /quantization: bits 7 is not one MLX offers/],
    ['a group size MLX does not offer', (_t, c) => { c.quantization = { group_size: 48, bits: 4 }; },
      /quantization: group_size 48 is not one MLX offers/],
    ['no quantization block', (_t, c) => { delete c.quantization; },
      /is quantized but config.json has no 'quantization' block/],
    ['a per-module entry for a module stored dense', (t, c) => {
      t[`${M}.weight`] = { dtype: 'F32', shape: [128, 256], data: new Float32Array(128 * 256) };
      delete t[`${M}.scales`]; delete t[`${M}.biases`];
      c.quantization = { group_size: 64, bits: 4, [M]: { group_size: 64, bits: 8 } };
    }, new RegExp(`quantization.${M} says 8 bits, group 64, but the checkpoint has no '${M}.scales'`)],
    ['a quantization block over a dense checkpoint', (t, c) => {
      for (const n of Object.keys(t)) if (n.endsWith('.scales') || n.endsWith('.biases')) delete t[n];
      for (const n of Object.keys(t)) if (t[n].dtype === 'U32') t[n] = { dtype: 'F32',
        shape: [t[n].shape[0],
        (t[n].shape[1] * 32) / 4], data: new Float32Array((t[n].data as Uint32Array).length * 8) };
      c.quantization = { group_size: 64, bits: 4 };
    }, /has a quantization block \(4 bits, group 64\) but no module of the checkpoint is quantized/],
    ['a module marked unquantized', (_t, c) => { c.quantization = { group_size: 64, bits: 4, [M]: false }; },
      new RegExp(`quantization.${M} is false`)],
  ];
  for (const [what, edit, want] of cases) {
    it(`${what}: a FormatError naming it`, async () => {
      const { quant, qConfig } = await builtCheckpoints({ bits: 4, groupSize: 64 });
      const c = JSON.parse(qConfig) as Record<string, unknown>;
      edit(quant, c);
      const files = memFiles('bad',
        { 'config.json': JSON.stringify(c), 'model.safetensors': encodeSafetensors(quant) });
      const err = await loadModel(files, { gpu: await getGpu() }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(FormatError);
      expect(String((err as Error).message)).toMatch(want);
    });
  }

  it('a quantize option MLX does not offer is an InputError', async () => {
    await expect(loadModel(dirFiles(DIR),
      { gpu: await getGpu(), quantize: { bits: 5, groupSize: 16 } })).rejects.toThrow(InputError);
  });
});

describe('hrm CLI with quantized weights', () => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const hrm = (args: string[]) => promisify(execFile)(join(root, 'node_modules/.bin/tsx'), ['src/cli/hrm.ts', ...args],
    { cwd: root, timeout: 300_000 });
  const read = async (p: string) => (await SafetensorsFile.open(bytesSource(p,
    new Uint8Array(readFileSync(p))))).array('logits');

  it('convert, then logits of the converted folder equal --quantize on load; info reports the quantized size',
    async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hrm-q-'));
    await hrm(['convert', '--model', DIR, '--out', join(dir, 'q8'), '--quantize', '8', '--q-group-size', '128']);
    const ids = IDS.join(',');
    await hrm(['logits', '--model', join(dir, 'q8'), '--ids', ids, '--out', join(dir, 'a.safetensors')]);
    await hrm(['logits', '--model', DIR, '--ids', ids, '--quantize', '8', '--q-group-size', '128', '--out',
      join(dir, 'b.safetensors')]);
    expectBitExact(await read(join(dir, 'a.safetensors')), await read(join(dir, 'b.safetensors')),
      'converted vs --quantize');
    // 8 bits a value plus two bf16 per 128 values, z_L_init in f32: (1 + 4 / 128) bytes per matrix parameter.
    const c = JSON.parse(readFileSync(join(DIR, 'config.json'), 'utf8')) as { hidden_size: number };
    const { stdout } = await hrm(['info', '--model', join(dir, 'q8')]);
    const m = stdout.match(/weights\s+q8 group 128 \(as stored\): ([\d.]+) MiB/);
    expect(m, stdout).not.toBeNull();
    const params = Number(stdout.match(/parameters\s+([\d.]+) M/)![1]) * 1e6;
    expect(Number(m![1])).toBeCloseTo(((params - c.hidden_size) * (1 + 4 / 128) + 4 * c.hidden_size) / 2 ** 20, 1);
    await expect(hrm(['info', '--quantize', '3'])).rejects.toThrow(/--quantize must be one of 4, 8/);
  });
});
