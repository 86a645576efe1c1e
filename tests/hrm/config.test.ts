import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { HRM_TEXT_1B, cacheSlots, parameterCount, parseConfig } from '../../src/hrm/config.ts';
import { FormatError } from '../../src/errors.ts';
import { BROWN, FIXTURES } from '../../testkit/helpers/fixtures.ts';

const json = (p: string) => JSON.parse(readFileSync(p, 'utf8'));

describe('config', () => {
  it('reads the legacy layout (num_hidden_layers per stack, embedding_scale, rope_theta)', () => {
    const c = parseConfig(json(FIXTURES + 'hrm-tiny-a/config.json'));
    expect(c.num_layers_per_stack).toBe(2);
    expect(c.embedding_scale).toBeCloseTo(11.313708498984761, 12);
    expect(c.rope_theta).toBe(10000);
    expect([c.H_cycles, c.L_cycles, c.head_dim, c.num_attention_heads]).toEqual([2, 2, 64, 2]);
    expect(cacheSlots(c)).toBe(2 * 3 * 2);
  });

  it('reads the transformers layout (num_layers_per_stack, rope_parameters, 1/initializer_range)', () => {
    const c = parseConfig(json(FIXTURES + 'hrm-tiny-b/config.json'));
    expect(c.num_layers_per_stack).toBe(2);
    expect(c.embedding_scale).toBe(16);
    expect(c.rope_theta).toBe(10000);
    const b = parseConfig(json(BROWN + 'config.json'));
    expect(b.num_layers_per_stack).toBe(3);
    expect(cacheSlots(b)).toBe(24);
  });

  it('knows the 1B shape: 1.18 B parameters and 128 cache slots', () => {
    expect(parameterCount(HRM_TEXT_1B)).toBe(1182795264);
    expect(cacheSlots(HRM_TEXT_1B)).toBe(128);
    expect(HRM_TEXT_1B.embedding_scale).toBeCloseTo(39.19, 2);
  });

  it('names the key that is wrong', () => {
    const base = json(FIXTURES + 'hrm-tiny-b/config.json');
    const { rope_parameters: _r, ...noRope } = base;
    expect(() => parseConfig(noRope)).toThrow(/rope_theta/);
    const { initializer_range: _i, ...noScale } = base;
    expect(() => parseConfig(noScale)).toThrow(/embedding_scale.*initializer_range/);
    expect(() => parseConfig({ ...base, num_key_value_heads: 1 })).toThrow(/grouped-query/);
    expect(() => parseConfig({ ...base,
      hidden_size: 'big' })).toThrow(/'hidden_size' must be a positive integer \(got "big"\)/);
    expect(() => parseConfig({ ...base, model_type: 'llama' })).toThrow(FormatError);
    expect(() => parseConfig([])).toThrow(/not a JSON object/);
  });

  it('refuses keys of the wrong type, naming config.json and the key (lists of ids are valid)', () => {
    const base = json(FIXTURES + 'hrm-tiny-b/config.json');
    const bad = (patch: object) => () => parseConfig({ ...base, ...patch }, 'm/config.json');
    expect(bad({ eos_token_id: '11' }))
      .toThrow(/^\[config\] m\/config\.json: 'eos_token_id' must be a token id or a list of token ids \(got "11"\)$/);
    expect(bad({ bos_token_id: 6.5 })).toThrow(/m\/config\.json: 'bos_token_id' must be a token id/);
    expect(bad({ pad_token_id: [5,
      'x'] })).toThrow(/'pad_token_id' must be a token id or a list of token ids \(got \[5,"x"\]\)/);
    expect(bad({ eos_token_id: 1024 }))
      .toThrow(/'eos_token_id' 1024 is outside the vocabulary \[0, 1024\) of vocab_size/);
    expect(bad({ prefix_lm: 'yes' })).toThrow(/'prefix_lm' must be true or false \(got "yes"\)/);
    expect(bad({ tie_word_embeddings: 1 })).toThrow(/'tie_word_embeddings' must be true or false/);
    expect(bad({ rope_parameters: 'default' })).toThrow(/'rope_parameters' must be an object/);
    const list = parseConfig({ ...base, eos_token_id: [11, 7] });
    expect([list.eos_token_id, list.eos_token_ids]).toEqual([11, [11, 7]]);
    const none = parseConfig({ ...base, eos_token_id: null });
    expect([none.eos_token_id, none.eos_token_ids]).toEqual([null, []]);
  });

  it('refuses values a kernel would trip on, naming config.json and the key', () => {
    const base = json(FIXTURES + 'hrm-tiny-b/config.json');
    const bad = (patch: object) => () => parseConfig({ ...base, ...patch }, 'm/config.json');
    expect(bad({ rope_parameters: { rope_type: 'default',
      rope_theta: 0 } })).toThrow(/m\/config\.json rope_parameters: 'rope_theta' must be a number > 0 \(got 0\)/);
    expect(bad({ rope_theta: -1 })).toThrow(/m\/config\.json: 'rope_theta' must be a number > 0 \(got -1\)/);
    expect(bad({ rms_norm_eps: -1e-6 }))
      .toThrow(/m\/config\.json: 'rms_norm_eps' must be a number in \[0, 1\) \(got -0\.000001\)/);
    expect(bad({ initializer_range: 0 })).toThrow(/'initializer_range' must be a number > 0 \(got 0\)/);
    expect(bad({ max_position_embeddings: 0 }))
      .toThrow(/'max_position_embeddings' must be a positive integer \(got 0\)/);
    expect(parseConfig({ ...base, rms_norm_eps: 0 }).rms_norm_eps).toBe(0);
  });

  it('trusts num_layers_per_stack over a stale num_hidden_layers and says so (as transformers)', () => {
    const base = json(FIXTURES + 'hrm-tiny-b/config.json');
    const warnings: string[] = [];
    const c = parseConfig({ ...base, num_layers_per_stack: 1, num_hidden_layers: 12, H_cycles: 3, L_cycles: 1 },
      'm/config.json', (m) => warnings.push(m));
    expect(c.num_layers_per_stack).toBe(1);
    expect(cacheSlots(c)).toBe(6);
    expect(warnings).toEqual(['m/config.json: num_hidden_layers 12 is neither num_layers_per_stack 1 nor '
      + 'num_layers_per_stack * H_cycles * (L_cycles + 1) = 6; using num_layers_per_stack 1']);
    parseConfig(base, 'm/config.json', (m) => warnings.push(m));
    expect(warnings.length).toBe(1); // a consistent config says nothing
  });
});
