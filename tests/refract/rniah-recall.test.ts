// R-NIAH recalls on the embedded model (hrm-text-brown-6m) with the reference cache, and controls show the hit comes
// from the needle. Why this setting: the 6.5 M Brown model does not copy a word out of its prefix (the default
// needle's APRICOT-7-BLUE; "The secret word is house." asked as "The secret word is"; "house house house"
// continued: the keyword's log-probability moves by < 0.5 nats, rank ~1000 of 2048). What it does do is pick up the
// prefix's topic: a needle that repeats one word 40 times raises that word after the question "The" (32
// single-token nouns, 300-character haystack, position 0.9: mean +1.5 nats, median rank 270 -> 48), enough for
// greedy decoding to say it for the strongest: "school" (+4.2 nats, first choice). runRniah with that needle,
// lengths 128/160/192/256 x positions 0.1/0.5/0.9, 4 tokens: "school" in 10 of 12 cells (all but two at 256), in 0
// of 12 without a needle and 0 of 12 with a "world" needle. ("state" recalls as well, but "United States" hits it
// without any needle; "world" and "people" needles were found in none of 4 cells; a ~380-token haystack washes the
// effect out.) The flags that reach this setting from the command line are checked at the end.
import { describe, expect, it } from 'vitest';
import { scoreOptions } from '../../src/cli/refract-flags.ts';
import { HrmBackend } from '../../src/refract/hrm-backend.ts';
import { defaultHaystack, runRniah, type Backend } from '../../src/refract/index.ts';
import { InputError, UsageError } from '../../src/errors.ts';
import { getGpu } from '../helpers/gpu.ts';
import { model } from '../helpers/model.ts';

const repeated = (word: string) => `${Array(40).fill(word).join(' ')}.`;

// Six runs of two cells, each a 160-token prefill per cache: about 4 minutes on SwiftShader with another file beside it.
describe('R-NIAH on the embedded model', { timeout: 600_000 }, () => {
  it('finds a repeated-keyword needle with the reference cache, not without it or with another word; q4 cells reported', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const backend = new HrmBackend(lm, { condition: 'noisy' });
    const haystack = await defaultHaystack();
    const cells = { model: lm.name, reference: 'ctk=f16,ctv=f16', candidate: 'ctk=q4_0,ctv=q4_0', haystack, lengths: [160], positions: [0.5, 0.9], nPredict: 4, question: 'The', needleKeyword: 'school' };
    const found = await runRniah(backend, { ...cells, needle: repeated('school') });
    const baseAcc = async (needle: string) => (await runRniah(backend, { ...cells, needle })).cells.map((c) => c.base_acc);
    expect(found.password_keyword).toBe('school');
    expect(found.skipped_cells).toEqual([]);
    expect(found.cells.map((c) => [c.length, c.position, c.n_trials])).toEqual([[160, 0.5, 1], [160, 0.9, 1]]);
    const hits = found.cells.map((c) => c.base_acc);
    expect(Math.min(...hits), 'the reference finds "school" after a "school" needle in every cell').toBeGreaterThan(0);
    expect(await baseAcc(''), 'and never without a needle').toEqual([0, 0]);
    expect(await baseAcc(repeated('world')), 'nor after a "world" needle').toEqual([0, 0]);
    // The q4_0 candidate's cells: their own hit rates, and the score from the mean degradation.
    for (const c of found.cells) {
      expect(c.cand_acc).toBe(c.cand_hits);
      expect(c.degradation).toBe(Math.max(0, c.base_acc - c.cand_acc));
    }
    expect(found.score).toBeCloseTo(100 * (1 - (found.cells[0].degradation + found.cells[1].degradation) / 2), 12);
  });
});

describe('R-NIAH needle flags', () => {
  it('--rniah-needle / --rniah-question / --rniah-keyword reach runRniah; an empty one is a usage error naming it', async () => {
    const flags = { candidate: 'ctk=q4_0,ctv=q4_0', 'axis-rniah': true, 'rniah-needle': repeated('school'), 'rniah-question': 'The', 'rniah-keyword': 'school' };
    const o = await scoreOptions('score', flags, 512);
    expect(o.axes!.rniah).toMatchObject({ needle: repeated('school'), question: 'The', needleKeyword: 'school' });
    expect((await scoreOptions('score', { candidate: 'ctk=q4_0', 'axis-rniah': true }, 512)).axes!.rniah).toMatchObject({ needle: undefined, question: undefined, needleKeyword: undefined });
    for (const f of ['rniah-needle', 'rniah-question', 'rniah-keyword']) {
      const bad = scoreOptions('score', { ...flags, [f]: ' ' }, 512);
      await expect(bad).rejects.toThrow(UsageError);
      await expect(bad).rejects.toThrow(`[refract score] --${f} is empty`);
    }
  });
  it('runRniah refuses an empty keyword (every answer would be a hit) before running anything', async () => {
    const none = {} as Backend; // no method is called
    await expect(runRniah(none, { model: 'm', reference: 'ctk=f16', candidate: 'ctk=q4_0', haystack: 'x', needleKeyword: ' ' })).rejects.toThrow(InputError);
    await expect(runRniah(none, { model: 'm', reference: 'ctk=f16', candidate: 'ctk=q4_0', haystack: 'x', needle: '...' })).rejects.toThrow(/needle keyword is empty/);
  });
});
