import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { HRM_TEXT_1B, cacheSlots, parameterCount, parseConfig } from '../../src/hrm/config.ts';
import { FormatError } from '../../src/tensor/errors.ts';
import { BROWN, FIXTURES } from '../helpers/fixtures.ts';

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
    expect(() => parseConfig({ ...base, num_hidden_layers: 15 })).toThrow(/num_hidden_layers 15 is neither num_layers_per_stack 2 nor .* = 16/);
    const { rope_parameters: _r, ...noRope } = base;
    expect(() => parseConfig(noRope)).toThrow(/rope_theta/);
    const { initializer_range: _i, ...noScale } = base;
    expect(() => parseConfig(noScale)).toThrow(/embedding_scale.*initializer_range/);
    expect(() => parseConfig({ ...base, num_key_value_heads: 1 })).toThrow(/grouped-query/);
    expect(() => parseConfig({ ...base, hidden_size: 'big' })).toThrow(/'hidden_size' must be a number/);
    expect(() => parseConfig({ ...base, model_type: 'llama' })).toThrow(FormatError);
    expect(() => parseConfig([])).toThrow(/not a JSON object/);
  });
});
