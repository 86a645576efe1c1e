// The model on quantized weights next to bf16 (issue 30's `weights` list): random weights quantized on the GPU as a
// bf16 checkpoint quantized on load (q8 / q4, group 64), measured as the full-cache configuration is, with the bytes
// the weights take on the GPU and next to a 4096-token cache. bf16's entry is the full-cache run itself.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { cacheBytes } from '../../src/hrm/cache.ts';
import type { HrmConfig, QuantSpec } from '../../src/hrm/config.ts';
import { quantizedBytesPerValue } from '../../src/hrm/layout.ts';
import { HrmModel } from '../../src/hrm/model.ts';
import { disposeWeights } from '../../src/hrm/weights.ts';
import { randomWeights } from '../../testkit/hrm/random-weights.ts';
import type { Settings, WeightsName } from '../harness/settings.ts';
import { ModelBench, type Clock } from './model.ts';
import { modelInfo, type CacheResult, type ModelInfo } from './model-figures.ts';

/** One weights configuration: a full-cache entry (CacheResult's figures) named by its weights. */
export type WeightsResult = Omit<CacheResult, 'name'> & {
  name: WeightsName;
  /** Bytes the weights take on the GPU (packed levels, scales and biases when quantized). */
  bytes: number;
  /** The weights plus a full-precision KV cache of 4096 positions. */
  memory4096: number;
};

/** Context of the memory figure: what a long generation holds besides the weights. */
export const MEMORY_CONTEXT = 4096;

/** An entry of `weights` from the full-cache figures of a model whose weights take `bytes`. */
export function weightsEntry(
  name: WeightsName, bytes: number, full: CacheResult, c: HrmConfig, dtype: Settings['dtype'],
): WeightsResult {
  return { ...full, name, bytes, memory4096: bytes + cacheBytes(c, MEMORY_CONTEXT, dtype, { k: null, v: null }) };
}

/**
 * The model on random `quant` weights (seeded as the bf16 run), full cache: ModelBench's figures, the ceiling at the
 * quantized bytes a token reads. The weights are freed before it returns.
 */
export async function quantizedRun(
  gpu: Gpu, name: WeightsName, quant: QuantSpec, bf16: ModelInfo, s: Settings, clock: Clock,
  log: (m: string) => void, streamGBps: number | null,
): Promise<WeightsResult> {
  const c = bf16.config;
  const weights = await randomWeights(gpu, c, s.seed, quant);
  try {
    await gpu.sync();
    const info = modelInfo(bf16.name, c, bf16.parameters, quantizedBytesPerValue(quant));
    const model = new HrmModel(gpu, c, weights, s.dtype);
    const bench = new ModelBench(gpu, model, info, s, clock, (m) => log(`${name} weights:${m}`));
    return weightsEntry(name, weights.bytes, await bench.run('full', streamGBps), c, s.dtype);
  } finally {
    disposeWeights(weights);
  }
}
