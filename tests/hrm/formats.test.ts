// Checkpoint formats through the real loader: sharded (index.json), the seed converter's model_mlx.safetensors
// (no z_L_init), and f32 / f16 tensors, all rebuilt from the tiny-a fixture.
import { describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SafetensorsFile, encodeSafetensors, type TensorToWrite } from '../../src/io/safetensors.ts';
import { fileSource } from '../../src/io/sources.ts';
import { packHalf } from '../../src/tensor/dtype.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { BROWN, FIXTURES } from '../../testkit/helpers/fixtures.ts';
import { getGpu } from '../helpers/gpu.ts';
import { expectClose } from '../helpers/close.ts';
import { fixture } from '../../testkit/helpers/fixtures.ts';
import { logitsOf } from '../../testkit/helpers/model.ts';

const SRC = FIXTURES + 'hrm-tiny-a/';

async function tensors(conv: 'BF16' | 'F32' | 'F16', drop: string[] = []): Promise<Record<string, TensorToWrite>> {
  const f = await SafetensorsFile.open(fileSource(SRC + 'model.safetensors'));
  const out: Record<string, TensorToWrite> = {};
  for (const n of f.names) {
    if (drop.includes(n)) continue;
    const e = f.entry(n);
    const v = (await f.array(n)) as Float32Array;
    out[n] = conv === 'BF16' ? { dtype: 'BF16', shape: e.shape, data: await f.bytes(n) }
      : conv === 'F32' ? { dtype: 'F32', shape: e.shape, data: v } : { dtype: 'F16', shape: e.shape,
        data: packHalf('f16', v).subarray(0, v.length) };
  }
  return out;
}

function folder(): string {
  const d = mkdtempSync(join(tmpdir(), 'hrm-ck-'));
  cpSync(SRC + 'config.json', join(d, 'config.json'));
  return d;
}

describe('checkpoint formats', () => {
  it('a sharded f32 checkpoint gives the bf16 checkpoint\'s logits (bf16 widens to f32 exactly)', async () => {
    const gpu = await getGpu();
    const all = await tensors('F32');
    const names = Object.keys(all).sort();
    const d = folder();
    const half = Math.ceil(names.length / 2);
    const shards = [names.slice(0, half), names.slice(half)];
    const weightMap: Record<string, string> = {};
    shards.forEach((part, i) => {
      const file = `model-0000${i + 1}-of-00002.safetensors`;
      writeFileSync(join(d, file), encodeSafetensors(Object.fromEntries(part.map((n) => [n, all[n]]))));
      for (const n of part) weightMap[n] = file;
    });
    writeFileSync(join(d, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
    const ids = [...await (await fixture('hrm-tiny-a/reference.safetensors')).array('prompt_ids')];
    const sharded = await loadModel(dirFiles(d), { gpu, dtype: 'f32' });
    expect(sharded.checkpoint).toMatch(/2 shards/);
    const original = await loadModel(dirFiles(SRC), { gpu, dtype: 'f32' });
    // Same values; f32 and bf16 weights take differently vectorised kernel variants, so only summation order differs.
    expectClose(await logitsOf(sharded, ids, 'prefix'), await logitsOf(original, ids, 'prefix'), 1e-5, 0,
      'sharded f32 logits');
    sharded.model.dispose();
    original.model.dispose();
  });

  it('model_mlx.safetensors (no z_L_init) loads with z_L zeros; f16 tensors load and stay close', async () => {
    const gpu = await getGpu();
    const ids = [...await (await fixture('hrm-tiny-a/reference.safetensors')).array('prompt_ids')];
    const original = await loadModel(dirFiles(SRC), { gpu, dtype: 'f32' });
    const want = await logitsOf(original, ids, 'prefix');
    const mlxDir = folder();
    writeFileSync(join(mlxDir, 'model_mlx.safetensors'), encodeSafetensors(await tensors('BF16', ['model.z_L_init'])));
    const mlx = await loadModel(dirFiles(mlxDir), { gpu, dtype: 'f32' });
    expect(mlx.checkpoint).toMatch(/model_mlx\.safetensors$/);
    expect([...mlx.model.weights.zLInit].every((x) => x === 0)).toBe(true);
    const noInit = await logitsOf(mlx, ids, 'prefix');
    expect(noInit.some((x, i) => Math.abs(x - want[i]) > 1e-3)).toBe(true); // z_L_init matters
    const f16Dir = folder();
    writeFileSync(join(f16Dir, 'model.safetensors'), encodeSafetensors(await tensors('F16')));
    const f16 = await loadModel(dirFiles(f16Dir), { gpu, dtype: 'f32' });
    expect(f16.model.weights.L[0].gqkv.dtype).toBe('f16');
    // bf16 values re-rounded to f16 (11-bit mantissa, these weights are far from f16's range limits): logits move
    // by the f16 rounding of each weight, well under 1e-2 on logits of magnitude ~5.
    expectClose(await logitsOf(f16, ids, 'prefix'), want, 1e-2, 0, 'f16 checkpoint logits');
    for (const m of [original, mlx, f16]) m.model.dispose();
  });

  it('a folder without config.json, or with a truncated checkpoint, is a clear error', async () => {
    const gpu = await getGpu();
    await expect(loadModel(dirFiles(mkdtempSync(join(tmpdir(), 'hrm-empty-'))),
      { gpu })).rejects.toThrow(/no config\.json/);
    const d = folder();
    const bytes = readFileSync(SRC + 'model.safetensors');
    writeFileSync(join(d, 'model.safetensors'), bytes.subarray(0, bytes.length - 1000));
    await expect(loadModel(dirFiles(d), { gpu })).rejects
      .toThrow(/model\.safetensors: tensor '[^']+': data ends at byte \d+, past the end of the file .*truncated/);
  });

  it('trusts num_layers_per_stack over a stale num_hidden_layers when the tensors agree, and refuses what they '
    + 'contradict', async () => {
    const gpu = await getGpu();
    const SRC_B = FIXTURES + 'hrm-tiny-b/';
    const config = JSON.parse(readFileSync(SRC_B + 'config.json', 'utf8'));
    const stale = mkdtempSync(join(tmpdir(), 'hrm-stale-'));
    cpSync(SRC_B + 'model.safetensors', join(stale, 'model.safetensors'));
    writeFileSync(join(stale, 'config.json'), JSON.stringify({ ...config, num_hidden_layers: 12 }));
    const warnings: string[] = [];
    const lm = await loadModel(dirFiles(stale), { gpu, warn: (m) => warnings.push(m) });
    expect(warnings).toEqual([`${stale}/config.json: num_hidden_layers 12 is neither num_layers_per_stack 2 nor ` +
      'num_layers_per_stack * H_cycles * (L_cycles + 1) = 16; using num_layers_per_stack 2']);
    const ids = [...await (await fixture('hrm-tiny-b/reference.safetensors')).array('prompt_ids')];
    const want = await (await fixture('hrm-tiny-b/reference.safetensors')).array('f32.prefix_logits');
    expectClose(await logitsOf(lm, ids, 'prefix'), want, 2e-4, 0, 'stale config logits');
    lm.model.dispose();
    writeFileSync(join(stale, 'config.json'),
      JSON.stringify({ ...config, num_layers_per_stack: 3, num_hidden_layers: 12 }));
    await expect(loadModel(dirFiles(stale), { gpu, warn: () => {} }))
      .rejects.toThrow(/the L stack has 2 layers in the tensors but the config says 3 per stack/);
  });

  it('a broken index.json or a tokenizer of another model names the file', async () => {
    const gpu = await getGpu();
    const d = folder();
    writeFileSync(join(d, 'model.safetensors.index.json'), '{"weight_map": {"a": ');
    await expect(loadModel(dirFiles(d),
      { gpu })).rejects.toThrow(new RegExp(`^\\[load\\] ${d}/model\\.safetensors\\.index\\.json: not valid JSON \\(`));
    writeFileSync(join(d, 'model.safetensors.index.json'), '{"weight_map": ["model.safetensors"]}');
    await expect(loadModel(dirFiles(d), { gpu })).rejects
      .toThrow(`${d}/model.safetensors.index.json: 'weight_map' must be an object of tensor name -> file name`);
    const t = folder();
    cpSync(BROWN + 'tokenizer.json', join(t, 'tokenizer.json')); // 2048 ids; tiny-a has 512
    await expect(loadModel(dirFiles(t), { gpu })).rejects
      .toThrow(new RegExp(`${t}/tokenizer\\.json: token "[^"]+" has id \\d+, outside the model's vocab_size 512`));
  });
});
