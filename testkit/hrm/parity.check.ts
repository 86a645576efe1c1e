// End-to-end parity with MLX (tests/hrm/parity.test.ts's core cases) runnable without vitest, so that the GPU
// machine checks every path its adapter takes (bench/parity.ts, in bench/h200.sh): CPU drivers, where the tests run,
// take other kernels (rows matmuls, the sdpa_prefill loop) than a GPU (matrix-vector kernels with subgroups, prefill
// attention as matmuls, the decode append fused into attention). Same bounds as the test.
import { dirFiles, type ModelFiles } from '../../src/hrm/files.ts';
import { loadModel, type LoadedModel } from '../../src/hrm/load.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { SafetensorsFile } from '../../src/io/safetensors.ts';
import { fileSource, type ByteSource } from '../../src/io/sources.ts';
import { logitsOf, meanKl, teacherForced } from '../helpers/model.ts';

export interface ParityCase { name: string; value: number; bound: number; ok: boolean }
export interface ParityReport { cases: ParityCase[]; passed: number; failed: number }

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = a.length === b.length ? 0 : Infinity;
  for (let i = 0; i < a.length; i++) m = Math.max(m,
    Math.abs(a[i] - b[i]) || (Number.isNaN(a[i] - b[i]) ? Infinity : 0));
  return m;
};

export const PARITY_FIXTURES = ['hrm-tiny-a', 'hrm-tiny-b'] as const;

/** How the fixtures under `root` are opened: files (Node, Deno) by default, URLs in a page (bench/page.ts). */
export interface FixtureOpener { source: (path: string) => ByteSource; files: (dir: string) => ModelFiles }
const FILES: FixtureOpener = { source: fileSource, files: dirFiles };

/**
 * The MLX fixtures under `root` (tests/fixtures/mlx/): f32 logits within 2e-4 (MLX's f32 logits agree with
 * transformers to 3e-6; ours differ in summation order and RoPE's sin/cos), greedy ids equal, bf16 mean KL <= 1e-4
 * (MLX's own bf16-vs-f32 KL is 3e-5..5e-5; two bf16 implementations differing in one rounding point reach 5.8e-5).
 */
export async function checkModelParity(gpu: Gpu, root: string, open = FILES): Promise<ParityReport> {
  const cases: ParityCase[] = [];
  for (const name of PARITY_FIXTURES) cases.push(...await checkFixtureParity(gpu, root, name, open));
  const failed = cases.filter((c) => !c.ok).length;
  return { cases, passed: cases.length - failed, failed };
}

/** One fixture's cases (see checkModelParity). */
export async function checkFixtureParity(gpu: Gpu, root: string, name: string, open = FILES): Promise<ParityCase[]> {
  const cases: ParityCase[] = [];
  const add = (what: string, value: number,
    bound: number) => cases.push({ name: `${name} ${what}`, value, bound, ok: value <= bound });
  const ref = await SafetensorsFile.open(open.source(`${root}${name}/reference.safetensors`));
  const ints = async (k: string) => [...await ref.array(k)];
  const f32s = async (k: string) => (await ref.array(k)) as Float32Array;
  const ids = await ints('prompt_ids');
  for (const dtype of ['f32', 'bf16'] as const) {
    const lm: LoadedModel = await loadModel(open.files(`${root}${name}/`), { gpu, dtype });
    try {
      for (const mask of ['prefix', 'causal'] as const) {
        const got = await logitsOf(lm, ids, mask);
        if (dtype === 'f32') add(`f32 ${mask} logits, max |diff|`,
          maxDiff(got, await f32s(`f32.${mask}_logits`)), 2e-4);
        else add(`bf16 ${mask} logits, mean KL`,
          meanKl(await f32s(`bf16.${mask}_logits`), got, lm.config.vocab_size), 1e-4);
      }
      if (dtype === 'f32') {
        const gen = await ints('f32.gen_ids');
        const { logits, picks } = await teacherForced(lm, ids, gen);
        add('f32 greedy ids differing', picks.filter((p, i) => p !== gen[i]).length, 0);
        add('f32 teacher-forced decode logits, max |diff|', maxDiff(logits, await f32s('f32.gen_logits')), 2e-4);
      }
    } finally {
      lm.model.dispose();
    }
  }
  return cases;
}
