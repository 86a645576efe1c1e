// The fast paths the kernels take where a device allows them, and why each one is off on a device: a feature it did
// not get (the adapter does not offer it, or an option turned it off: AdapterSummary.fastFeatures says which), a CPU
// driver, or a failed self-check. Written into the adapter summary (gpu.summary.fastPaths) once the device's
// self-checks have run, so that whatever records the summary (the demo's adapter panel, the bench JSON) shows it.
// Nothing here depends on the runtime: a browser with the features takes the same paths as Node.
import { onNewDevice, type Gpu } from '../gpu/gpu.ts';
import type { FastFeature, OnOff } from '../gpu/device.ts';
import { sgmatUnavailable, stagedUnavailable } from './matmul/matmul_sgmat.ts';
import { attentionTensorCoresUnavailable } from './attention/sdpa_mm.ts';

const SGMAT = 'chromium-experimental-subgroup-matrix';

interface FastPath {
  name: string;
  /** The features it runs on. */
  needs: FastFeature[];
  /** Why the kernel family itself declines (self-check, limits), once the features are there; null: it runs. */
  declines(gpu: Gpu): string | null;
}

/** Each path, as the kernel that takes it decides (matmul.ts, gemv.ts, matmul_sgmat.ts, sdpa_mm.ts). */
const PATHS: FastPath[] = [
  { name: 'matrix-vector reductions on subgroups', needs: ['subgroups'], declines: () => null },
  { name: 'prefill matmuls on tensor cores (bf16)', needs: [SGMAT, 'shader-f16'], declines: sgmatUnavailable },
  {
    name: 'staged tensor-core kernel (128x128 tiles)', needs: [SGMAT, 'shader-f16', 'subgroups'],
    declines: (gpu) => sgmatUnavailable(gpu) ?? stagedUnavailable(gpu),
  },
  {
    name: 'prefill attention on tensor cores (bf16)', needs: [SGMAT, 'shader-f16', 'subgroups'],
    declines: attentionTensorCoresUnavailable,
  },
];

/** The fast paths on `gpu`: on, or off and why (the first missing feature, a CPU driver, the kernel's own reason). */
export function fastPaths(gpu: Gpu): Record<string, OnOff> {
  const features = gpu.summary.fastFeatures;
  const out: Record<string, OnOff> = {};
  for (const p of PATHS) {
    const missing = p.needs.find((f) => !features[f].on);
    const why = missing ? `no ${missing}: ${features[missing].why}`
      : gpu.cpu ? 'a CPU driver (the kernels take barrier-free variants there)'
      : p.declines(gpu);
    out[p.name] = why === null ? { on: true } : { on: false, why };
  }
  return out;
}

// Registered after the checks of the modules imported above (ES modules evaluate their imports first), so the
// self-checks' verdicts are in when it runs.
onNewDevice(async (gpu) => { gpu.summary.fastPaths = fastPaths(gpu); });
