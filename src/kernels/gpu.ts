// The Gpu that apps, the model, bench and tests create: the device and its parts (src/gpu/gpu.ts), prepared for the
// kernels before `create` returns it (plan/prepare.ts: the kernel options checked, the tensor cores' self-checks,
// the fast paths written into the adapter summary). The GPU layer below cannot name the kernels, so the factory
// that prepares them lives here; an instance is a src/gpu/gpu.ts Gpu, which is what every function takes.
import { Gpu as DeviceGpu } from '../gpu/gpu.ts';
import type { DeviceOptions } from '../gpu/device.ts';
import { prepareDevice } from './plan/prepare.ts';

/** The GPU context (device, buffer pool, kernels' command encoder). `await Gpu.create()` opens one. */
export class Gpu extends DeviceGpu {
  /**
   * Open the adapter of this runtime (browser, Deno, Node/Dawn), wrap its device and prepare it for the kernels.
   * Rejects with an InputError naming the field when `opts.kernels` does not check out.
   */
  static async create(opts: DeviceOptions = {}): Promise<Gpu> {
    const { device, adapter, summary } = await Gpu.openDevice(opts);
    const gpu = new Gpu(device, adapter, summary, opts);
    await prepareDevice(gpu);
    return gpu;
  }
}
