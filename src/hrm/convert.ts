// `hrm convert`: a checkpoint quantized on the GPU and written back in MLX's quantized layout (quantized.ts), with
// config.json's `quantization` block, so MLX (mlx.nn.quantize's loaders, mlx-lm) and tools/mlx_reference.py read it.
import { FormatError } from '../errors.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { encodeSafetensors, type TensorToWrite } from '../io/safetensors.ts';
import type { QuantSpec } from './config.ts';
import type { ModelFiles } from './files.ts';
import { loadConfigs, openCheckpoint } from './load.ts';
import { moduleTensors } from './quantized.ts';
import { disposeWeights, loadWeights, namedWeights } from './weights.ts';

export interface Converted {
  /** model.safetensors in MLX's layout. */
  safetensors: Uint8Array;
  /** config.json: the source's keys plus `quantization`. */
  config: string;
}

/** Quantize every matrix of a dense checkpoint (bits, group size) and return it in MLX's layout. */
export async function convertQuantized(gpu: Gpu, files: ModelFiles, spec: QuantSpec): Promise<Converted> {
  const { config, quantization } = await loadConfigs(files);
  if (quantization) throw new FormatError('convert',
    `${files.name}/config.json already has a quantization block (${quantization.default.bits} bits); ` +
    'convert a dense checkpoint');
  const raw = JSON.parse((await files.text('config.json'))!) as Record<string, unknown>;
  const { ck, name } = await openCheckpoint(files);
  const dtype = ck.entry('model.embed_tokens.weight').dtype;
  if (dtype !== 'BF16' && dtype !== 'F16' && dtype !== 'F32') throw new FormatError('convert',
    `${name}: embed_tokens is ${dtype}; convert reads BF16, F16 or F32 checkpoints`);
  const weights = await loadWeights(gpu, ck, config, { where: name, quantize: spec });
  try {
    const tensors: Record<string, TensorToWrite> = {};
    for (const [m, w] of namedWeights(weights, config)) {
      if (!w.quant) throw new FormatError('convert',
        `${name}: '${m}' has ${w.cols} columns, not a multiple of the group size ${spec.groupSize}`);
      Object.assign(tensors, await moduleTensors(m, w, dtype));
    }
    if (ck.has('model.z_L_init')) tensors['model.z_L_init'] = { dtype: 'F32', shape: ck.entry('model.z_L_init').shape,
      data: weights.zLInit };
    const quant = { group_size: spec.groupSize, bits: spec.bits };
    return {
      safetensors: encodeSafetensors(tensors, { format: 'mlx' }),
      config: JSON.stringify({ ...raw, quantization: quant, quantization_config: quant }, null, 2) + '\n',
    };
  } finally {
    disposeWeights(weights);
  }
}
