// The ceiling's checks on numbers (no GPU): bench's stream read against itself at the end of the run and against the
// read probe, with a "**Warning**" line exactly where the two are more than 10 % apart, either way (issue 30).
import { describe, expect, it } from 'vitest';
import { aboveCeiling, against, ceilingLines, TOLERANCE } from '../../bench/harness/ceiling.ts';
import type { BandwidthFigure } from '../../bench/suites/figures.ts';
import { stats } from '../../bench/timing/stats.ts';

/** A stream-read figure of `GBps` (only the median is read). */
const read = (GBps: number, name = 'stream read 1024 MiB'): BandwidthFigure =>
  ({ name, bytes: 2 ** 30, GBps: stats([GBps]), labels: ['stream_read'] }) as unknown as BandwidthFigure;
const warnings = (L: string[]) => L.filter((l) => l.startsWith('**Warning**'));

describe('bandwidth ceiling checks', () => {
  it('holds a figure against its reference within 10 %, either way, the edge included', () => {
    expect(TOLERANCE).toBe(0.1);
    expect(against(4300, 4300)).toEqual({ ratio: 1, apart: false });
    expect(against(1940, 4300).apart).toBe(true);
    expect(against(1940, 4300).ratio).toBeCloseTo(0.4512, 4);
    expect(against(4650, 4300).apart).toBe(false); // 8.1 % above
    expect(against(4750, 4300).apart).toBe(true); // 10.5 % above
    expect(against(3880, 4300).apart).toBe(false); // 9.8 % below
    expect(against(3860, 4300).apart).toBe(true); // 10.2 % below
    expect(against(90, 100).apart).toBe(false); // exactly 10 %
    expect(against(NaN, 100).apart).toBe(true); // no figure is not within anything
  });

  it('states the start, the end and the probe, and warns where they are apart', () => {
    // The run of issue 30 under bench/h200.sh: 1.94 TB/s against a probe's 4.3.
    const bad = ceilingLines(read(1940), read(1960, 'stream read 1024 MiB, end of run'), { GBps: 4300, best: 'x' });
    expect(bad[0]).toBe('Stream read at the start of the run (fresh device) 1940 GB/s, at its end 1960 GB/s ' +
      '(101 % of the start).');
    expect(bad[1]).toMatch(/^Stream read 1940 GB\/s is 45 % of the read probe's 4300 GB\/s \(/);
    expect(warnings(bad)).toEqual(["**Warning**: bench's stream read is more than 10 % from the read probe's figure " +
      '(1940 against 4300 GB/s): the ceiling is not to be trusted.']);
    expect(bad[bad.length - 1]).toBe('');

    // A ceiling that moved during the run, the start agreeing with the probe.
    const moved = ceilingLines(read(4200), read(3500), { GBps: 4300 });
    expect(moved[0]).toContain('at its end 3500 GB/s (83 % of the start)');
    expect(warnings(moved)).toEqual(['**Warning**: the stream read moved by more than 10 % during the run ' +
      '(4200 → 3500 GB/s): the figures held against it are as uncertain.']);
    expect(moved.some((l) => l.startsWith('Stream read 4200 GB/s is 98 % of the read probe'))).toBe(true);

    expect(warnings(ceilingLines(read(4640), read(4680), { GBps: 4300 }))).toEqual([]);
  });

  it('warns of any figure above the ceiling, by the wall or by timestamps', () => {
    // The direct run of issue 30: a 65536 x 1536 GEMV at 5.8 TB/s by its timestamps against a 4.65 TB/s stream read.
    const gemv = { ...read(4100, 'bf16 GEMV 65536x1536'), kernelGBps: stats([5800]) } as BandwidthFigure;
    const fine = { ...read(4300, 'bf16 GEMV 6144x1536'), kernelGBps: stats([4600]) } as BandwidthFigure;
    expect(warnings(ceilingLines(read(4650), read(4680), { GBps: 4300 }, [gemv, fine]))).toEqual([
      '**Warning**: bf16 GEMV 65536x1536 reports 5800 GB/s by timestamps, more than 10 % above the ceiling of ' +
      '4680 GB/s: it was timed wrong.',
    ]);
    expect(aboveCeiling([read(4700, 'x')], 4300)).toHaveLength(0);
    expect(aboveCeiling([read(4800, 'x')], 4300)).toEqual([
      '**Warning**: x reports 4800 GB/s by wall, more than 10 % above the ceiling of 4300 GB/s: it was timed wrong.',
    ]);
  });

  it('says only what was measured', () => {
    expect(ceilingLines(null, read(4000), { GBps: 4300 })).toEqual([]);
    expect(ceilingLines(read(4000), null, null)).toEqual([]);
    const end = ceilingLines(read(4000), read(4100), undefined);
    expect(end).toHaveLength(2);
    expect(end[0]).toMatch(/^Stream read at the start/);
    const probe = ceilingLines(read(4000), undefined, { GBps: 4300 });
    expect(probe).toHaveLength(2);
    expect(probe[0]).toMatch(/^Stream read 4000 GB\/s is 93 % of the read probe's 4300 GB\/s/);
  });
});
