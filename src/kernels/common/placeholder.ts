// One-word tensors bound where a kernel declares a buffer that the chosen options never touch (no mask, no gate,
// the scales of a full-precision cache side). WebGPU needs every declared binding bound; these stand in.
import { Tensor } from '../../tensor/tensor.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { stateKey } from '../../gpu/registry.ts';

const MADE = stateKey<Map<string, Tensor>>('placeholders');

/**
 * The placeholder named `name` (its label) on this device, made once and kept for the device's life. Writable
 * bindings of one dispatch must not alias: give each such slot its own name.
 */
export function placeholder(gpu: Gpu, name: string, dtype: 'u32' | 'f32'): Tensor {
  const byName = gpu.state.get(MADE, () => new Map());
  let t = byName.get(name);
  if (!t) byName.set(name, (t = Tensor.from(gpu, [0], [1], dtype, name)));
  return t;
}
