// Override values written into the WGSL (tensor/specialize.ts, what Deno's wgpu gets): the text transform, its
// errors, and the same bits as pipeline constants on this adapter for the kernel naga panicked on (gemv_wide) and a
// whole forward of the embedded model.
import { afterEach, describe, expect, it } from 'vitest';
import { specialize, specializes } from '../../src/tensor/specialize.ts';
import { ShapeError } from '../../src/tensor/errors.ts';
import { Gpu } from '../../src/tensor/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { matmul } from '../../src/kernels/matmul/matmul.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { randn } from '../helpers/seeded.ts';
import { BROWN } from '../helpers/fixtures.ts';

// gemv_wide's operands: 256 bf16 a row are 32 16-byte units, one per lane of a 32-lane row group.
const K = 256, N = 64;

const SRC = [
  'override WG: u32 = 64u;',
  'override NORM: bool = false;',
  'override SCALE: f32 = 0.5;',
  '// an override named in a comment stays as it is',
  'var<workgroup> red: array<f32, WG * 2u>;',
].join('\n');

describe('specialize: overrides as consts in the source', () => {
  it('writes the given values and keeps the defaults of the others', () => {
    const out = specialize(SRC, { WG: 32, NORM: 1 }, 'k');
    const want = ['const WG: u32 = 32u;', 'const NORM: bool = true;', 'const SCALE: f32 = 0.5;'];
    expect(out.split('\n').slice(0, 3)).toEqual(want);
    expect(out.split('\n').slice(3)).toEqual(SRC.split('\n').slice(3));
  });

  it('converts values as WebGPU converts pipeline constants', () => {
    const line = (v: Record<string, number>, i: number) => specialize(SRC, v, 'k').split('\n')[i];
    expect(line({ NORM: 0 }, 1)).toBe('const NORM: bool = false;');
    expect(line({ NORM: NaN }, 1)).toBe('const NORM: bool = false;');
    expect(line({ NORM: -2 }, 1)).toBe('const NORM: bool = true;');
    // 0.1 rounds to the f32 0.100000001490116...; its shortest decimal reads back as the same f32.
    expect(line({ SCALE: 0.1 }, 2)).toBe(`const SCALE: f32 = ${Math.fround(0.1)}f;`);
    expect(Math.fround(Number(String(Math.fround(0.1))))).toBe(Math.fround(0.1));
    expect(line({ SCALE: -0 }, 2)).toBe('const SCALE: f32 = -0.0f;');
  });

  it('rejects what it cannot write, naming the kernel and the override', () => {
    expect(() => specialize(SRC, { WG: 1.5 }, 'k')).toThrow(ShapeError);
    expect(() => specialize(SRC, { WG: 1.5 }, 'k')).toThrow("[k] override 'WG' = 1.5 is not a valid u32");
    expect(() => specialize(SRC, { WG: -1 }, 'k')).toThrow("[k] override 'WG' = -1 is not a valid u32");
    expect(() => specialize(SRC, { SCALE: 1e39 }, 'k')).toThrow("[k] override 'SCALE' = 1e+39 is out of the range");
    expect(() => specialize(SRC, { MB: 2 }, 'k')).toThrow('[k] unknown override(s) MB');
    expect(() => specialize('override H: f16 = 1.0h;', { H: 1 }, 'k')).toThrow("[k] override 'H' = 1 has type f16");
    expect(() => specialize('@id(3) override X: u32 = 1u;', {}, 'k'))
      .toThrow("[k] cannot specialize the override declaration '@id(3) override X: u32 = 1u;'");
  });
});

describe('specialized pipelines on this adapter', () => {
  afterEach(() => { specializes(null); });

  /** Bits of gemv_wide's products (with its norm, and with swiglu) and of the embedded model's bf16 logits. */
  async function run(special: boolean): Promise<Uint32Array[]> {
    specializes(special);
    const gpu = await Gpu.create();
    try {
      const x = Tensor.from(gpu, randn(1, K), [1, K], 'f32', 'x');
      const w = Tensor.from(gpu, randn(2, N * K, 0.1), [N, K], 'bf16', 'w');
      const gemv = { kernel: 'wide' as const, wg: 32, groups: 4, rows: 16 };
      const out: Uint32Array[] = [];
      for (const swiglu of [false, true]) {
        const y = matmul(x, w, { path: 'gemv', gemv, norm: { eps: 1e-6 }, swiglu, round: 'bf16' });
        out.push(new Uint32Array((await y.readF32()).buffer));
      }
      const lm = await loadModel(gpu, dirFiles(BROWN), { dtype: 'bf16' });
      const cache = lm.model.newCache({ capacity: 8, kv: { k: 8, v: 4 } });
      const logits = lm.model.forward([6, 40, 41, 42, 43, 44, 45], cache, { mask: 'prefix' });
      out.push(new Uint32Array((await logits.readF32()).buffer));
      return out;
    } finally {
      gpu.destroy();
    }
  }

  it('give the same bits as pipeline constants', async () => {
    const plain = await run(false);
    const special = await run(true);
    expect(plain.map((a) => a.length)).toEqual([N, N / 2, 7 * 2048]);
    for (let i = 0; i < plain.length; i++) expect(special[i], `output ${i}`).toEqual(plain[i]);
  }, 120_000);
});
