// Generation at the model's limits: a context that fills before maxTokens, a tokenizer smaller than the model.
import { describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { generateText } from '../../src/index.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { disposeWeights } from '../../src/hrm/weights.ts';
import { getGpu } from '../helpers/gpu.ts';
import { brownCopy, keepIdsBelow } from '../helpers/brown-variants.ts';

describe('generation at the model\'s limits', () => {
  it('a generation cut by the context stops with "context", one cut by maxTokens with "max_tokens"', async () => {
    const ctx = 24;
    const dir = brownCopy({ config: (c) => { c.max_position_embeddings = ctx; } });
    const lm = await loadModel(dirFiles(dir), { gpu: await getGpu() });
    try {
      const long = await generateText(lm, 'The jury said', { maxTokens: 100_000 });
      const prompt = long.stats.promptTokens;
      expect(long.stats.stopReason).toBe('context');
      // Every position of the context used: the prompt, then one forward per token but the last one sampled.
      expect(prompt + long.stats.decodeTokens).toBe(ctx);
      expect(long.stats.ids).toHaveLength(ctx - prompt + 1);
      // Asking exactly for what fits (or less) is maxTokens' cut, with the same tokens.
      for (const maxTokens of [ctx - prompt + 1, ctx - prompt]) {
        const r = await generateText(lm, 'The jury said', { maxTokens });
        expect(r.stats.stopReason, `maxTokens ${maxTokens}`).toBe('max_tokens');
        expect(r.stats.ids).toEqual(long.stats.ids.slice(0, maxTokens));
      }
    } finally {
      disposeWeights(lm.model.weights);
      rmSync(dir, { recursive: true });
    }
  });

  it('a tokenizer smaller than the model: warned of at load; the id past it names tokenizer.json', async () => {
    const dir = brownCopy({ tokenizer: keepIdsBelow(1024) });
    const warnings: string[] = [];
    const lm = await loadModel(dirFiles(dir), { gpu: await getGpu(), warn: (m) => warnings.push(m) });
    try {
      expect(warnings).toEqual([`${dir}/tokenizer.json has 1024 ids, fewer than the model's vocab_size 2048 ` +
        '(config.json); generating fails at the first id from 1024 up (logits are unaffected)']);
      const err = await generateText(lm, 'The jury said', { maxTokens: 64 }).then(() => null, (e: Error) => e);
      const m = /^\[decode\] id (\d+) at index \d+ is not in the vocabulary \[0, 1024\) of (.*)$/
        .exec(err?.message ?? 'no error');
      expect(m, err?.message).not.toBeNull();
      expect(Number(m![1])).toBeGreaterThanOrEqual(1024);
      expect(Number(m![1])).toBeLessThan(2048);
      expect(m![2]).toBe(`${dir}/tokenizer.json`);
    } finally {
      disposeWeights(lm.model.weights);
      rmSync(dir, { recursive: true });
    }
  });
});
