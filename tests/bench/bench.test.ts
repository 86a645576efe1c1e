// Smoke test of the benchmark harness: the Node entry on the small model with a token or two, then the files it
// writes are checked for every figure (finite, positive). q8/q4 caches may report an error instead of figures
// while their kernels land; the full-precision cache must measure.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { BenchResult } from '../../bench/harness.ts';
import type { CacheResult } from '../../bench/model.ts';
import type { Stats } from '../../bench/stats.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Paths of every number in the result that is not finite. */
function nonFinite(v: unknown, path = '$'): string[] {
  if (typeof v === 'number') return Number.isFinite(v) ? [] : [path];
  if (Array.isArray(v)) return v.flatMap((x, i) => nonFinite(x, `${path}[${i}]`));
  if (v && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => nonFinite(x, `${path}.${k}`));
  return [];
}

function positive(s: Stats | null | undefined, what: string): void {
  expect(s, what).toBeTruthy();
  expect(s!.n, what).toBeGreaterThan(0);
  for (const k of ['median', 'min', 'max', 'q1', 'q3'] as const) expect(s![k], `${what}.${k}`).toBeGreaterThan(0);
  expect(s!.min, what).toBeLessThanOrEqual(s!.median);
  expect(s!.median, what).toBeLessThanOrEqual(s!.max);
}

function checkCache(c: CacheResult, mustMeasure: boolean): void {
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
  if (c.name === 'full') expect(d.path, 'the full-precision cache decodes by replay').toEqual({ replayed: d.dispatchesPerToken });
  expect(d.dispatchesPerToken).toBeGreaterThan(0);
  expect(c.decodeGBps).toBeGreaterThan(0);
}

describe('bench harness', () => {
  it('runs the tiny model end to end and writes JSON, Markdown and SVG with every figure', async () => {
    const out = mkdtempSync(join(tmpdir(), 'hrm-bench-'));
    try {
      const tsx = join(root, 'node_modules/.bin/tsx');
      const args = ['bench/run.ts', '--config', 'tiny', '--quick', '--out', out, '--prefill', '4', '--prompt', '4',
        '--decode-tokens', '3', '--warmup', '0', '--samples', '1', '--matmul-rows', '8'];
      await promisify(execFile)(tsx, args, { cwd: root, timeout: 110_000, maxBuffer: 1 << 24 });
      const files = readdirSync(out);
      const base = files.find((f) => f.endsWith('.json'))!.slice(0, -5);
      expect(base).toMatch(/_node_tiny_\d{8}-\d{6}Z$/);
      expect(files.sort()).toEqual([`${base}.json`, `${base}.md`, `${base}.svg`]);
      const r = JSON.parse(readFileSync(join(out, `${base}.json`), 'utf8')) as BenchResult;

      expect(nonFinite(r)).toEqual([]);
      expect(r.complete).toBe(true);
      expect(r.errors).toEqual([]);
      expect(r.skipped).toEqual([]);
      expect(r.env.runtime).toBe('node');
      expect(r.env.runtimeVersion).toMatch(/^node v\d+/);
      expect(r.env.packages.webgpu).toBeTruthy();
      expect(r.env.adapter.limits.maxStorageBufferBindingSize).toBeGreaterThan(0);
      expect(Number.isNaN(Date.parse(r.date))).toBe(false);
      expect(r.settings.config).toBe('tiny');

      const k = r.kernels;
      positive(k.stream!.GBps, 'stream GB/s');
      const gemvs = ['bf16 GEMV 1024x256', 'bf16 GEMV 2048x256'];
      // The f16-x rows run where the adapter has shader-f16 (lavapipe from Mesa 25 does; SwiftShader does not).
      const f16 = r.env.adapter.features.includes('shader-f16');
      expect(k.gemv.map((g) => g.name.split(' (')[0])).toEqual(f16 ? [...gemvs, ...gemvs.map((n) => `${n}, f16 x`)] : gemvs);
      for (const g of [k.stream!, ...k.gemv]) {
        positive(g.GBps, `${g.name} GB/s`);
        positive(g.wallMs, `${g.name} ms`);
        expect(g.shareOfH200).toBeGreaterThan(0);
        if (r.env.adapter.features.includes('timestamp-query')) positive(g.gpuMs, `${g.name} GPU ms`);
      }
      for (const g of k.gemv) expect(g.shareOfStream).toBeGreaterThan(0);
      expect(k.matmul.map((m) => m.name.split('; ')[1])).toEqual(['f32)', 'bf16, tiled)']);
      for (const m of k.matmul) {
        positive(m.TFLOPs, `${m.name} TFLOP/s`);
        expect(m.flops).toBe(2 * 8 * 1024 * 256);
      }
      expect(r.prefillMatmul.path).toMatch(/^rows \(CPU driver\)$|^tiled f32 \(no /);
      expect(r.parity).toBeNull();
      expect(r.anchors).toBeNull();
      positive(k.dispatch!.encodeUs, 'dispatch encode');
      positive(k.dispatch!.gpuUs, 'dispatch gpu');

      expect(r.model!.name).toBe('hrm-text-brown-6m');
      expect(r.model!.weightBytesPerToken).toBe(8 * r.model!.stackBytes + r.model!.lmHeadBytes);
      expect(r.caches.map((c) => c.name)).toEqual(['full', 'q8', 'q4']);
      r.caches.forEach((c, i) => checkCache(c, i === 0));
      const full = r.caches[0];
      if (r.env.adapter.features.includes('timestamp-query')) {
        const p = full.profile!;
        expect(p.profiled).toBe(p.dispatches);
        expect(p.kernelMs).toBeGreaterThan(0);
        expect(p.byLabel.reduce((a, x) => a + x.count, 0)).toBe(p.profiled);
        expect(p.byLabel.some((x) => x.label.startsWith('matmul'))).toBe(true);
      }

      const md = readFileSync(join(out, `${base}.md`), 'utf8');
      expect(md).toContain('## Kernels');
      expect(md).toContain('## Model, per KV cache');
      expect(md).toMatch(/\| full \| [\d.]+ \| [\d.]+ \|/);
      const svg = readFileSync(join(out, `${base}.svg`), 'utf8');
      expect(svg.startsWith('<svg')).toBe(true);
      expect(svg).toContain('ceiling');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
});
