// How a device's shader modules are written (kernel.ts makes them): with the overrides as pipeline constants, or
// written into the source for naga (specialize.ts), its constant-trip loops unrolled on GPUs (unroll.ts); per Gpu by
// its options (DeviceOptions.kernels.specialize, .unroll), else as its runtime and driver need.
import type { Gpu } from '../gpu/gpu.ts';
import { runtimeSpecializes } from './specialize.ts';
import { driverUnrolls } from './unroll.ts';
import { kernelPolicy } from './plan/options.ts';

/** How a device's shader modules are written: overrides in the source (specialize.ts), loops unrolled (unroll.ts). */
export interface ShaderText { specialize: boolean; unroll: boolean }

/**
 * The ShaderText of `gpu`: its options (DeviceOptions.kernels.specialize, .unroll), else its runtime's and
 * driver's.
 */
export function shaderText(gpu: Gpu): ShaderText {
  const p = kernelPolicy(gpu);
  return { specialize: p.specialize ?? runtimeSpecializes(), unroll: p.unroll ?? driverUnrolls(gpu.cpu) };
}

/**
 * This runtime's ShaderText with no Gpu's options, loops as written (the variant sweep,
 * tests/runtimes/variants.ts).
 */
export function runtimeText(): ShaderText {
  return { specialize: runtimeSpecializes(), unroll: false };
}
