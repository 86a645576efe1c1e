// MLX's quantized checkpoint layout (what mlx.nn.quantize + save_safetensors, mlx-lm's convert and `hrm convert`
// write): for a quantized Linear / Embedding `<m>`, `<m>.weight` u32 [rows, cols * bits / 32] (levels packed along
// the input dimension), `<m>.scales` and `<m>.biases` [rows, cols / group_size] in the model dtype; config.json's
// `quantization` gives bits and group size, per module where mlx-lm wrote an entry. Also quantize-on-load (dense
// tensors quantized on the GPU, bit for bit mx.quantize) and the way back to MLX's layout for `hrm convert`.
import { FormatError } from '../errors.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { Tensor } from '../tensor/tensor.ts';
import { decode, type Checkpoint, type StDType, type TensorEntry, type TensorToWrite } from '../io/safetensors.ts';
import type { Round } from '../kernels/common/codes.ts';
import { packHalf } from '../tensor/dtype.ts';
import { quantize } from '../kernels/quant/quant.ts';
import { packHalves } from '../kernels/qlinear/qlinear.ts';
import type { HrmConfig, QuantConfig, QuantSpec } from './config.ts';
import { DTYPE, chunkRows, expectedTensors, quantizedBytesPerValue, type Weight } from './layout.ts';


/**
 * How module `m` (`<m>.weight` expected [rows, cols]) is stored: its QuantSpec when `<m>.scales` is there (mlx-lm
 * decides by the same test), null when dense. Problems (tensors and config disagreeing) are pushed, each naming
 * the tensor or key.
 */
export function moduleQuant(ck: Checkpoint, q: QuantConfig | null, m: string, rows: number, cols: number,
  problems: string[]): QuantSpec | null {
  const has = { scales: ck.has(`${m}.scales`), biases: ck.has(`${m}.biases`) };
  const packed = ck.has(`${m}.weight`) && ck.entry(`${m}.weight`).dtype === 'U32';
  const spec = q ? q.modules.get(m) ?? q.default : null;
  if (!has.scales && !has.biases && !packed) {
    if (spec && q?.modules.get(m) !== undefined) {
      problems.push(`config.json's quantization.${m} says ${spec.bits} bits, group ${spec.groupSize}, ` +
        `but the checkpoint has no '${m}.scales'`);
    }
    return null;
  }
  if (!q) {
    problems.push(`tensor '${m}.${has.scales ? 'scales' : packed ? 'weight' : 'biases'}' is quantized ` +
      'but config.json has no \'quantization\' block {group_size, bits}');
    return null;
  }
  if (spec === false) {
    problems.push(`config.json's quantization.${m} is false (unquantized) ` +
      `but the checkpoint has quantized tensors for '${m}'`);
    return null;
  }
  for (const part of ['scales', 'biases'] as const) {
    if (!has[part]) problems.push(`missing tensor '${m}.${part}' (quantized '${m}.weight' needs scales and biases)`);
  }
  if (!spec || !has.scales || !has.biases) return null;
  const w = ck.entry(`${m}.weight`);
  const words = (cols * spec.bits) / 32;
  if (w.dtype !== 'U32' || w.shape.join() !== [rows, words].join()) {
    problems.push(`tensor '${m}.weight' is ${w.dtype} [${w.shape.join(', ')}]; ${spec.bits}-bit ${rows}x${cols} ` +
      `(config.json quantization) packs into U32 [${rows}, ${words}]`);
  }
  for (const part of ['scales', 'biases']) {
    const e = ck.entry(`${m}.${part}`);
    if (e.shape.join() !== [rows, cols / spec.groupSize].join() || !DTYPE[e.dtype]) {
      problems.push(`tensor '${m}.${part}' is ${e.dtype} [${e.shape.join(', ')}]; group size ${spec.groupSize} ` +
        `(config.json quantization) needs F32/F16/BF16 [${rows}, ${cols / spec.groupSize}]`);
    }
  }
  const sd = ck.entry(`${m}.scales`).dtype, bd = ck.entry(`${m}.biases`).dtype;
  if (sd !== bd) {
    problems.push(`tensor '${m}.scales' is ${sd} but '${m}.biases' is ${bd}; they must share the model dtype`);
  }
  return spec;
}

/** Upload a quantized module from its three tensors' bytes, row-chunked like dense weights, scales as stored. */
export function uploadQuantized(gpu: Gpu, m: string,
  raw: { weight: Uint8Array; scales: Uint8Array; biases: Uint8Array }, stored: StDType, rows: number, cols: number,
  spec: QuantSpec): Weight {
  const words = (cols * spec.bits) / 32, groups = cols / spec.groupSize;
  const dtype = DTYPE[stored]!, gb = dtype === 'f32' ? 4 : 2;
  const per = chunkRows(gpu, rows, words * 4);
  const w: Weight = { rows, cols, dtype: 'u32', chunks: [], quant: { ...spec, scales: [], biases: [] } };
  for (let r = 0; r < rows; r += per) {
    const n = Math.min(per, rows - r), tag = w.chunks.length ? `#${w.chunks.length}` : '';
    w.chunks.push(Tensor.from(gpu, raw.weight.subarray(r * words * 4, (r + n) * words * 4), [n, words], 'u32',
      `${m}.weight${tag}`));
    w.quant!.scales.push(Tensor.from(gpu, raw.scales.subarray(r * groups * gb, (r + n) * groups * gb), [n, groups],
      dtype, `${m}.scales${tag}`));
    w.quant!.biases.push(Tensor.from(gpu, raw.biases.subarray(r * groups * gb, (r + n) * groups * gb), [n, groups],
      dtype, `${m}.biases${tag}`));
  }
  return w;
}

/** The activation dtype a checkpoint dtype's scales are stored in (mx.quantize keeps the input's dtype). */
export function scaleRound(dtype: StDType): Round {
  return dtype === 'BF16' ? 'bf16' : dtype === 'F16' ? 'f16' : 'none';
}

/** Quantize a dense [rows, cols] tensor on the GPU as mx.quantize does (Metal rules), f32 row chunk by chunk. */
export function quantizeOnLoad(gpu: Gpu, m: string, e: TensorEntry, raw: Uint8Array, spec: QuantSpec): Weight {
  const [rows, cols] = e.shape;
  const f = decode(e, raw) as Float32Array;
  const per = chunkRows(gpu, rows, cols * 4);
  const w: Weight = { rows, cols, dtype: 'u32', chunks: [], quant: { ...spec, scales: [], biases: [] } };
  for (let r = 0; r < rows; r += per) {
    const n = Math.min(per, rows - r);
    const dense = Tensor.from(gpu, f.subarray(r * cols, (r + n) * cols), [n, cols], 'f32', `${m}.weight (f32)`);
    quantizeChunk(w, dense, scaleRound(e.dtype));
    dense.dispose();
  }
  return w;
}

/**
 * Append the quantization of an f32 row chunk to quantized weight `w` (mx.quantize, Metal rules), scales and biases
 * stored in the dtype `round` names (f32 for 'none'), as a checkpoint of that dtype holds them.
 */
export function quantizeChunk(w: Weight, dense: Tensor, round: Round): void {
  const q = quantize(dense, { bits: w.quant!.bits, groupSize: w.quant!.groupSize, round });
  const store = (t: Tensor) => {
    if (round === 'none') return t;
    const h = packHalves(t, round);
    t.dispose();
    return h;
  };
  w.chunks.push(q.q);
  w.quant!.scales.push(store(q.scales));
  w.quant!.biases.push(store(q.biases));
}

/**
 * A module's tensors in MLX's layout (scales / biases in `dtype`, which holds their values exactly), read from the
 * GPU.
 */
export async function moduleTensors(m: string, w: Weight,
  dtype: 'F32' | 'BF16' | 'F16'): Promise<Record<string, TensorToWrite>> {
  if (!w.quant) throw new FormatError('convert', `module '${m}' is not quantized`);
  const cat = async (ts: Tensor[]) => {
    const parts = await Promise.all(ts.map((t) => t.read()));
    const out = new (parts[0].constructor as Uint32ArrayConstructor)(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) { out.set(p as Uint32Array, o); o += p.length; }
    return out;
  };
  const groups = w.cols / w.quant.groupSize;
  const q = await cat(w.chunks);
  const half = async (ts: Tensor[]): Promise<TensorToWrite> => {
    const f = new Float32Array((await cat(ts)).buffer);
    // The values were rounded to the dtype when quantized, so packing them is exact.
    return { dtype, shape: [w.rows, groups],
      data: dtype === 'F32' ? f : packHalf(dtype === 'BF16' ? 'bf16' : 'f16', f) };
  };
  return {
    [`${m}.weight`]: { dtype: 'U32', shape: [w.rows, (w.cols * w.quant.bits) / 32], data: q },
    [`${m}.scales`]: await half(w.quant.scales),
    [`${m}.biases`]: await half(w.quant.biases),
  };
}

/** Bytes of every matrix of a config's checkpoint: dense at `denseBytes` per value, or quantized with `spec`. */
export function checkpointBytes(c: HrmConfig, spec: QuantSpec | null, scaleBytes = 2, denseBytes = 2): number {
  let n = 0;
  for (const [, [rows, cols]] of expectedTensors(c)) n += spec &&
    cols % spec.groupSize === 0 ? rows * cols * quantizedBytesPerValue(spec, scaleBytes) : rows * cols * denseBytes;
  return n + c.hidden_size * 4;
}
