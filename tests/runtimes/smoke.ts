// The runtime smoke test: opens a device, runs an add and a row reduction (log-sum-exp), checks them against the CPU
// and returns a
// summary. Shared by the Deno run and the Chromium page, so all runtimes execute exactly the same code. Where the
// device writes timestamps inside a pass (Chrome), the two kernels are also replayed as one pass timed between them.
import { Gpu } from '../../src/kernels/gpu.ts';
import { capture } from '../../src/gpu/capture.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { add, logSumExpRows } from '../../src/kernels/ops/ops.ts';
import { inPassMs } from '../../bench/timing/calls.ts';

export interface SmokeResult {
  runtime: string; adapter: string; features: string[]; addMaxErr: number; sumMaxErr: number; n: number;
  /** GPU ms of each of the two dispatches inside one pass (bench's inPassMs), or null where the runtime cannot. */
  inPass: number[] | null;
}

export async function smoke(): Promise<SmokeResult> {
  const gpu = await Gpu.create();
  const n = 1000;
  const a = Float32Array.from({ length: n }, (_, i) => Math.sin(i) * 3);
  const b = Float32Array.from({ length: n }, (_, i) => Math.cos(i * 0.7));
  const ta = Tensor.from(gpu, a, [n], 'f32', 'a');
  const sum = await add(ta, Tensor.from(gpu, b, [n], 'f32', 'b')).read();
  let addMaxErr = 0;
  for (let i = 0; i < n; i++) addMaxErr = Math.max(addMaxErr, Math.abs(sum[i] - Math.fround(a[i] + b[i])));
  const rows = await logSumExpRows(ta.reshape([10, 100])).read();
  let sumMaxErr = 0;
  for (let r = 0; r < 10; r++) {
    let s = 0;
    for (let j = 0; j < 100; j++) s += Math.exp(a[r * 100 + j]);
    sumMaxErr = Math.max(sumMaxErr, Math.abs(rows[r] - Math.log(s)));
  }
  let inPass: number[] | null = null;
  if (gpu.inPassTimestamps) {
    const tb = Tensor.from(gpu, b, [n], 'f32', 'b2');
    const cap = capture(gpu, () => { add(ta, tb).dispose(); logSumExpRows(ta.reshape([10, 100])).dispose(); });
    const claimed = gpu.claim(cap.allocated);
    try {
      inPass = await inPassMs(gpu, cap.dispatches, [...cap.uniforms, ...cap.uploads], 2);
    } finally {
      for (const buf of claimed) gpu.release(buf);
    }
  }
  const out = {
    runtime: gpu.summary.runtime, adapter: gpu.summary.description ||
      gpu.summary.vendor, features: gpu.summary.features,
    addMaxErr, sumMaxErr, n, inPass,
  };
  gpu.destroy();
  return out;
}
