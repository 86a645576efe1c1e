// Smoke test of the benchmark harness: the Node entry on the small model with a token or two, then the files it
// writes are checked for every figure (finite, positive). q8/q4 caches may report an error instead of figures
// while their kernels land; the full-precision cache must measure, and so must the model on q8 and q4 weights.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { BenchResult } from '../../bench/harness/result.ts';
import { checkCache, nonFinite, positive } from './figures.ts';
import { EMBEDDED } from '../../testkit/helpers/fixtures.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('bench harness', () => {
  it('runs the tiny model end to end and writes JSON, Markdown and SVG with every figure', async () => {
    const out = mkdtempSync(join(tmpdir(), 'hrm-bench-'));
    const dir = mkdtempSync(join(tmpdir(), 'hrm-bench-probe-'));
    try {
      // A read probe's line (bench/probes/read-probe.mjs) far above what a CPU driver streams: the run must say so.
      const probe = join(dir, 'read-probe.json');
      writeFileSync(probe, 'a log line\n{"GBps": 1000000, "best": "xor u4 wg16896 random"}\n');
      const tsx = join(root, 'node_modules/.bin/tsx');
      const args = ['bench/runners/run.ts', '--config', 'tiny', '--quick', '--out', out, '--prefill', '4',
        '--prompt', '4', '--decode-tokens', '3', '--warmup', '0', '--samples', '1', '--matmul-rows', '8',
        '--weights', 'bf16,q8,q4', '--read-probe', probe];
      await promisify(execFile)(tsx, args, { cwd: root, timeout: 280_000, maxBuffer: 1 << 24 });
      const files = readdirSync(out);
      const base = files.find((f) => f.endsWith('.json'))!.slice(0, -5);
      expect(base).toMatch(/_node_tiny_\d{8}-\d{6}Z$/);
      expect(files.sort()).toEqual([`${base}.json`, `${base}.md`, `${base}.svg`]);
      const r = JSON.parse(readFileSync(join(out, `${base}.json`), 'utf8')) as BenchResult;

      expect(nonFinite(r)).toEqual([]);
      expect(r.complete).toBe(true);
      expect(r.errors).toEqual([]);
      expect(r.skipped).toEqual([]);
      expect(r.recovered).toEqual([]);
      expect(r.env.runtime).toBe('node');
      expect(r.env.runtimeVersion).toMatch(/^node v\d+/);
      expect(r.env.packages.webgpu).toBeTruthy();
      expect(r.env.adapter.limits.maxStorageBufferBindingSize).toBeGreaterThan(0);
      // Feature detection: what the device got, and the fast paths on or off with the reason
      // (src/kernels/plan/paths.ts).
      const features = ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix'];
      expect(Object.keys(r.env.adapter.fastFeatures)).toEqual(features);
      expect(Object.keys(r.env.adapter.fastPaths)).toContain('prefill matmuls on tensor cores (bf16)');
      expect(Object.values(r.env.adapter.fastPaths).every((p) => p.on || (p.why ?? '').length > 0)).toBe(true);
      expect(Number.isNaN(Date.parse(r.date))).toBe(false);
      expect(r.settings.config).toBe('tiny');

      const k = r.kernels;
      positive(k.stream!.GBps, 'stream GB/s');
      // The same read at the end of the run, and the probe's line as printed.
      positive(k.streamEnd!.GBps, 'stream GB/s at the end');
      expect(k.streamEnd!.name).toBe(`${k.stream!.name}, end of run`);
      expect(k.readProbe).toEqual({ GBps: 1e6, best: 'xor u4 wg16896 random' });
      // The tiny config is the embedded model's shape: the decode GEMVs are gate+qkv (4 heads' widths) and lm_head.
      const cfg = JSON.parse(readFileSync(join(EMBEDDED, 'config.json'), 'utf8'));
      const h = cfg.hidden_size, qkv = 4 * cfg.num_attention_heads * cfg.head_dim;
      const gemvs = [`bf16 GEMV ${qkv}x${h}`, `bf16 GEMV ${cfg.vocab_size}x${h}`];
      // The f16-x rows run where the adapter has shader-f16 (lavapipe from Mesa 25 does; SwiftShader does not).
      const f16 = r.env.adapter.features.includes('shader-f16');
      const names = f16 ? [...gemvs, ...gemvs.map((n) => `${n}, f16 x`)] : gemvs;
      expect(k.gemv.map((g) => g.name.split(' (')[0])).toEqual(names);
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
        expect(m.flops).toBe(2 * 8 * qkv * h);
      }
      expect(r.prefillMatmul.path).toMatch(/^rows \(CPU driver\)$|^tiled f32 \(no /);
      expect(r.parity).toBeNull();
      expect(r.anchors).toBeNull();
      positive(k.dispatch!.encodeUs, 'dispatch encode');
      positive(k.dispatch!.gpuUs, 'dispatch gpu');

      expect(r.model!.name).toBe('hrm-text-brown-10m');
      expect(r.model!.weightBytesPerToken).toBe(8 * r.model!.stackBytes + r.model!.lmHeadBytes);
      expect(r.caches.map((c) => c.name)).toEqual(['full', 'q8', 'q4']);
      r.caches.forEach((c, i) => checkCache(c, i === 0));
      const full = r.caches[0];
      // The model per weights: bf16's entry is the full-cache run as measured, q8 / q4 measured on their own.
      expect(r.weights.map((w) => w.name)).toEqual(['bf16', 'q8', 'q4']);
      for (const w of r.weights) {
        checkCache({ ...w, name: 'full' }, true);
        expect(w.bytes).toBeGreaterThan(0);
        expect(w.memory4096).toBeGreaterThan(w.bytes);
      }
      const [bf16, q8, q4] = r.weights;
      const { name: _n, bytes: _b, memory4096: _m, ...sameAsFull } = bf16;
      expect({ ...sameAsFull, name: 'full' }).toEqual(full);
      expect(q4.bytes).toBeLessThan(q8.bytes);
      expect(q8.bytes).toBeLessThan(bf16.bytes);
      // The ceiling counts the bytes the quantized weights read.
      expect(q4.ceiling.weightBytes).toBeLessThan(q8.ceiling.weightBytes);
      expect(q8.ceiling.weightBytes).toBeLessThan(bf16.ceiling.weightBytes);
      if (r.env.adapter.features.includes('timestamp-query')) {
        const p = full.profile!;
        expect(p.profiled).toBe(p.dispatches);
        expect(p.kernelMs).toBeGreaterThan(0);
        expect(p.byLabel.reduce((a, x) => a + x.count, 0)).toBe(p.profiled);
        expect(p.byLabel.some((x) => x.label.startsWith('matmul'))).toBe(true);
        // The timed-by-pass prefill: its passes hold every dispatch of a prefill, in order on the GPU's clock.
        const pf = full.prefill.find((x) => x.timeline)!;
        const t = pf.timeline!;
        expect(t.passes.reduce((a, x) => a + x.dispatches, 0)).toBe(pf.dispatches);
        expect(t.busyMs).toBeGreaterThan(0);
        expect(t.busyMs).toBeLessThanOrEqual(t.spanMs + 1e-9);
        expect(t.spanMs).toBeLessThan(t.wallMs);
      }

      const md = readFileSync(join(out, `${base}.md`), 'utf8');
      expect(md).toContain('## Kernels');
      expect(md).toMatch(/\nFeatures: shader-f16 (on|off \(.+\));.*\. Fast paths: /);
      expect(md).toContain('## Model, per KV cache');
      expect(md).toMatch(/## Weights \(full cache\)\n\n\| weights \|[^\n]*\n[^\n]*\n\| bf16 \| [\d.]+ \| [\d.]+ \|/);
      expect(md).toMatch(/\nAgainst bf16 weights: q4 decode [\d.]+x \(issue 30: >= 1.4x\)/);
      expect(md).toMatch(/\nStream read at the start of the run \(fresh device\) [\d.]+ GB\/s, at its end /);
      expect(md).toMatch(/\nStream read [\d.]+ GB\/s is [\d.]+ % of the read probe's 1 000 000 GB\/s/);
      expect(md).toContain("\n**Warning**: bench's stream read is more than 10 % from the read probe's figure");
      expect(md).toMatch(/\| full \| [\d.]+ \| [\d.]+ \|/);
      if (r.env.adapter.features.includes('timestamp-query')) {
        const timeline = new RegExp('The same prefill timed pass by pass \\(its \\d+ passes, ' +
          '.*the GPU busy [\\d.]+ ms over [\\d.]+ ms');
        expect(md).toMatch(timeline);
      }
      const svg = readFileSync(join(out, `${base}.svg`), 'utf8');
      expect(svg.startsWith('<svg')).toBe(true);
      expect(svg).toContain('ceiling');
    } finally {
      rmSync(out, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
