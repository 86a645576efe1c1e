// R-NIAH's default needle on the embedded model (hrm-text-brown-10m, trained to read its context). REFRACT's default
// cells start at 4096 tokens (its whole context), about 3 minutes a completion on the CPU driver; the 1024-token
// cells take about 45 s a completion (each cell runs the reference and the candidate), so two of them run here,
// the default positions at either end (0.5 is the control's): with the full cache it answers APRICOT-7-BLUE (the
// default keyword, whole) in both. A needle it never saw in training, in the middle, gets that needle's own code
// back and not APRICOT's: it reads the code from its context. The q4_0 candidate's cells are
// scored from their own hits. The flags that reach these options from the command line are checked at the end.
import { describe, expect, it } from 'vitest';
import { scoreOptions } from '../../src/cli/refract-flags.ts';
import { HrmBackend } from '../../src/refract/hrm-backend.ts';
import { buildRniahPrompt, DEFAULT_QUESTION, defaultHaystack, runRniah,
  type Backend } from '../../src/refract/index.ts';
import { InputError, UsageError } from '../../src/errors.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { EMBEDDED } from '../../testkit/helpers/fixtures.ts';
import { getGpu } from '../helpers/gpu.ts';

const repeated = (word: string) => `${Array(40).fill(word).join(' ')}.`;

// Five completions of a 1024-token prompt (16 tokens each), about 45 s each alone on lavapipe, twice that beside
// another test file, more on a loaded machine.
describe('R-NIAH on the embedded model', { timeout: 1_500_000 }, () => {
  it("finds the default needle at 1024 tokens at 0.1 and 0.9, and an unseen needle's own code at 0.5", async () => {
    const lm = await loadModel(dirFiles(EMBEDDED), { gpu: await getGpu(), dtype: 'f32' });
    try {
      const backend = new HrmBackend(lm); // the default condition, as `refract score` runs it
      const haystack = await defaultHaystack();
      const found = await runRniah(backend,
        { model: lm.name, reference: 'ctk=f16,ctv=f16', candidate: 'ctk=q4_0,ctv=q4_0', haystack, lengths: [1024],
        positions: [0.1, 0.9], nPredict: 16 });
      expect(found.password_keyword).toBe('APRICOT-7-BLUE');
      expect(found.skipped_cells).toEqual([]);
      expect(found.cells.map((c) => [c.length, c.position])).toEqual([[1024, 0.1], [1024, 0.9]]);
      expect(found.cells.map((c) => c.base_acc), 'the full cache finds APRICOT-7-BLUE in both cells').toEqual([1, 1]);
      for (const c of found.cells) expect(c.degradation).toBe(Math.max(0, c.base_acc - c.cand_hits));
      const mean = found.cells.reduce((a, c) => a + c.degradation, 0) / found.cells.length;
      expect(found.score).toBeCloseTo(100 * (1 - mean), 12);

      // About a 1024-token cell's haystack (2626 characters at this tokenizer's 2.77 a token), another code in the
      // needle.
      const chunk = haystack.slice(0, 2600);
      const { system, user } = buildRniahPrompt(chunk,
        'Note: QUINCE-4-GRAY is the rare paint color featured in this article.', DEFAULT_QUESTION, 0.5);
      const { text } = await backend.runCompletion({ model: lm.name, prompt: user, system, applyChatTemplate: true,
        nPredict: 16, ctx: 1024 + 48, seed: 0, kvConfig: 'ctk=f16,ctv=f16' });
      expect(text, 'an unseen code is read back').toContain('QUINCE-4-GRAY');
      expect(text, 'and the default one is not said instead').not.toContain('APRICOT');
    } finally {
      lm.model.dispose();
    }
  });
});

describe('R-NIAH needle flags', () => {
  it('--rniah-needle / --rniah-question / --rniah-keyword reach runRniah; an empty one is a usage error naming it',
    async () => {
    const flags = { candidate: 'ctk=q4_0,ctv=q4_0', 'axis-rniah': true, 'rniah-needle': repeated('school'),
      'rniah-question': 'The', 'rniah-keyword': 'school' };
    const o = await scoreOptions('score', flags, 512);
    expect(o.axes!.rniah).toMatchObject({ needle: repeated('school'), question: 'The', needleKeyword: 'school' });
    expect((await scoreOptions('score', { candidate: 'ctk=q4_0', 'axis-rniah': true },
      512)).axes!.rniah).toMatchObject({ needle: undefined, question: undefined, needleKeyword: undefined });
    for (const f of ['rniah-needle', 'rniah-question', 'rniah-keyword']) {
      const bad = scoreOptions('score', { ...flags, [f]: ' ' }, 512);
      await expect(bad).rejects.toThrow(UsageError);
      await expect(bad).rejects.toThrow(`[refract score] --${f} is empty`);
    }
  });
  it('runRniah refuses an empty keyword (every answer would be a hit) before running anything', async () => {
    const none = {} as Backend; // no method is called
    await expect(runRniah(none,
      { model: 'm', reference: 'ctk=f16', candidate: 'ctk=q4_0', haystack: 'x',
      needleKeyword: ' ' })).rejects.toThrow(InputError);
    await expect(runRniah(none,
      { model: 'm', reference: 'ctk=f16', candidate: 'ctk=q4_0', haystack: 'x',
      needle: '...' })).rejects.toThrow(/needle keyword is empty/);
  });
});
