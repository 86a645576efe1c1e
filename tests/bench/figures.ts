// Checks of a bench result's figures shared by the bench tests: every number finite, every timing positive and
// ordered, every cache configuration measured with the settings the tests pass (prefill 4 tokens).
import { expect } from 'vitest';
import type { CacheResult } from '../../bench/suites/model-figures.ts';
import type { Stats } from '../../bench/timing/stats.ts';

/** Paths of every number in the result that is not finite. */
export function nonFinite(v: unknown, path = '$'): string[] {
  if (typeof v === 'number') return Number.isFinite(v) ? [] : [path];
  if (Array.isArray(v)) return v.flatMap((x, i) => nonFinite(x, `${path}[${i}]`));
  if (v && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => nonFinite(x, `${path}.${k}`));
  return [];
}

export function positive(s: Stats | null | undefined, what: string): void {
  expect(s, what).toBeTruthy();
  expect(s!.n, what).toBeGreaterThan(0);
  for (const k of ['median', 'min', 'max', 'q1', 'q3'] as const) expect(s![k], `${what}.${k}`).toBeGreaterThan(0);
  expect(s!.min, what).toBeLessThanOrEqual(s!.median);
  expect(s!.median, what).toBeLessThanOrEqual(s!.max);
}

export function checkCache(c: CacheResult, mustMeasure: boolean): void {
  expect(c.ceiling.bytesPerToken).toBeGreaterThan(c.ceiling.weightBytes);
  expect(c.ceiling.tokPerS).toBeGreaterThan(0);
  if (c.errors.length && !mustMeasure) return; // reported, not thrown: the run went on
  expect(c.errors, c.name).toEqual([]);
  expect(c.prefill.map((p) => p.tokens)).toEqual([4]);
  for (const p of c.prefill) {
    positive(p.tokPerS, `${c.name} prefill tok/s`);
    positive(p.encodeMs, `${c.name} prefill encode`);
    expect(p.dispatches).toBeGreaterThan(0);
  }
  const d = c.decode!;
  positive(d.tokPerS, `${c.name} decode tok/s`);
  positive(d.stepMs, `${c.name} decode step`);
  positive(d.encodeMs, `${c.name} decode encode`);
  if (c.name === 'full') {
    expect(d.path, 'the full-precision cache decodes by replay').toEqual({ replayed: d.dispatchesPerToken });
  }
  expect(d.dispatchesPerToken).toBeGreaterThan(0);
  expect(c.decodeGBps).toBeGreaterThan(0);
}
