// A new device's preparation for the kernels, in one place and in this order (`Gpu.create` runs it before it returns
// the Gpu, src/kernels/gpu.ts; nothing is registered when a module is imported, so every entry gets the same Gpu):
//   1. the kernel options (DeviceOptions.kernels) checked (options.ts): a bad one fails Gpu.create, the device freed;
//   2. the tensor-core matmul's self-check (matmul/matmul-sgmat.ts): the staged kernel, else the direct one;
//   3. prefill attention's tensor-core self-check (attention/sdpa-mm.ts), which needs 2's verdict;
//   4. the grid barrier's self-check (persist.ts), where DeviceOptions.kernels.decodeStep asks for it;
//   5. the fast paths' verdicts written into the adapter summary (paths.ts: gpu.summary.fastPaths).
// A check of a new experimental feature goes here, after those whose verdicts it reads.
import type { Gpu } from '../../gpu/gpu.ts';
import { selfCheckSgmat } from '../matmul/sgmat-check.ts';
import { selfCheckAttentionTensorCores } from '../attention/sdpa-mm.ts';
import { kernelPolicy } from './options.ts';
import { fastPaths } from './paths.ts';
import { selfCheckPersist } from './persist.ts';

/** Prepare `gpu` for the kernels (see the header); rejects, the device destroyed, on options that do not check out. */
export async function prepareDevice(gpu: Gpu): Promise<void> {
  try {
    kernelPolicy(gpu);
  } catch (e) {
    gpu.destroy();
    throw e;
  }
  await selfCheckSgmat(gpu);
  await selfCheckAttentionTensorCores(gpu);
  await selfCheckPersist(gpu);
  gpu.summary.fastPaths = fastPaths(gpu);
}
