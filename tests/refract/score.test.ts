// Composite, bands and repeatability: hand-computed cases (REFRACT score.py and its tests).
import { describe, expect, it } from 'vitest';
import { band, compositeScore, harmonicMean, MIN_FLOOR, repeatabilityBand, repeatabilityStats,
  spread } from '../../src/refract/score.ts';

describe('harmonicMean', () => {
  it('is 0 for no values', () => expect(harmonicMean([])).toBe(0));
  it('is the value itself for one value', () => expect(harmonicMean([42])).toBeCloseTo(42, 12));
  it('is 0 when any value is 0', () => expect(harmonicMean([100, 100, 0])).toBe(0));
  it('clips negatives to 0, which then dominates', () => expect(harmonicMean([100, -5])).toBe(0));
  it('clamps to 100', () => expect(harmonicMean([200, 200])).toBe(100));
  it('is n / sum(1/v)', () => {
    expect(harmonicMean([90, 30])).toBeCloseTo(45, 12); // 2 / (1/90 + 1/30)
    expect(harmonicMean([99, 100, 90])).toBeCloseTo(3 / (1 / 99 + 1 / 100 + 1 / 90), 12);
  });
  it('is 0 for NaN input rather than NaN', () => expect(harmonicMean([Number.NaN, 50])).toBe(0));
});

describe('band', () => {
  it.each([
    [100, 'EXCELLENT'], [90, 'EXCELLENT'], [89.99, 'PASS'], [80, 'PASS'], [79.99, 'DEGRADED'], [60,
      'DEGRADED'], [59.99, 'FAIL'], [0, 'FAIL'],
  ] as const)('%d -> %s (lower bound inclusive)', (score, expected) => expect(band(score)).toBe(expected));
});

describe('compositeScore', () => {
  it('uses only the axes that ran', () => {
    const c = compositeScore({ gtm: null, kld: 99, rniah: 100, plad: 90 });
    expect(c.composite).toBeCloseTo(3 / (1 / 99 + 1 / 100 + 1 / 90), 12);
    expect(c.gtm_score).toBeNull();
  });
  it('is 0 / FAIL when nothing ran', () => {
    const c = compositeScore({});
    expect([c.composite, c.band]).toEqual([0, 'FAIL']);
  });
  it('matches the published Mistral-24B composite from its axis scores', () => {
    // data/refract/example-report-clean-mistral24b.json
    const c = compositeScore({ gtm: 76.64796633941093, kld: 99.71012096299961, rniah: 100, plad: 91.34151697077642 });
    expect(c.composite).toBeCloseTo(90.86023928171333, 10);
    expect(c.band).toBe('EXCELLENT');
  });
  it('records the floor and notes a failed one', () => {
    expect(compositeScore({ gtm: 95, kld: 95 }, MIN_FLOOR).floor_ok).toBe(true);
    const bad = compositeScore({ gtm: 95, kld: 95 }, 80);
    expect(bad.floor_ok).toBe(false);
    expect(bad.notes[0]).toBe('Floor failed: REFRACT(ref, ref) = 80.00 < 99.5. Reference is non-deterministic on this '
      + 'build; KLD deltas are unreliable.');
  });
});

describe('repeatability', () => {
  it('uses the sample stdev: [90, 92, 90, 92] -> 1.1547, NOISY', () => {
    const st = repeatabilityStats([90, 92, 90,
      92].map((composite) => ({ composite, axes: { gtm: { score: 90 }, kld: { score: 90 } } })));
    expect(st.composite!.stdev).toBeCloseTo(Math.sqrt(4 / 3), 12);
    expect(st.band).toBe('NOISY');
    expect(st.axes.trajectory!.stdev).toBe(0);
    expect(st.axes.rniah).toBeNull();
  });
  it('bands: <= 1 HEALTHY, <= 3 NOISY, else UNSTABLE, null for one run', () => {
    expect([repeatabilityBand(0), repeatabilityBand(1), repeatabilityBand(1.0001), repeatabilityBand(3),
      repeatabilityBand(3.01), repeatabilityBand(null)])
      .toEqual(['HEALTHY', 'HEALTHY', 'NOISY', 'NOISY', 'UNSTABLE', null]);
  });
  it('spread: mean, median, min, max, range', () => {
    expect(spread([3, 1, 2, 10])).toEqual({ n: 4, mean: 4, median: 2.5, min: 1, max: 10,
      stdev: Math.sqrt(((1) + 9 + 4 + 36) / 3), range: 9 });
    expect(spread([5])!.stdev).toBeNull();
    expect(spread([])).toBeNull();
  });
});
