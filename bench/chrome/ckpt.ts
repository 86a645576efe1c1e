// A checkpoint of the HRM-Text-1B shape (or another config's) with random weights, written as a model folder the
// demo can load from a URL
// (bench/chrome/run.ts serves it on 127.0.0.1): config.json, the embedded model's tokenizer with its BPE vocabulary
// padded to the 1B vocab_size by tokens `<r2048>`... (random weights pick any id; the tokenizer refuses to decode
// ids it lacks), model.safetensors of 2.4 GB of bf16 written tensor by tensor (no 2.4 GB buffer): uniform in
// +-1/sqrt(fan_in), embeddings +-0.02, as randomWeights draws them on a GPU.
import { closeSync, copyFileSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { HRM_TEXT_1B, parseConfig, type HrmConfig } from '../../src/hrm/config.ts';
import { expectedTensors } from '../../src/hrm/layout.ts';

const CHUNK = 1 << 23; // values drawn per write: 16 MiB of bf16

/** config.json for `c` (legacy form: num_hidden_layers = layers per stack). */
function configJson(c: HrmConfig): Record<string, unknown> {
  return {
    model_type: 'hrm_text', vocab_size: c.vocab_size, hidden_size: c.hidden_size,
    intermediate_size: c.intermediate_size,
    num_hidden_layers: c.num_layers_per_stack, num_attention_heads: c.num_attention_heads, head_dim: c.head_dim,
    H_cycles: c.H_cycles, L_cycles: c.L_cycles, rope_theta: c.rope_theta, rms_norm_eps: c.rms_norm_eps,
    max_position_embeddings: c.max_position_embeddings, embedding_scale: c.embedding_scale, prefix_lm: c.prefix_lm,
    tie_word_embeddings: c.tie_word_embeddings, bos_token_id: c.bos_token_id, eos_token_id: c.eos_token_id,
    pad_token_id: c.pad_token_id, torch_dtype: 'bfloat16',
  };
}

/**
 * Write the folder `dir` for config `c` (default the 1B shape) from the tokenizer files in `tokenizerDir`; returns
 * model.safetensors' size in bytes.
 */
export function writeRandomCheckpoint(dir: string, tokenizerDir: string, c: HrmConfig = HRM_TEXT_1B, seed = 1): number {
  const json = configJson(c);
  if (JSON.stringify(parseConfig(json, 'config.json')) !== JSON.stringify(c)) {
    throw new Error('[chrome-ckpt] config.json does not parse back to the config');
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(json, null, 2) + '\n');
  copyFileSync(join(tokenizerDir, 'tokenizer_config.json'), join(dir, 'tokenizer_config.json'));
  type Tok = { model: { vocab: Record<string, number> } };
  const tok = JSON.parse(readFileSync(join(tokenizerDir, 'tokenizer.json'), 'utf8')) as Tok;
  for (let id = Object.keys(tok.model.vocab).length; id < c.vocab_size; id++) tok.model.vocab[`<r${id}>`] = id;
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tok));
  const tensors = [...expectedTensors(c)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [name, shape] of tensors) {
    const bytes = shape[0] * shape[1] * 2;
    header[name] = { dtype: 'BF16', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let text = JSON.stringify(header);
  text += ' '.repeat((8 - (Buffer.byteLength(text) % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(text)));
  const fd = openSync(join(dir, 'model.safetensors'), 'w');
  try {
    writeSync(fd, len);
    writeSync(fd, text);
    const f = new Float32Array(CHUNK);
    const u = new Uint32Array(f.buffer);
    const half = new Uint16Array(CHUNK);
    let s = (seed * 2654435761) >>> 0 || 1;
    for (const [name, [rows, cols]] of tensors) {
      const scale = name.includes('embed_tokens') ? 0.02 : 1 / Math.sqrt(cols);
      for (let left = rows * cols; left > 0; left -= CHUNK) {
        const n = Math.min(CHUNK, left);
        for (let i = 0; i < n; i++) {
          s ^= s << 13; s ^= s >>> 17; s ^= s << 5; // xorshift32
          f[i] = ((s >>> 0) / 2147483648 - 1) * scale;
          half[i] = u[i] >>> 16; // bf16: the f32's top half
        }
        writeSync(fd, half, 0, n * 2);
      }
    }
  } finally {
    closeSync(fd);
  }
  return 8 + Buffer.byteLength(text) + offset;
}
