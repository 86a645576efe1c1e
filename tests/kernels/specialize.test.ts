// Override values written into the WGSL (kernels/specialize.ts, what Deno's wgpu gets): the text transform, its
// errors, and the same bits as pipeline constants for the kernel naga panicked on (gemv_wide) and a whole forward
// of the embedded model, in Node and in Deno.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { specialize } from '../../src/kernels/specialize.ts';
import { ShapeError } from '../../src/errors.ts';
import { N, outputBits, PROMPT } from '../helpers/specialized-bits.ts';

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

describe('specialized pipelines give the same bits as pipeline constants', () => {
  it('in Node (Dawn): gemv_wide and a forward of the embedded model', async () => {
    const plain = await outputBits(false, true);
    const special = await outputBits(true, true);
    expect(plain.map((a) => a.length)).toEqual([N, N / 2, PROMPT.length * 2048]);
    for (let i = 0; i < plain.length; i++) expect(special[i], `output ${i}`).toEqual(plain[i]);
  }, 120_000);

  it('in Deno (wgpu): a forward of the embedded model', async () => {
    const deno = fileURLToPath(new URL('../../node_modules/.bin/deno', import.meta.url));
    const opts = { cwd: fileURLToPath(new URL('../..', import.meta.url)), timeout: 110_000 };
    const { stdout } = await promisify(execFile)(deno, ['run', '-A', 'tests/runtimes/deno-specialize.ts'], opts);
    const r = JSON.parse(stdout.trim().split('\n').pop()!) as { n: number; same: boolean; firstDiff: number };
    expect(r.n).toBe(PROMPT.length * 2048);
    expect(r, `first differing logit ${r.firstDiff}`).toMatchObject({ same: true });
  }, 120_000);
});
