// The config.json of tools/parity-1b/make.py's random HRM-Text-1B, written from src/hrm/config.ts's HRM_TEXT_1B so
// that the library's benchmark shape and the shape transformers is cross-checked at never disagree
// (tests/bench/parity-transformers.test.ts checks the committed file against this):
//   npx tsx tools/parity-1b/config.ts [--out tools/parity-1b/config.json]
// Transformers-style keys (num_hidden_layers counts every layer call, rope_parameters), as the embedded model's
// config.json has them: transformers' HrmTextConfig and our parseConfig both read it.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { HRM_TEXT_1B, stackCalls, type HrmConfig } from '../../src/hrm/config.ts';

/** config.json of `c` in the embedded model's layout. */
export function configJson(c: HrmConfig): Record<string, unknown> {
  return {
    model_type: 'hrm_text', architectures: ['HrmTextForCausalLM'],
    vocab_size: c.vocab_size, hidden_size: c.hidden_size, intermediate_size: c.intermediate_size,
    num_hidden_layers: c.num_layers_per_stack * stackCalls(c), num_layers_per_stack: c.num_layers_per_stack,
    num_attention_heads: c.num_attention_heads, num_key_value_heads: c.num_attention_heads, head_dim: c.head_dim,
    H_cycles: c.H_cycles, L_cycles: c.L_cycles, max_position_embeddings: c.max_position_embeddings,
    rms_norm_eps: c.rms_norm_eps, rope_parameters: { rope_type: 'default', rope_theta: c.rope_theta },
    initializer_range: 1 / c.embedding_scale, embedding_scale: c.embedding_scale, prefix_lm: c.prefix_lm,
    tie_word_embeddings: c.tie_word_embeddings, bos_token_id: c.bos_token_id, eos_token_id: c.eos_token_id,
    pad_token_id: c.pad_token_id, torch_dtype: 'bfloat16',
  };
}

export const CONFIG_PATH = 'tools/parity-1b/config.json';

if (process.argv[1]?.endsWith('parity-1b/config.ts')) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: CONFIG_PATH } } });
  writeFileSync(values.out!, JSON.stringify(configJson(HRM_TEXT_1B), null, 2) + '\n');
  console.log(`wrote ${values.out}`);
}
