// One GPU context per test worker.
import { appendFileSync } from 'node:fs';
import { expect } from 'vitest';
import { Gpu } from '../../src/kernels/gpu.ts';

let shared: Promise<Gpu> | null = null;

export function getGpu(): Promise<Gpu> {
  shared ??= Gpu.create().then((gpu) => {
    // HRM_PIPELINE_LOG=file appends "test<TAB>pipeline" for each pipeline created: a software driver's cold-cache
    // time is mostly these compiles (done at their first dispatch), and the count does not vary with the load.
    const log = process.env.HRM_PIPELINE_LOG;
    if (log) {
      const device = gpu.device;
      const create = device.createComputePipeline.bind(device);
      device.createComputePipeline = (d) => {
        appendFileSync(log, `${expect.getState().currentTestName}\t${d.label}\n`);
        return create(d);
      };
    }
    return gpu;
  });
  return shared;
}
