// Per-device u32 counters in which a dispatch's workgroups count themselves done, so the last one can finish the
// work (sdpa_one's folded merge). WebGPU zero-fills a new buffer and every kernel using them sets what it counted
// back to 0 before its dispatch ends, so they need no upload: a captured decode step binds the same buffer at every
// replay. Not pooled and never freed while the device lives (a captured step keeps binding it). Readable (COPY_SRC)
// so that tests can check the kernels left them at 0.
import type { BufferView, Gpu } from '../../gpu/gpu.ts';
import { stateKey } from '../../gpu/registry.ts';

/** Counters in the first buffer of a device; a need past them gets a buffer of twice the need. */
const MIN_COUNTERS = 64;

const MADE = stateKey<GPUBuffer[]>('counters');

/**
 * A zeroed array of at least `n` u32 counters on this device, the same buffer on every call while `n` fits. A
 * larger `n` makes a larger one; the smaller ones are kept, as steps captured with them may still replay.
 */
export function counters(gpu: Gpu, n: number): BufferView {
  const held = gpu.state.get(MADE, () => []);
  let b = held.at(-1);
  if (!b || b.size < 4 * n) {
    const count = Math.max(MIN_COUNTERS, 2 * n);
    b = gpu.device.createBuffer({ size: 4 * count, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
      label: 'counters' });
    held.push(b);
  }
  return { buffer: b, offset: 0, size: b.size };
}
