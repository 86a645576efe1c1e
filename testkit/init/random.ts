// Fill tensors with seeded uniform random values on the GPU (no upload): for the 1B-shape benchmarks and tests. Not in
// the package: its WGSL is generated into testkit/shaders.gen.ts (scripts/gen-wgsl.mjs).
import { SHADERS } from '../shaders.gen.ts';
import { Kernel, grid } from '../../src/kernels/kernel.ts';
import { DTypeError, ShapeError } from '../../src/errors.ts';
import type { Tensor } from '../../src/tensor/tensor.ts';

const FILL_BF16 = new Kernel('init/random.wgsl', 'fill_bf16', 'fill_bf16', SHADERS);
const FILL_F32 = new Kernel('init/random.wgsl', 'fill_f32', 'fill_f32', SHADERS);

/** t[i] = scale * (2u - 1) with u uniform in [0, 1) from a hash of (seed, i); bf16 values rounded to nearest even. */
export function fillRandom(t: Tensor, { seed, scale }: { seed: number; scale: number }): void {
  if (t.dtype === 'bf16') {
    if (t.size % 2) throw new ShapeError('fillRandom',
      `'${t.label}' has an odd element count ${t.size}; bf16 fills whole words`);
    const n = t.size / 2;
    FILL_BF16.dispatch(t.gpu,
      { bindings: { out: t }, uniforms: { n, seed: seed >>> 0, scale }, workgroups: grid(t.gpu, n, 256),
      label: `fill ${t.label}` });
  } else if (t.dtype === 'f32') {
    FILL_F32.dispatch(t.gpu,
      { bindings: { out: t }, uniforms: { n: t.size, seed: seed >>> 0, scale }, workgroups: grid(t.gpu, t.size, 256),
      label: `fill ${t.label}` });
  } else {
    throw new DTypeError('fillRandom', `'${t.label}' is ${t.dtype}; bf16 or f32 only`);
  }
}
