// Temporary copies of the embedded model with one thing changed: a shorter context, a smaller tokenizer.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BROWN } from '../../testkit/helpers/fixtures.ts';

/** A copy of tests/fixtures/hrm-text-brown-6m in a temporary folder, `edit` applied to its JSON files. */
export function brownCopy(edit: { config?: (c: Record<string, unknown>) => void; tokenizer?: (t: Tokenizer) => void }):
  string {
  const dir = mkdtempSync(join(tmpdir(), 'hrm-brown-'));
  for (const f of ['model.safetensors', 'tokenizer_config.json']) cpSync(join(BROWN, f), join(dir, f));
  for (const [f, fn] of [['config.json', edit.config], ['tokenizer.json', edit.tokenizer]] as const) {
    const json = JSON.parse(readFileSync(join(BROWN, f), 'utf8'));
    (fn as ((j: unknown) => void) | undefined)?.(json);
    writeFileSync(join(dir, f), JSON.stringify(json));
  }
  return dir;
}

interface Tokenizer { model: { vocab: Record<string, number>; merges: Array<[string, string]> } }

/** Drop the vocabulary's ids from `n` up, and the merges that make or use them (BPE then never produces them). */
export const keepIdsBelow = (n: number) => (t: Tokenizer) => {
  t.model.vocab = Object.fromEntries(Object.entries(t.model.vocab).filter(([, id]) => id < n));
  const has = (s: string) => s in t.model.vocab;
  t.model.merges = t.model.merges.filter(([a, b]) => has(a) && has(b) && has(a + b));
};
