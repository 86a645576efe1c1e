// PLAD: CPython's RNG, each perturbation with fixed seeds, the published perturbed prompts, Levenshtein, drift.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { applyCase, applyParaphrase, applyPunct, applyTypo, DEFAULT_PERTURBATIONS, levenshtein, normalizedDrift,
  perturb } from '../../src/refract/axes/plad.ts';
import { PROMPTS_V01 } from '../../src/refract/prompts.ts';
import { PyRandom } from '../../src/refract/pyrandom.ts';

describe('PyRandom (values from CPython 3.11 random.Random)', () => {
  it('MT19937 outputs after init_by_array seeding', () => {
    const r = new PyRandom(42);
    expect([r.uint32(), r.uint32(), r.uint32()]).toEqual([2746317213, 478163327, 107420369]);
    const big = new PyRandom(2 ** 40 + 5); // two-word key
    expect([big.uint32(), big.uint32()]).toEqual([2166296868, 2220160828]);
    const zero = new PyRandom(0);
    expect([zero.uint32(), zero.uint32()]).toEqual([3626764237, 1654615998]);
  });
  it('_randbelow by rejection, choice, randrange', () => {
    const r = new PyRandom(7);
    expect(Array.from({ length: 10 }, () => r.randbelow(5))).toEqual([2, 1, 3, 0, 0, 4, 0, 2, 4, 0]);
    expect([r.randbelow(1), r.randbelow(1), r.randbelow(1)]).toEqual([0, 0, 0]);
    expect(r.uint32()).toBe(1862494042);
    const s = new PyRandom(42);
    expect([s.choice(['capital', 'France']), s.randrange(0, 6)]).toEqual(['capital', 0]);
  });
});

describe('perturbations', () => {
  it('typo swaps two adjacent letters of a non-stopword of >= 4 letters', () => {
    expect(applyTypo('The capital of France is', new PyRandom(42))).toBe('The acpital of France is');
    expect(applyTypo('The largest ocean on Earth is the', new PyRandom(43))).toBe('The lagrest ocean on Earth is the');
    // Values from the original's _apply_typo under CPython for seeds 0..4.
    expect([0, 1, 2, 3, 4].map((s) => applyTypo('Build a small rocket quickly', new PyRandom(s)))).toEqual([
      'Build a small rocket quikcly', 'Build a msall rocket quickly', 'uBild a small rocket quickly',
      'Build a samll rocket quickly', 'Build a smlal rocket quickly',
    ]);
    expect(applyTypo('Two is odd', new PyRandom(1))).toBeNull(); // no eligible word
    expect(applyTypo('a bb the', new PyRandom(1))).toBeNull();
  });
  it('typo gives null when it swaps two equal letters (one RNG shared, as in CPython)', () => {
    const r = new PyRandom(3);
    expect(Array.from({ length: 8 }, () => applyTypo('keep', r))).toEqual(['kepe', null, 'kepe', 'kepe', null, 'kepe',
      'ekep', 'kepe']);
  });
  it('case lowercases first letters of capitalised words of >= 2 letters', () => {
    expect(applyCase('The capital of France is')).toBe('the capital of france is');
    expect(applyCase('I met A. Smith')).toBe('I met A. smith');
    expect(applyCase('all lower')).toBeNull();
  });
  it('punct drops a trailing ? or . (keeping trailing space), else adds ?', () => {
    expect(applyPunct('Who is it?')).toBe('Who is it');
    expect(applyPunct('The end. \n')).toBe('The end \n');
    expect(applyPunct('The capital of France is')).toBe('The capital of France is?');
    expect(applyPunct('def fib(n):\n    ')).toBe('def fib(n):?\n    ');
  });
  it('paraphrase swaps one synonym, keeping a capital first letter', () => {
    // Values from the original's _apply_paraphrase under CPython.
    expect(applyParaphrase('Make a big house', new PyRandom(0))).toBe('Make a large house');
    expect(applyParaphrase('Quick start', new PyRandom(5))).toBe('Quick begin');
    expect(applyParaphrase('big small', new PyRandom(0))).toBe('big tiny');
    expect(applyParaphrase('Please find the big, happy Display',
      new PyRandom(11))).toBe('Please find the big, happy Show');
    expect(applyParaphrase('nothing here', new PyRandom(5))).toBeNull();
  });

  // Both published reports ran PLAD with seed 42: every perturbed prompt they record must come out identical,
  // and exactly the pairs they skipped (36) must be skipped here.
  it('reproduces every perturbed prompt of the published reports', () => {
    for (const file of ['example-report-clean-mistral24b.json', 'example-report-degraded-qwen7b.json']) {
      const rep = JSON.parse(readFileSync(new URL(`../../data/refract/${file}`, import.meta.url),
        'utf8').replace(/\bNaN\b/g, 'null'));
      type Row = { prompt_id: string; perturbation: string; perturbed_prompt: string };
      const published = new Map<string, string>(rep.axes.plad.per_prompt
        .map((r: Row) => [`${r.prompt_id}/${r.perturbation}`, r.perturbed_prompt]));
      const ours = new Map<string, string>();
      let skipped = 0;
      PROMPTS_V01.forEach((p, i) => {
        const rng = new PyRandom(42 + i);
        for (const kind of DEFAULT_PERTURBATIONS) {
          const out = perturb(kind, p.prompt, rng);
          if (out === null || out === p.prompt) skipped++;
          else ours.set(`${p.id}/${kind}`, out);
        }
      });
      expect(ours).toEqual(published);
      expect(skipped).toBe(36);
    }
  });
});

describe('levenshtein and drift', () => {
  it('edit distances', () => {
    expect(levenshtein([], [])).toBe(0);
    expect(levenshtein([], [1, 2, 3])).toBe(3);
    expect(levenshtein([1, 2], [])).toBe(2);
    expect(levenshtein([1, 2, 3], [1, 2, 3])).toBe(0);
    expect(levenshtein([1, 2, 3], [1, 9, 3])).toBe(1); // substitute
    expect(levenshtein([1, 2, 3], [1, 3])).toBe(1); // delete
    expect(levenshtein([1, 3], [1, 2, 3])).toBe(1); // insert
    expect(levenshtein([1, 2, 3, 4], [2, 1, 4, 3])).toBe(3);
    // kitten -> sitting = 3, on character codes
    const ids = (s: string) => Array.from(s, (c) => c.charCodeAt(0));
    expect(levenshtein(ids('kitten'), ids('sitting'))).toBe(3);
    expect(levenshtein(ids('flaw'), ids('lawn'))).toBe(2);
  });
  it('normalized drift: min(1, lev / len(anchor)); both empty 0; empty anchor 1', () => {
    expect(normalizedDrift([1, 2, 3, 4], [1, 2, 3, 5])).toBe(0.25);
    expect(normalizedDrift([1, 2], [3, 4, 5, 6, 7])).toBe(1);
    expect(normalizedDrift([], [])).toBe(0);
    expect(normalizedDrift([], [1])).toBe(1);
  });
  it('plad_pp = 100 exp(-5 excess) matches a published record', () => {
    // fact-003/typo in the Mistral report: ref 0, cand 0.35714285714285715 -> 16.767724875179706
    expect(100 * Math.exp(-5 * 0.35714285714285715)).toBeCloseTo(16.767724875179706, 10);
  });
});
