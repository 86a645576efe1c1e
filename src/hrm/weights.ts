// Checkpoint -> GPU tensors. Reads the HF fused layout (gqkv_proj rows gate|q|k|v, gate_up_proj rows gate|up),
// which is also what the seed's MLX converter writes to model_mlx.safetensors (minus model.z_L_init). bf16, f16
// and f32 tensors are uploaded as stored; a tensor larger than the adapter binds at once is split into row
// chunks (the 1B model's 192 MiB lm_head on an adapter that binds 128 MiB). Every tensor is checked by name and
// shape before anything is uploaded, and every uploaded tensor is scanned for NaN and Inf on the GPU (a
// non-finite weight would otherwise give all-NaN logits and no hint where they come from). Quantized modules
// (MLX's layout, quantized.ts) load as such, and dense ones are quantized on the GPU while loading when
// LoadOptions.quantize asks for it.
import { FormatError, InputError } from '../errors.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { Tensor } from '../tensor/tensor.ts';
import type { DType } from '../tensor/dtype.ts';
import { decode, readEntry, type Checkpoint, type StDType } from '../io/safetensors.ts';
import type { Progress } from '../io/sources.ts';
import { type HrmConfig, type QuantConfig, type QuantSpec } from './config.ts';
import { GROUP_SIZES, QUANT_BITS } from '../kernels/quant/quant.ts';
import { countNonFinite } from '../kernels/finite/finite.ts';
import { moduleQuant, quantizeOnLoad, uploadQuantized } from './quantized.ts';
import { DTYPE, chunkRows, expectedTensors, type Weight } from './layout.ts';

export interface LayerWeights { gqkv: Weight; o: Weight; gateUp: Weight; down: Weight }

export interface HrmWeights {
  embed: Weight;
  lmHead: Weight;
  /** model.z_L_init as stored (zeros when the checkpoint has none). */
  zLInit: Float32Array;
  L: LayerWeights[];
  H: LayerWeights[];
  /** Bytes uploaded to the GPU. */
  bytes: number;
}

/**
 * Check names, shapes and dtypes against the config (and its quantization block); throws one error listing every
 * problem. Returns the quantized modules' specs by module path.
 */
export function validateCheckpoint(ck: Checkpoint, c: HrmConfig, where: string,
  quant: QuantConfig | null = null): Map<string, QuantSpec> {
  const problems: string[] = [];
  for (const stack of ['L', 'H']) {
    const layer = new RegExp(`^model\\.${stack}_module\\.layers\\.(\\d+)\\.`);
    const layers = new Set(ck.names.map((n) => n.match(layer)?.[1]).filter((x) => x !== undefined));
    if (layers.size && layers.size !== c.num_layers_per_stack) {
      problems.push(`the ${stack} stack has ${layers.size} layers in the tensors but the config says ` +
        `${c.num_layers_per_stack} per stack (legacy configs give the per-stack count in num_hidden_layers; ` +
        'transformers-style ones add num_layers_per_stack)');
    }
  }
  const want = expectedTensors(c);
  const specs = new Map<string, QuantSpec>();
  for (const [name, shape] of want) {
    const m = name.slice(0, -'.weight'.length);
    const spec = moduleQuant(ck, quant, m, shape[0], shape[1], problems);
    if (spec) { specs.set(m, spec); continue; }
    // reported by moduleQuant
    if (ck.has(`${m}.scales`) || (ck.has(name) && ck.entry(name).dtype === 'U32')) continue;
    if (!ck.has(name)) { problems.push(`missing tensor '${name}' [${shape.join(', ')}]`); continue; }
    const e = ck.entry(name);
    if (e.shape.join(',') !== shape.join(',')) {
      problems.push(`tensor '${name}' has shape [${e.shape.join(', ')}], expected [${shape.join(', ')}]`);
    }
    if (!DTYPE[e.dtype]) problems.push(`tensor '${name}' has dtype ${e.dtype}; weights must be BF16, F16 or F32`);
  }
  if (quant && !specs.size && !problems.length) {
    problems.push(`config.json has a quantization block (${quant.default.bits} bits, group ` +
      `${quant.default.groupSize}) but no module of the checkpoint is quantized (no '<module>.scales')`);
  }
  if (ck.has('model.z_L_init')) {
    const e = ck.entry('model.z_L_init');
    const n = e.shape.reduce((x, d) => x * d, 1);
    if (n !== c.hidden_size) {
      problems.push(`tensor 'model.z_L_init' has shape [${e.shape.join(', ')}], expected ${c.hidden_size} values`);
    }
  }
  const known = (n: string) => want.has(n) || want.has(n.replace(/\.(scales|biases)$/, '.weight'));
  const extra = ck.names.filter((n) => !known(n) && n !== 'model.z_L_init' &&
    !(c.tie_word_embeddings && /^lm_head\.(weight|scales|biases)$/.test(n)));
  if (extra.length) {
    const more = extra.length > 8 ? `, ... (${extra.length} in all)` : '';
    problems.push(`unexpected tensor(s): ${extra.slice(0, 8).join(', ')}${more}`);
  }
  if (problems.length) throw new FormatError('checkpoint', `${where}:\n  - ${problems.join('\n  - ')}`);
  return specs;
}

/** Upload a [rows, cols] matrix from raw bytes, split into bindable row chunks. */
export function uploadWeight(gpu: Gpu, name: string, bytes: Uint8Array, rows: number, cols: number,
  dtype: DType): Weight {
  const rowBytes = (bytes.byteLength / rows) | 0;
  const per = chunkRows(gpu, rows, rowBytes);
  const chunks: Tensor[] = [];
  for (let r = 0; r < rows; r += per) {
    const n = Math.min(per, rows - r);
    chunks.push(Tensor.from(gpu, bytes.subarray(r * rowBytes, (r + n) * rowBytes), [n, cols], dtype,
      chunks.length ? `${name}#${chunks.length}` : name));
  }
  return { rows, cols, dtype, chunks };
}

export interface LoadOptions {
  /** Bytes read so far of the whole checkpoint, and its total. */
  onProgress?: Progress;
  /** Label used in errors (the checkpoint's path or URL). */
  where?: string;
  /** config.json's quantization block (parseQuantization), for checkpoints in MLX's quantized layout. */
  quantization?: QuantConfig | null;
  /**
   * Quantize dense weights on the GPU while loading, bit for bit mx.quantize (Metal rules; scales in the
   * checkpoint's dtype): every projection, the embedding and lm_head. Modules already quantized stay as stored.
   */
  quantize?: QuantSpec;
  /** Scan every weight for NaN and Inf on the GPU (one pass per tensor, default true); false skips it. */
  checkFinite?: boolean;
}

/** Throw one error naming every tensor that holds NaN or Inf (weights on the GPU, z_L_init on the CPU). */
async function checkFinite(named: Array<[string, Weight]>, zLInit: Float32Array, where: string): Promise<void> {
  // A quantized weight's levels are integers: its scales and biases are what can hold NaN or Inf.
  const matrices = named.flatMap(([name, w]): Array<[string, Tensor[]]> => w.quant
    ? [[name.replace(/\.weight$/, '.scales'), w.quant.scales], [name.replace(/\.weight$/, '.biases'), w.quant.biases]]
    : [[name, w.chunks]]);
  const parts = matrices.flatMap(([name, chunks]) => {
    let row = 0;
    return chunks.map((t) => ({ name, cols: t.shape[1], t, row: (row += t.shape[0]) - t.shape[0] }));
  });
  const counts = await countNonFinite(parts.map((p) => p.t));
  const bad = new Map<string, { count: number; first: number; cols: number }>();
  parts.forEach((p, i) => {
    const c = counts[i];
    if (!c.count) return;
    const b = bad.get(p.name) ?? { count: 0, first: p.row * p.cols + c.first, cols: p.cols };
    bad.set(p.name, { ...b, count: b.count + c.count });
  });
  const zBad = zLInit.reduce((n, x) => n + (Number.isFinite(x) ? 0 : 1), 0);
  if (zBad) bad.set('model.z_L_init',
    { count: zBad, first: zLInit.findIndex((x) => !Number.isFinite(x)), cols: zLInit.length });
  if (!bad.size) return;
  const lines = [...bad].map(([name,
    b]) => `tensor '${name}' holds ${b.count} NaN/Inf value${b.count > 1 ? 's' : ''}, ` +
    `the first at [${Math.floor(b.first / b.cols)}, ${b.first % b.cols}]`);
  throw new FormatError('checkpoint',
    `${where}: ${lines.join('; ')} (load with checkFinite: false to skip this check)`);
}

/** Validate and upload a checkpoint. */
export async function loadWeights(gpu: Gpu, ck: Checkpoint, c: HrmConfig, opts: LoadOptions = {}): Promise<HrmWeights> {
  const where = opts.where ?? 'checkpoint';
  const q = opts.quantize;
  if (q && !(QUANT_BITS.includes(q.bits) && GROUP_SIZES.includes(q.groupSize))) {
    throw new InputError('load',
      `quantize ${JSON.stringify(q)}: bits must be one of ${QUANT_BITS.join(', ')} and groupSize one of ` +
      `${GROUP_SIZES.join(', ')} (what mx.quantize offers)`);
  }
  const specs = validateCheckpoint(ck, c, where, opts.quantization ?? null);
  const total = ck.bytes;
  let done = 0;
  let bytes = 0;
  const loaded: Array<[string, Weight]> = [];
  const keep = (name: string, w: Weight): Weight => {
    bytes += weightBytes(w);
    loaded.push([name, w]);
    return w;
  };
  const read = async (name: string): Promise<Uint8Array> => {
    const raw = await readEntry(ck.entry(name), (l) => opts.onProgress?.(done + l, total));
    done += raw.byteLength;
    return raw;
  };
  const load = async (name: string): Promise<Weight> => {
    const m = name.slice(0, -'.weight'.length);
    const e = ck.entry(name);
    const spec = specs.get(m);
    if (spec) {
      const [rows, cols] = expectedTensors(c).get(name)!;
      const weight = await read(name);
      const raw = { weight, scales: await read(`${m}.scales`), biases: await read(`${m}.biases`) };
      return keep(name, uploadQuantized(gpu, m, raw, ck.entry(`${m}.scales`).dtype, rows, cols, spec));
    }
    let raw = await read(name);
    if (opts.quantize && e.shape[1] % opts.quantize.groupSize === 0) {
      return keep(name, quantizeOnLoad(gpu, m, e, raw, opts.quantize));
    }
    let dtype = DTYPE[e.dtype]!;
    if (name === 'model.embed_tokens.weight' && dtype === 'f16') {
      // The gather kernel reads bf16 or f32 tables; f16 widens to f32 exactly.
      raw = new Uint8Array((decode(e, raw) as Float32Array).buffer);
      dtype = 'f32';
    }
    return keep(name, uploadWeight(gpu, name, raw, e.shape[0], e.shape[1], dtype));
  };
  const layers = async (stack: 'L' | 'H'): Promise<LayerWeights[]> => {
    const out: LayerWeights[] = [];
    for (let l = 0; l < c.num_layers_per_stack; l++) {
      const p = `model.${stack}_module.layers.${l}`;
      out.push({
        gqkv: await load(`${p}.attn.gqkv_proj.weight`), o: await load(`${p}.attn.o_proj.weight`),
        gateUp: await load(`${p}.mlp.gate_up_proj.weight`), down: await load(`${p}.mlp.down_proj.weight`),
      });
    }
    return out;
  };
  // Whatever fails part-way (a download, a shard, the finite scan), the tensors uploaded so far are freed.
  try {
    const embed = await load('model.embed_tokens.weight');
    const lmHead = c.tie_word_embeddings ? embed : await load('lm_head.weight');
    let zLInit: Float32Array = new Float32Array(c.hidden_size);
    if (ck.has('model.z_L_init')) {
      const e = ck.entry('model.z_L_init');
      zLInit = decode(e, await readEntry(e)) as Float32Array;
    }
    const L = await layers('L');
    const H = await layers('H');
    if (opts.checkFinite ?? true) await checkFinite(loaded, zLInit, where);
    await gpu.flush('load weights');
    opts.onProgress?.(total, total);
    return { embed, lmHead, zLInit, L, H, bytes };
  } catch (e) {
    for (const [, w] of loaded) for (const t of weightTensors(w)) t.dispose();
    throw e;
  }
}

/** Free every GPU tensor of a model's weights (a tensor shared by two weights, as tied embeddings are, once). */
export function disposeWeights(w: HrmWeights): void {
  const all = [w.embed, w.lmHead, ...[...w.L, ...w.H].flatMap((l) => [l.gqkv, l.o, l.gateUp, l.down])];
  for (const x of new Set(all)) for (const t of weightTensors(x)) t.dispose();
}

/** Every GPU tensor of a weight (packed levels, scales and biases when quantized). */
export function weightTensors(w: Weight): Tensor[] {
  return w.quant ? [...w.chunks, ...w.quant.scales, ...w.quant.biases] : w.chunks;
}

/** The checkpoint name of every matrix of loaded weights (lm_head omitted when tied), in loading order. */
export function namedWeights(w: HrmWeights, c: HrmConfig): Array<[string, Weight]> {
  const out: Array<[string, Weight]> = [['model.embed_tokens', w.embed]];
  if (!c.tie_word_embeddings) out.push(['lm_head', w.lmHead]);
  for (const [stack, layers] of [['L', w.L], ['H', w.H]] as const) {
    layers.forEach((l, i) => {
      const p = `model.${stack}_module.layers.${i}`;
      out.push([`${p}.attn.gqkv_proj`, l.gqkv], [`${p}.attn.o_proj`, l.o], [`${p}.mlp.gate_up_proj`, l.gateUp],
        [`${p}.mlp.down_proj`, l.down]);
    });
  }
  return out;
}

/** Bytes a weight's tensors take on the GPU (packed levels, scales and biases when quantized). */
export function weightBytes(w: Weight): number {
  return weightTensors(w).reduce((x, t) => x + t.byteLength, 0);
}
