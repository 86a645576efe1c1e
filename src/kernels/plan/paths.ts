// The fast paths the kernels take where a device allows them, and why each one is off on a device, as the Gpu's
// planners decide them (plan/matmul.ts, plan/attention.ts): a feature it did not get (the adapter does not offer
// it, or an option turned it off: AdapterSummary.fastFeatures says which), a CPU driver, a failed self-check, or the
// Gpu's kernel options (DeviceOptions.kernels). Written into the adapter summary (gpu.summary.fastPaths) by prepare.ts
// once the device's self-checks have run, so that whatever records the summary (the demo's adapter panel, the bench
// JSON)
// shows it. Nothing here depends on the runtime: a browser with the features takes the same paths as Node.
import type { Gpu } from '../../gpu/gpu.ts';
import type { OnOff } from '../../gpu/device.ts';
import { matmulPaths } from './matmul.ts';
import { attentionPaths } from './attention.ts';
import { persistPaths } from './persist.ts';

/** The fast paths on `gpu`: on, or off and why. */
export function fastPaths(gpu: Gpu): Record<string, OnOff> {
  return { ...matmulPaths(gpu), ...attentionPaths(gpu), ...persistPaths(gpu) };
}
