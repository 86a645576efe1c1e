// What the kernel suites report, built from a Timing (timing/calls.ts): bandwidth figures (bytes moved per call)
// and FLOP figures (2mnk per call), and the random operands they run on, made on the GPU.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { fillRandom } from '../../testkit/init/random.ts';
import type { Weight } from '../../src/hrm/layout.ts';
import type { QuantSpec } from '../../src/hrm/config.ts';
import { randomWeight } from '../../testkit/hrm/random-weights.ts';
import { stats, type Stats } from '../timing/stats.ts';
import type { Timing } from '../timing/calls.ts';

/** HBM bandwidth of an H200 as the CUDA device copy measures it (PERFORMANCE.md): the shares' reference. */
export const H200_BYTES_PER_S = 4.27e12;

export interface BandwidthFigure extends Timing {
  name: string;
  bytes: number;
  /** Bytes per second from the wall time, and from the GPU time where there is one. */
  GBps: Stats;
  kernelGBps: Stats | null;
  /** Median GB/s as a share of the measured streaming read, and of the H200's 4.27 TB/s. */
  shareOfStream: number | null;
  shareOfH200: number;
}

export interface MatmulFigure extends Timing {
  name: string;
  flops: number;
  TFLOPs: Stats;
  kernelTFLOPs: Stats | null;
}

/** `bytes` moved per call of `t`, in GB/s, against the streaming read (when measured) and the H200. */
export function bandwidth(name: string, bytes: number, t: Timing, streamGBps: number | null): BandwidthFigure {
  const GBps = stats(t.wallMs.samples.map((ms) => bytes / ms / 1e6));
  const kernelGBps = t.gpuMs && t.gpuMs.median > 0
    ? stats(t.gpuMs.samples.filter((ms) => ms > 0).map((ms) => bytes / ms / 1e6))
    : null;
  return {
    name, bytes, ...t, GBps, kernelGBps,
    shareOfStream: streamGBps ? GBps.median / streamGBps : null,
    shareOfH200: (GBps.median * 1e9) / H200_BYTES_PER_S,
  };
}

/** `flops` per call of `t`, in TFLOP/s. */
export function flopsFigure(name: string, flops: number, t: Timing): MatmulFigure {
  return {
    name, flops, ...t,
    TFLOPs: stats(t.wallMs.samples.map((ms) => flops / ms / 1e9)),
    kernelTFLOPs: t.gpuMs && t.gpuMs.median > 0
      ? stats(t.gpuMs.samples.filter((ms) => ms > 0).map((ms) => flops / ms / 1e9))
      : null,
  };
}

/**
 * A [rows, cols] weight in uniform +-1/sqrt(cols), split like a checkpoint into bindable row chunks, made on the GPU
 * (the library's randomWeight): bf16, or quantized with `quant` as a bf16 checkpoint quantized on load.
 */
export function randomMatrix(
  gpu: Gpu, rows: number, cols: number, seed: number, label: string, quant?: QuantSpec,
): Weight {
  return randomWeight(gpu, label, rows, cols, { scale: 1 / Math.sqrt(cols), seed, quant });
}

/** An f32 [rows, cols] tensor of random values, made on the GPU. */
export function randomX(gpu: Gpu, rows: number, cols: number, seed: number): Tensor {
  const x = Tensor.empty(gpu, [rows, cols], 'f32', 'bench.x');
  fillRandom(x, { seed, scale: 1 });
  return x;
}
