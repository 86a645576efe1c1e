// The fixture model's tokenizer and the Rust `tokenizers` library's ids for it (tokenizer-reference.json), which the
// tokenizer, prompt and streaming tests check against.
import { readFileSync } from 'node:fs';
import { HrmTokenizer } from '../../src/hrm/tokenizer.ts';
import { BROWN } from '../../testkit/helpers/fixtures.ts';

export interface Reference {
  plain: { text: string; nfc: string; ids: number[]; decoded: string }[];
  formatted: { text: string; condition: string; formatted: string; ids: number[] }[];
  prefix_decodes: { ids: number[]; decodes: string[] };
}

/** A file of the fixture model's folder, as text. */
export const readBrown = (name: string): string => readFileSync(BROWN + name, 'utf8');
export const ref = JSON.parse(readBrown('tokenizer-reference.json')) as Reference;
/** The fixture model's tokenizer, with its tokenizer_config.json and config.json. */
export const tok = new HrmTokenizer(readBrown('tokenizer.json'),
  { config: readBrown('tokenizer_config.json'), modelConfig: JSON.parse(readBrown('config.json')) });
