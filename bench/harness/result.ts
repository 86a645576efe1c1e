// What a bench run reports (the JSON schema: its environment, kernel and model figures) and the config it ran.
import type { AdapterSummary } from '../../src/gpu/device.ts';
import { HRM_TEXT_1B, parseConfig, type HrmConfig } from '../../src/hrm/config.ts';
import type { AttnPoint } from '../suites/attention.ts';
import type { DispatchFigure } from '../suites/dispatch.ts';
import type { BandwidthFigure, MatmulFigure } from '../suites/figures.ts';
import type { gemv, SweepPoint } from '../suites/gemv.ts';
import type { MlpPoint } from '../suites/mlp.ts';
import type { CacheResult, ModelInfo } from '../suites/model-figures.ts';
import type { streamFloor, StreamFloorPoint } from '../suites/stream.ts';
import type { WeightsResult } from '../suites/weights.ts';
import type { Settings } from './settings.ts';
import type { ReadProbe } from './read-probe.ts';
import type { prefillMatmulPath } from '../../src/kernels/plan/matmul.ts';
import type { SgmatReport } from '../../testkit/kernels/matmul-sgmat.check.ts';
import type { SdpaF16Report } from '../../testkit/kernels/sdpa-sgmat.check.ts';
import type { Recovered } from './recover.ts';
import tinyConfig from '../../models/hrm-text-brown-10m/config.json' with { type: 'json' };

export const SCHEMA = 'hrm-webgpu-bench/1';

export interface KernelResults {
  /** The streaming read, measured first on the fresh device: the ceiling every figure is held against. */
  stream: BandwidthFigure | null;
  /** The same read at the end of the run (null when skipped; absent before 20261204): did the run move it? */
  streamEnd?: BandwidthFigure | null;
  /** --read-probe's line (bench/probes/read-probe.mjs, run before the bench), as printed; null without it. */
  readProbe?: ReadProbe | null;
  /** What one dispatch reading that many bytes costs at best: the floor the matrix-vector products are held to. */
  streamFloor?: StreamFloorPoint[];
  gemv: BandwidthFigure[];
  sweep: SweepPoint[];
  /** --sweep-gemv: a decode layer's MLP as two products or in one dispatch (absent before 20261205). */
  mlp?: MlpPoint[];
  attention: AttnPoint[];
  matmul: MatmulFigure[];
  dispatch: DispatchFigure | null;
}

export interface BenchEnv {
  runtime: string;
  runtimeVersion: string;
  adapter: AdapterSummary;
  /** hrm-webgpu's version and the pinned versions of its dependencies (package.json). */
  packages: Record<string, string>;
  commit: string | null;
  /** The host's CPU, core count and load average when the run started (Node and Deno; absent in a browser). */
  host?: string;
  /** How GPU timestamps were obtained (Dawn quantizes them to 65.5 us unless a toggle turns that off). */
  timestamps: string;
}

export interface BenchResult {
  schema: typeof SCHEMA;
  date: string;
  env: BenchEnv;
  settings: Settings;
  model: (ModelInfo & { dtype: string; weightsMs: number }) | null;
  kernels: KernelResults;
  caches: CacheResult[];
  /** The model per weights (--weights), full cache: bf16's entry is the full-cache run, q8 / q4 runs of their own. */
  weights: WeightsResult[];
  /**
   * The path bf16 prefill matmuls take on this adapter (prefillMatmulPath), and whether prefill attention's products
   * take the tensor cores (null) or why not.
   */
  prefillMatmul: { path: string; attentionNotOnTensorCores?: string | null };
  /** The tensor-core matmul's parity report (--check-sgmat; testkit/kernels/matmul-sgmat.check.ts), or why not. */
  parity: { sgmat: SgmatReport | { skipped: string }; attention?: SdpaF16Report | { skipped: string } } | null;
  /** PyTorch's anchors (suites/torch-anchors.py, run in the same call), verbatim; null without --anchors. */
  anchors: unknown;
  /** The peers' figures and token checks (bench/peers/run.sh, same call), verbatim; absent without --peers. */
  peers?: unknown;
  errors: string[];
  skipped: string[];
  /** Units redone on a new device after the device was lost (a unit lost twice is in `errors` too). */
  recovered: Recovered[];
  elapsedS: number;
  /** False while the run is in progress (partial results are written after each section). */
  complete: boolean;
}

export function benchConfig(s: Settings): { name: string; config: HrmConfig } {
  return s.config === '1b'
    ? { name: 'HRM-Text-1B', config: HRM_TEXT_1B }
    : { name: 'hrm-text-brown-10m', config: parseConfig(tinyConfig, 'models/hrm-text-brown-10m/config.json') };
}
