// Trajectory diffs and the axis score formula.
import { describe, expect, it } from 'vitest';
import { diffTrajectories, median } from '../../src/refract/axes/trajectory.ts';

describe('diffTrajectories', () => {
  it('identical: no divergence, full-length prefix',
    () => expect(diffTrajectories([1, 2, 3], [1, 2, 3])).toEqual({ firstDivergence: null, prefixLength: 3 }));
  it('first differing index',
    () => expect(diffTrajectories([1, 2, 3, 4], [1, 2, 9, 4])).toEqual({ firstDivergence: 2, prefixLength: 2 }));
  it('differs at 0', () => expect(diffTrajectories([5], [6])).toEqual({ firstDivergence: 0, prefixLength: 0 }));
  it('candidate is a prefix of the reference: the shorter length',
    () => expect(diffTrajectories([1, 2, 3], [1, 2])).toEqual({ firstDivergence: 2, prefixLength: 2 }));
  it('reference is a prefix of the candidate: the shorter length',
    () => expect(diffTrajectories([1], [1, 2, 3])).toEqual({ firstDivergence: 1, prefixLength: 1 }));
  it('one empty', () => {
    expect(diffTrajectories([], [7, 8])).toEqual({ firstDivergence: 0, prefixLength: 0 });
    expect(diffTrajectories([7], [])).toEqual({ firstDivergence: 0, prefixLength: 0 });
  });
  it('both empty: identical',
    () => expect(diffTrajectories([], [])).toEqual({ firstDivergence: null, prefixLength: 0 }));
  it('reproduces a published per-prompt record', async () => {
    const { readFileSync } = await import('node:fs');
    const rep = JSON.parse(readFileSync(new URL('../../data/refract/example-report-degraded-qwen7b.json',
      import.meta.url), 'utf8').replace(/\bNaN\b/g, 'null'));
    for (const p of rep.axes.gtm.per_prompt) {
      const d = diffTrajectories(p.ref_token_ids, p.cand_token_ids);
      expect([d.firstDivergence, d.prefixLength]).toEqual([p.first_divergence, p.prefix_agreement_length]);
    }
    // score = 100 * mean(prefix) / mean(cand length)
    const pp = rep.axes.gtm.per_prompt as { prefix_agreement_length: number; cand_length: number }[];
    const score = (100 * pp.reduce((s, p) => s + p.prefix_agreement_length, 0)) / pp.reduce((s, p) => s +
      p.cand_length, 0);
    expect(score).toBeCloseTo(rep.axes.gtm.score, 10);
  });
});

describe('median (Python statistics.median)', () => {
  it('odd and even counts', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([25, 26, 1, 40])).toBe(25.5);
  });
});
