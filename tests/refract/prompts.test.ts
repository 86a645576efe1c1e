// The prompt module equals REFRACT's prompts-v0.1.jsonl.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parsePromptsJsonl, PROMPTS_V01 } from '../../src/refract/prompts.ts';
import { InputError } from '../../src/errors.ts';

const jsonl = readFileSync(new URL('../../data/refract/prompts-v0.1.jsonl', import.meta.url), 'utf8');

describe('prompts', () => {
  it('PROMPTS_V01 equals data/refract/prompts-v0.1.jsonl row by row', () => {
    const rows = jsonl.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
    expect(PROMPTS_V01).toEqual(rows);
    expect(PROMPTS_V01).toHaveLength(30);
    expect(new Set(PROMPTS_V01.map((p) => p.category))).toEqual(new Set(['factual', 'arithmetic', 'code', 'reasoning',
      'instruction', 'dialogue']));
  });
  it('parsePromptsJsonl reads the file, skipping comments and blank lines', () => {
    expect(parsePromptsJsonl(`# header\n\n${jsonl}`)).toEqual(PROMPTS_V01);
  });
  it('parsePromptsJsonl rejects bad rows', () => {
    expect(() => parsePromptsJsonl('{"id": "x"}')).toThrow(InputError);
    expect(() => parsePromptsJsonl('not json')).toThrow(/\[prompts\] line 1 is not JSON/);
    expect(() => parsePromptsJsonl('\n# only\n')).toThrow(/no prompts/);
  });
});
