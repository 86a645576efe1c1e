// Random weights of a config's shape made on the GPU (no file): the 1B model's benchmarks and sizing tests, without
// its checkpoint. Not in the package (testkit/): the library itself never makes random weights.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import type { HrmConfig, QuantSpec } from '../../src/hrm/config.ts';
import { chunkRows, type Weight } from '../../src/hrm/layout.ts';
import { quantizeChunk } from '../../src/hrm/quantized.ts';
import { weightBytes, type HrmWeights, type LayerWeights } from '../../src/hrm/weights.ts';
import { fillRandom } from '../init/random.ts';

/**
 * One random [rows, cols] matrix made on the GPU, uniform in +-scale, row-chunked to fit the bindings (chunk k seeded
 * `seed + k`): bf16, or with `quant` random f32 values quantized on the GPU with bf16 scales (as a bf16 checkpoint
 * quantized on load).
 */
export function randomWeight(gpu: Gpu, name: string, rows: number, cols: number,
  o: { scale: number; seed: number; quant?: QuantSpec }): Weight {
  const { quant } = o;
  const per = chunkRows(gpu, rows, cols * (quant ? 4 : 2));
  const w: Weight = quant ? { rows, cols, dtype: 'u32', chunks: [],
    quant: { ...quant, scales: [], biases: [] } } : { rows, cols, dtype: 'bf16', chunks: [] };
  for (let r = 0; r < rows; r += per) {
    const t = Tensor.empty(gpu, [Math.min(per, rows - r), cols], quant ? 'f32' : 'bf16',
      w.chunks.length ? `${name}#${w.chunks.length}` : name);
    fillRandom(t, { seed: o.seed + w.chunks.length, scale: o.scale });
    if (!w.quant) { w.chunks.push(t); continue; }
    quantizeChunk(w, t, 'bf16');
    t.dispose();
  }
  return w;
}

/**
 * Random bf16 weights of a config's shape, made on the GPU (no file): uniform in +-1/sqrt(fan_in), embeddings
 * +-0.02. Used to size and benchmark the 1B model without its checkpoint. Splits like a loaded checkpoint. With
 * `quant`, random f32 values quantized on the GPU (bf16 scales, as a bf16 checkpoint quantized on load).
 */
export async function randomWeights(gpu: Gpu, c: HrmConfig, seed = 0, quant?: QuantSpec): Promise<HrmWeights> {
  let bytes = 0;
  let n = 0;
  const make = (name: string, rows: number, cols: number, scale: number): Weight => {
    const w = randomWeight(gpu, name, rows, cols, { scale, seed: seed * 1000003 + n, quant });
    n += w.chunks.length;
    bytes += weightBytes(w);
    return w;
  };
  const h = c.hidden_size, a = c.num_attention_heads * c.head_dim, i = c.intermediate_size;
  const layers = (stack: string): LayerWeights[] => Array.from({ length: c.num_layers_per_stack }, (_, l) => ({
    gqkv: make(`${stack}.${l}.gqkv`, 4 * a, h, 1 / Math.sqrt(h)), o: make(`${stack}.${l}.o`, h, a, 1 / Math.sqrt(a)),
    gateUp: make(`${stack}.${l}.gate_up`, 2 * i, h, 1 / Math.sqrt(h)), down: make(`${stack}.${l}.down`, h, i,
      1 / Math.sqrt(i)),
  }));
  const embed = make('embed', c.vocab_size, h, 0.02);
  const lmHead = c.tie_word_embeddings ? embed : make('lm_head', c.vocab_size, h, 1 / Math.sqrt(h));
  const w: HrmWeights = { embed, lmHead, zLInit: new Float32Array(h), L: layers('L'), H: layers('H'), bytes };
  await gpu.flush('random weights');
  return w;
}
