// R-NIAH recalls on the embedded model (hrm-text-brown-6m) with the reference cache, and a control shows the hit
// comes from the needle. Why this setting: the 6.5 M Brown model does not copy a word from its prefix (the default
// needle's APRICOT-7-BLUE, "The secret word is house." asked as "The secret word is", "house house house" continued:
// the keyword's log-probability moves by < 0.5 nats, rank ~1000 of 2048). What it does do is pick up the prefix's
// topic: a needle that repeats one word 40 times raises that word after the question "The" (over 32 single-token
// nouns, 300-character haystack, position 0.9: mean +1.5 nats, median rank 270 -> 48), enough for greedy decoding to
// say it only for the strongest ones: "school" (+4.2 nats, first choice; 3 of 4 cells at lengths 160/256 x
// positions 0.5/0.9 found it, 0 of 4 with a "world" needle; "world" and "people" needles were found in none).
// Longer haystacks (~380 tokens) wash the effect out. So: keyword "school", a 160-token cell at position 0.9.
import { describe, expect, it } from 'vitest';
import { HrmBackend } from '../../src/refract/hrm-backend.ts';
import { defaultHaystack, runRniah } from '../../src/refract/index.ts';
import { getGpu } from '../helpers/gpu.ts';
import { model } from '../helpers/model.ts';

const repeated = (word: string) => `${Array(40).fill(word).join(' ')}.`;

describe('R-NIAH on the embedded model', { timeout: 300_000 }, () => {
  it('finds a repeated-keyword needle with the reference cache, not with a needle of another word; the q4 cell is reported', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const backend = new HrmBackend(lm, { condition: 'noisy' });
    const haystack = await defaultHaystack();
    const cell = { model: lm.name, reference: 'ctk=f16,ctv=f16', candidate: 'ctk=q4_0,ctv=q4_0', haystack, lengths: [160], positions: [0.9], nPredict: 4, question: 'The', needleKeyword: 'school' };
    const found = await runRniah(backend, { ...cell, needle: repeated('school') });
    const control = await runRniah(backend, { ...cell, needle: repeated('world') });
    expect(found.password_keyword).toBe('school');
    expect(found.skipped_cells).toEqual([]);
    expect(found.cells.map((c) => [c.length, c.position, c.n_trials])).toEqual([[160, 0.9, 1]]);
    expect(found.cells[0].base_acc, 'the reference finds "school" after a "school" needle').toBeGreaterThan(0);
    expect(control.cells[0].base_acc, 'and not after a "world" needle').toBe(0);
    // The q4_0 candidate's cell: its own hit rate, and the score from the degradation.
    const c = found.cells[0];
    expect(c.cand_acc).toBe(c.cand_hits);
    expect(c.degradation).toBe(Math.max(0, c.base_acc - c.cand_acc));
    expect(found.score).toBe(100 * (1 - c.degradation));
  });
});
