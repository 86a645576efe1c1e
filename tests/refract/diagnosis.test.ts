// Diagnosis sentences per pattern (REFRACT score.interpret_pattern).
import { describe, expect, it } from 'vitest';
import { BAND_PROSE, DIAGNOSIS, interpretPattern, summaryProse } from '../../src/refract/diagnosis.ts';

describe('interpretPattern', () => {
  it('all clear when no axis is below 80',
    () => expect(interpretPattern({ gtm: 95, kld: 95 })).toEqual([DIAGNOSIS.allClear]));
  it('80 is not low',
    () => expect(interpretPattern({ gtm: 80, kld: 80, rniah: 80, plad: 80 })).toEqual([DIAGNOSIS.allClear]));
  it('catastrophic when every measured axis is below 60, and only that', () => {
    expect(interpretPattern({ gtm: 10, kld: 10, rniah: 10, plad: 10 })).toEqual([DIAGNOSIS.catastrophic]);
    expect(interpretPattern({ gtm: 20, kld: 20 })).toEqual([DIAGNOSIS.catastrophic]);
  });
  it('per-token distribution broken when A and B fail but C and D hold', () => {
    expect(interpretPattern({ gtm: 20, kld: 20, rniah: 95, plad: 95 })).toEqual([DIAGNOSIS.distributionBroken]);
  });
  it('mild short-context drift when only A or B is low, not both failing', () => {
    expect(interpretPattern({ gtm: 72, kld: 95, rniah: 95, plad: 95 })).toEqual([DIAGNOSIS.mildShort]);
    // The published Mistral-24B run (trajectory 76.65).
    expect(interpretPattern({ gtm: 76.65, kld: 99.71, rniah: 100, plad: 91.34 })[0])
      .toMatch(/^Mild short-context drift; long-context retrieval and perturbation robustness are intact\./);
  });
  it('says retrieval and robustness are intact only where R-NIAH and PLAD have a score (issue 33, item 8)', () => {
    const advice = 'Likely safe for typical use; audit on your specific decoding workload before shipping.';
    const rniah = 'Long-context retrieval (R-NIAH) was not measured';
    expect(interpretPattern({ gtm: 50, kld: 95 })).toEqual([
      `Mild short-context drift. ${rniah}; perturbation robustness (PLAD) was not measured. ${advice}`]);
    expect(interpretPattern({ gtm: 50, kld: 95, rniah: null, plad: 90 })).toEqual([
      `Mild short-context drift. ${rniah}; perturbation robustness is intact. ${advice}`]);
    const broken = interpretPattern({ gtm: 20, kld: 30, rniah: 95 });
    expect(broken).toEqual([expect.stringMatching(
      /^Per-token distribution is broken\. Long-context retrieval is intact; perturbation robustness \(PLAD\) was/)]);
    for (const s of [...broken, ...interpretPattern({ gtm: 50, kld: 95 })]) expect(s).not.toMatch(/\) are intact/);
  });
  it('one sentence per drifting surface otherwise', () => {
    expect(interpretPattern({ gtm: 95, kld: 95, rniah: 40, plad: 95 })).toEqual([DIAGNOSIS.longDrift]);
    expect(interpretPattern({ gtm: 95, kld: 95, rniah: 95, plad: 40 })).toEqual([DIAGNOSIS.brittle]);
    expect(interpretPattern({ gtm: 20, kld: 20, rniah: 20, plad: 95 })).toEqual([DIAGNOSIS.shortDrift,
      DIAGNOSIS.longDrift]);
    // The published Qwen2.5-7B run: trajectory 55.13, PLAD 76.73.
    expect(interpretPattern({ gtm: 55.13, kld: 98.75, rniah: 100, plad: 76.73 })).toEqual([
      'Decode distribution drift detected: the candidate generates different tokens than fp16 on short-context '
        + 'prompts.',
      'Brittleness to small input changes: candidate\'s output drifts more than fp16\'s under typo / casing / '
        + 'punctuation perturbations.',
    ]);
  });
  it('does not call all axes intact when A or B did not run (issue 42, item 8)', () => {
    expect(interpretPattern({ gtm: null, kld: 99, rniah: 100, plad: 95 })).toEqual([
      'No drift on the axes measured; trajectory (axis A) was not measured.']);
    expect(interpretPattern({ gtm: 99,
      kld: null })).toEqual(['No drift on the axes measured; KLD@D (axis B) was not measured.']);
  });
});

describe('summaryProse', () => {
  it('is the band\'s prose when A and B ran, and names the axis that did not instead of "safe to deploy"', () => {
    expect(summaryProse('EXCELLENT', { gtm: 95, kld: 99 })).toBe(BAND_PROSE.EXCELLENT);
    const kldOnly = summaryProse('EXCELLENT', { gtm: null, kld: 99 });
    expect(kldOnly).toBe('Indistinguishable from the reference on the axes measured; trajectory (axis A) not '
      + 'measured: run it before deploying.');
    expect(summaryProse('PASS', { gtm: 85, kld: null })).toMatch(/^Minor drift on the axes measured; KLD@D \(axis B\)/);
    for (const s of [kldOnly, summaryProse('PASS', { kld: 85 })]) expect(s).not.toMatch(/safe to deploy/i);
    expect(summaryProse('FAIL', { gtm: null, kld: 20 })).toBe(BAND_PROSE.FAIL);
  });
});
