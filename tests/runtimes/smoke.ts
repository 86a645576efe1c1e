// The runtime smoke test: opens a device, runs an add and a row reduction (log-sum-exp), checks them against the CPU and returns a
// summary. Shared by the Deno run and the Chromium page, so all runtimes execute exactly the same code.
import { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/gpu/tensor.ts';
import { add, logSumExpRows } from '../../src/kernels/ops/ops.ts';

export interface SmokeResult { runtime: string; adapter: string; features: string[]; addMaxErr: number; sumMaxErr: number; n: number }

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
  const out = { runtime: gpu.summary.runtime, adapter: gpu.summary.description || gpu.summary.vendor, features: gpu.summary.features, addMaxErr, sumMaxErr, n };
  gpu.destroy();
  return out;
}
