// What a checkpoint holds for a config, and how its matrices sit on the GPU: the tensor names and shapes, the float
// dtypes it may store, the Weight (row chunks that each fit one binding, packed levels and scales when quantized),
// and the rows a chunk takes. weights.ts (dense) and quantized.ts (MLX's quantized layout) both build on it.
import { FormatError } from '../errors.ts';
import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { DType } from '../tensor/dtype.ts';
import type { StDType } from '../io/safetensors.ts';
import type { HrmConfig, QuantSpec } from './config.ts';

/**
 * A weight matrix [rows, cols] as one or more row chunks, each small enough to bind. Quantized (`quant` set):
 * chunks are the packed levels u32 [rows_i, cols * bits / 32], with f32 scales / biases [rows_i, cols / groupSize].
 */
export interface Weight {
  rows: number;
  cols: number;
  dtype: DType;
  chunks: Tensor[];
  quant?: QuantSpec & { scales: Tensor[]; biases: Tensor[] };
}

/** Float dtypes of stored tensors and the tensor dtype each uploads as (halves stay packed two per word). */
export const DTYPE: Partial<Record<StDType, 'f32' | 'f16' | 'bf16'>> = { F32: 'f32', F16: 'f16', BF16: 'bf16' };

/** Names and shapes the checkpoint must hold for this config. */
export function expectedTensors(c: HrmConfig): Map<string, number[]> {
  const h = c.hidden_size, a = c.num_attention_heads * c.head_dim, i = c.intermediate_size;
  const m = new Map<string, number[]>([['model.embed_tokens.weight', [c.vocab_size, h]]]);
  if (!c.tie_word_embeddings) m.set('lm_head.weight', [c.vocab_size, h]);
  for (const stack of ['L', 'H']) {
    for (let l = 0; l < c.num_layers_per_stack; l++) {
      const p = `model.${stack}_module.layers.${l}`;
      m.set(`${p}.attn.gqkv_proj.weight`, [4 * a, h]);
      m.set(`${p}.attn.o_proj.weight`, [h, a]);
      m.set(`${p}.mlp.gate_up_proj.weight`, [2 * i, h]);
      m.set(`${p}.mlp.down_proj.weight`, [h, i]);
    }
  }
  return m;
}

/** Bytes one value of a `spec`-quantized matrix takes: its packed level and its share of its group's scale and bias. */
export function quantizedBytesPerValue(spec: QuantSpec, scaleBytes = 2): number {
  return spec.bits / 8 + (2 * scaleBytes) / spec.groupSize;
}

/** Rows per chunk so that each chunk fits one binding. */
export function chunkRows(gpu: Gpu, rows: number, rowBytes: number): number {
  const per = Math.floor(gpu.maxBinding / rowBytes);
  if (per < 1) throw new FormatError('checkpoint',
    `one row of ${rowBytes} bytes exceeds the adapter's binding limit ${gpu.maxBinding}`);
  return Math.min(rows, per);
}
