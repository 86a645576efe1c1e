// What the kernel suites report, built from a Timing (timing/calls.ts): bandwidth figures (bytes moved per call)
// and FLOP figures (2mnk per call), and the random operands they run on, made on the GPU.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/gpu/tensor.ts';
import { fillRandom } from '../../src/kernels/init/random.ts';
import { quantize } from '../../src/kernels/quant/quant.ts';
import { packHalves, type QuantMatrix } from '../../src/kernels/qlinear/qlinear.ts';
import { chunkRows } from '../../src/hrm/layout.ts';
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

/** A bf16 [rows, cols] weight split like a checkpoint into bindable row chunks, filled on the GPU. */
export function randomWeight(gpu: Gpu, rows: number, cols: number, seed: number, label: string): Tensor[] {
  const per = chunkRows(gpu, rows, cols * 2);
  const chunks: Tensor[] = [];
  for (let r = 0; r < rows; r += per) {
    const t = Tensor.empty(gpu, [Math.min(per, rows - r), cols], 'bf16', label);
    fillRandom(t, { seed: seed + r, scale: 1 / Math.sqrt(cols) });
    chunks.push(t);
  }
  return chunks;
}

/**
 * A random [rows, cols] weight quantized on the GPU (group 64, bf16 scales and biases), as a bf16 checkpoint
 * quantized on load: row chunks whose f32 source fits one binding.
 */
export function randomQuantWeight(
  gpu: Gpu, rows: number, cols: number, bits: number, seed: number, label: string,
): QuantMatrix {
  const w = { bits, groupSize: 64, q: [] as Tensor[], scales: [] as Tensor[], biases: [] as Tensor[] };
  const per = chunkRows(gpu, rows, cols * 4);
  for (let r = 0; r < rows; r += per) {
    const dense = Tensor.empty(gpu, [Math.min(per, rows - r), cols], 'f32', label);
    fillRandom(dense, { seed: seed + r, scale: 1 / Math.sqrt(cols) });
    const q = quantize(dense, { bits, groupSize: 64, round: 'bf16' });
    dense.dispose();
    w.q.push(q.q);
    for (const [to, t] of [[w.scales, q.scales], [w.biases, q.biases]] as const) {
      to.push(packHalves(t, 'bf16'));
      t.dispose();
    }
  }
  return w;
}

/** An f32 [rows, cols] tensor of random values, made on the GPU. */
export function randomX(gpu: Gpu, rows: number, cols: number, seed: number): Tensor {
  const x = Tensor.empty(gpu, [rows, cols], 'f32', 'bench.x');
  fillRandom(x, { seed, scale: 1 });
  return x;
}
