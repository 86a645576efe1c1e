import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parseConfig } from '../../src/hrm/config.ts';
import { disposeWeights, loadWeights, uploadWeight, validateCheckpoint } from '../../src/hrm/weights.ts';
import { randomWeights } from '../../testkit/hrm/random-weights.ts';
import { Checkpoint, SafetensorsFile, encodeSafetensors } from '../../src/io/safetensors.ts';
import { bytesSource, fileSource } from '../../src/io/sources.ts';
import { Gpu } from '../../src/kernels/gpu.ts';
import { FormatError } from '../../src/errors.ts';
import { randomValueRef } from '../../testkit/init/random.ref.ts';
import { roundBf16 } from '../../src/tensor/dtype.ts';
import { FIXTURES } from '../../testkit/helpers/fixtures.ts';
import { getGpu } from '../helpers/gpu.ts';

const tinyA = async () => {
  const config = parseConfig(JSON.parse(readFileSync(FIXTURES + 'hrm-tiny-a/config.json', 'utf8')));
  const file = await SafetensorsFile.open(fileSource(FIXTURES + 'hrm-tiny-a/model.safetensors'));
  return { config, file, ck: await Checkpoint.fromFiles([file]) };
};

describe('weights', () => {
  it('loads a checkpoint with z_L_init and every tensor as stored', async () => {
    const gpu = await getGpu();
    const { config, file, ck } = await tinyA();
    let last = 0;
    const w = await loadWeights(gpu, ck, config, { onProgress: (l) => { last = l; } });
    expect(last).toBe(ck.bytes);
    expect(w.L.length).toBe(2);
    expect([...w.zLInit]).toEqual([...await file.array('model.z_L_init')]);
    expect(w.zLInit.some((x) => x !== 0)).toBe(true);
    const got = await w.L[1].gqkv.chunks[0].read();
    expect([...got]).toEqual([...await file.array('model.L_module.layers.1.attn.gqkv_proj.weight')]);
  });

  it('lists missing, mis-shaped and unexpected tensors and a wrong per-stack count', async () => {
    const { config, file } = await tinyA();
    const all: Record<string, { dtype: 'BF16'; shape: number[]; data: Uint8Array }> = {};
    for (const n of file.names) all[n] = { dtype: 'BF16', shape: file.entry(n).shape, data: await file.bytes(n) };
    const { ['model.H_module.layers.0.attn.o_proj.weight']: _drop, ...missing } = all;
    const open = async (t: typeof all) =>
      Checkpoint.fromFiles([await SafetensorsFile.open(bytesSource('ck.safetensors', encodeSafetensors(t)))]);
    await expect((async () => validateCheckpoint(await open(missing), config,
      'ck.safetensors'))()).rejects
      .toThrow(/missing tensor 'model\.H_module\.layers\.0\.attn\.o_proj\.weight' \[128, 128\]/);
    const extra = { ...all, 'model.rotary.inv_freq': { dtype: 'BF16' as const, shape: [2], data: new Uint8Array(4) } };
    await expect((async () => validateCheckpoint(await open(extra), config,
      'ck'))()).rejects.toThrow(/unexpected tensor\(s\): model\.rotary\.inv_freq/);
    const threeLayers = parseConfig({ ...JSON.parse(readFileSync(FIXTURES + 'hrm-tiny-a/config.json', 'utf8')),
      num_hidden_layers: 3 });
    await expect((async () => validateCheckpoint(await open(all), threeLayers,
      'ck'))()).rejects.toThrow(/the L stack has 2 layers in the tensors but the config says 3/);
    const bent = { ...all,
      'lm_head.weight': { dtype: 'BF16' as const, shape: [128, 512], data: all['lm_head.weight'].data } };
    await expect((async () => validateCheckpoint(await open(bent), config,
      'ck'))()).rejects.toThrow(/'lm_head\.weight' has shape \[128, 512\], expected \[512, 128\]/);
  });

  it('names each tensor holding NaN or Inf and where the first one is; checkFinite: false skips the scan', async () => {
    const gpu = await getGpu();
    const { config, file } = await tinyA();
    const all: Record<string, { dtype: 'BF16'; shape: number[]; data: Uint8Array }> = {};
    for (const n of file.names) all[n] = { dtype: 'BF16', shape: file.entry(n).shape,
      data: (await file.bytes(n)).slice() };
    const setBits = (name: string, index: number,
      bits: number) => new DataView(all[name].data.buffer).setUint16(2 * index, bits, true);
    const gqkv = 'model.H_module.layers.1.attn.gqkv_proj.weight'; // [512, 128]
    setBits(gqkv, 3 * 128 + 5, 0x7fc0); // NaN at [3, 5]
    setBits(gqkv, 400 * 128, 0xff80); // -Inf at [400, 0]
    setBits('lm_head.weight', 511 * 128 + 127, 0x7f80); // +Inf at the very last element
    setBits('model.z_L_init', 4, 0x7f80); // z_L_init is read on the CPU
    const ck = await Checkpoint.fromFiles([await SafetensorsFile.open(bytesSource('nan.safetensors',
      encodeSafetensors(all)))]);
    const err = await loadWeights(gpu, ck, config, { where: 'nan.safetensors' }).then(() => null, (e: Error) => e);
    expect(err).toBeInstanceOf(FormatError);
    expect(err!.message).toBe("[checkpoint] nan.safetensors: tensor 'lm_head.weight' holds 1 NaN/Inf value, " +
      `the first at [511, 127]; tensor '${gqkv}' holds 2 NaN/Inf values, the first at [3, 5]; ` +
      "tensor 'model.z_L_init' holds 1 NaN/Inf value, the first at [0, 4] " +
      '(load with checkFinite: false to skip this check)');
    const w = await loadWeights(gpu, ck, config, { checkFinite: false });
    expect((await w.H[1].gqkv.chunks[0].read())[3 * 128 + 5]).toBeNaN();
    disposeWeights(w);
  });

  it('finds a NaN in the second row chunk of a split tensor at its row in the whole tensor', async () => {
    // 128 bf16 rows of 256 bytes a chunk: lm_head [512, 128] in 4
    const gpu = await Gpu.create({ bindingLimit: 32768 });
    const { config, file } = await tinyA();
    const all: Record<string, { dtype: 'BF16'; shape: number[]; data: Uint8Array }> = {};
    for (const n of file.names) all[n] = { dtype: 'BF16', shape: file.entry(n).shape,
      data: (await file.bytes(n)).slice() };
    new DataView(all['lm_head.weight'].data.buffer).setUint16(2 * (200 * 128 + 9), 0x7fc1, true);
    const ck = await Checkpoint.fromFiles([await SafetensorsFile.open(bytesSource('nan.safetensors',
      encodeSafetensors(all)))]);
    await expect(loadWeights(gpu, ck, config,
      { where: 'ck' })).rejects
      .toThrow(/^\[checkpoint\] ck: tensor 'lm_head\.weight' holds 1 NaN\/Inf value, the first at \[200, 9\] /);
    gpu.destroy();
  });

  it('splits a tensor larger than one binding into row chunks that hold the same bytes', async () => {
    const gpu = await Gpu.create({ bindingLimit: 4096 });
    const rows = 50, cols = 64; // 128 bytes a bf16 row: 32 rows a chunk
    const bytes = new Uint8Array(rows * cols * 2).map((_, i) => (i * 7) & 0xff);
    const w = uploadWeight(gpu, 'big', bytes, rows, cols, 'bf16');
    expect(w.chunks.map((c) => c.shape[0])).toEqual([32, 18]);
    const back = new Uint8Array(rows * cols * 2);
    let o = 0;
    for (const c of w.chunks) {
      const raw = new Uint8Array(await gpu.read(c.binding('test')));
      back.set(raw, o);
      o += raw.byteLength;
    }
    expect(back).toEqual(bytes);
    gpu.destroy();
  });

  it('makes random bf16 weights on the GPU from the documented generator', async () => {
    const gpu = await getGpu();
    const c = parseConfig(JSON.parse(readFileSync(FIXTURES + 'hrm-tiny-a/config.json', 'utf8')));
    const w = await randomWeights(gpu, c, 3);
    const got = await w.L[0].o.chunks[0].read();
    const seed = 3 * 1000003 + 3; // fill order: embed 0, lm_head 1, L.0.gqkv 2, L.0.o 3
    for (const i of [0, 1, 2, 1000,
      got.length - 1]) expect(got[i]).toBe(roundBf16(randomValueRef(i, seed, 1 / Math.sqrt(128))));
  });
});
