// The REFRACT panel's time left (demo/estimate.ts, issue 42): readings from a run whose parts vary in pace move
// the estimate smoothly, where the raw pace swung it from 5 min to 72 s and back to 4 min, and it still ends near 0.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RunClock } from '../../demo/estimate.ts';

afterEach(() => { vi.restoreAllMocks(); });

describe('RunClock', () => {
  it('smooths the time left from the measured pace', () => {
    let now = 0;
    vi.spyOn(performance, 'now').mockImplementation(() => now);
    // 300 s planned: 20 KLD chunks of 15 s. The first runs in 5 s (warm caches), the next two in 30 s each, the rest
    // in 15 s: the raw pace said 100 s, then 7 min, then 5 min.
    const clock = new RunClock({ kld: 300 });
    const at = [5, 35, 65, ...Array.from({ length: 17 }, (_, i) => 80 + 15 * i)];
    const left = at.map((t, i) => { now = t * 1000; return clock.left('kld', i + 1, 20); });
    expect(left[0]).toBeGreaterThan(200); // not "72 s" after one fast chunk
    // Each reading is within a third of the last one's remainder, minus the time that passed.
    for (let i = 1; i < left.length; i++) {
      const expected = left[i - 1] - (at[i] - at[i - 1]);
      expect(Math.abs(left[i] - expected),
        `reading ${i}: ${left.map(Math.round).join(', ')}`).toBeLessThan(Math.max(30, left[i - 1] / 3));
    }
    expect(left.at(-1)).toBeLessThan(30);
  });
});
