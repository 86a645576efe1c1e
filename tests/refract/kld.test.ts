// KLD@D building blocks: chunking rules, per-position KL, dropping non-finite positions, corpus identity.
import { describe, expect, it } from 'vitest';
import { comparePosition, corpusIdentity, KLD_PERCENTILES, KldAccumulator, kldChunks, kldToScore, meanAndUncertainty,
  percentile, percentiles, wilsonInterval } from '../../src/refract/axes/kld.ts';
import { rng } from '../../testkit/helpers/seeded.ts';
import { BackendCapabilityError } from '../../src/refract/backend.ts';

describe('kldChunks', () => {
  const toks = Array.from({ length: 1050 }, (_, i) => i);
  it('chunk i is tokens [i*ctx, (i+1)*ctx), n = min(chunks, floor(len/ctx))', () => {
    const c = kldChunks(toks, 32, 100);
    expect(c).toHaveLength(10);
    expect(c[3][0]).toBe(300);
    expect(c[9][99]).toBe(999);
    expect(kldChunks(toks, 4, 100)).toHaveLength(4);
    expect(kldChunks(toks, 32, 1050)).toHaveLength(1);
  });
  it('fewer than ctx tokens is an error', () => {
    expect(() => kldChunks(toks, 32, 1051)).toThrow(BackendCapabilityError);
    expect(() => kldChunks(toks, 32, 1051)).toThrow('[kld] Corpus too short for KLD: 1050 tokens, need ≥ 1051.');
  });
});

describe('comparePosition', () => {
  it('KL(P||Q) by hand: P = (1/2, 1/2), Q = (3/4, 1/4) -> ln(4/3) / 2', () => {
    const s = comparePosition([0, 0], [Math.log(3), 0], 2);
    expect(s.kl).toBeCloseTo(0.5 * Math.log(4 / 3), 14);
    expect(s.sameTop).toBe(true);
  });
  it('is shift invariant and zero for equal distributions', () => {
    expect(comparePosition([1, 2, 3], [11, 12, 13], 3).kl).toBeCloseTo(0, 14);
  });
  it('reads a row at an offset and reports next-token stats', () => {
    const ref = [9, 9, 0, Math.log(3)];
    const cand = [9, 9, Math.log(3), 0];
    const s = comparePosition(ref, cand, 2, 2, 1);
    expect(s.kl).toBeCloseTo(0.75 * Math.log(3) + 0.25 * Math.log(1 / 3), 14);
    expect(s.sameTop).toBe(false);
    expect(s.dp).toBeCloseTo(0.25 - 0.75, 14);
    expect(s.nllCand).toBeCloseTo(-Math.log(0.25), 14);
  });
  it('non-finite logits give non-finite KL', () => {
    expect(Number.isFinite(comparePosition([0, 0], [Number.NaN, 0], 2).kl)).toBe(false);
    expect(Number.isFinite(comparePosition([0, 0], [-Infinity, 0], 2).kl)).toBe(false);
    expect(comparePosition([-Infinity, 0], [0, 0], 2).kl).toBeCloseTo(Math.log(2), 14); // 0 * log 0 = 0
  });
});

describe('KldAccumulator', () => {
  it('drops non-finite positions from the mean but keeps them (NaN) per position', () => {
    const a = new KldAccumulator();
    for (const v of [0.1, Number.NaN, 0.3, Infinity, 0.2]) a.add({ kl: v, sameTop: true });
    const r = a.result();
    expect(r.meanKld).toBeCloseTo(0.2, 14);
    expect([r.kept, r.dropped]).toEqual([3, 2]);
    expect(a.perPosition).toHaveLength(5);
    expect(r.ppl).toBeNull();
  });
  it('throws when every position is non-finite', () => {
    const a = new KldAccumulator();
    a.add({ kl: Number.NaN, sameTop: true });
    expect(() => a.result()).toThrow(BackendCapabilityError);
  });
  it('PPL, RMS dp and same-top from position stats', () => {
    const a = new KldAccumulator();
    a.add({ kl: 0, sameTop: true, dp: 0.1, nllCand: Math.log(2), nllRef: Math.log(2) });
    a.add({ kl: 0, sameTop: false, dp: -0.1, nllCand: Math.log(8), nllRef: Math.log(2) });
    const r = a.result();
    expect(r.ppl).toBeCloseTo(4, 12);
    expect(r.rmsDpPct).toBeCloseTo(10, 12);
    expect(r.sameToppPct).toBe(50);
    // ln ratio per position: 0 and ln 4 -> exp(mean) = 2, error = 2 * sqrt(var / (n - 1)) with var = (ln 4 / 2)^2.
    expect(r.stats.ppl_ref).toBeCloseTo(2, 12);
    expect(r.stats.ppl_ratio).toBeCloseTo(2, 12);
    expect(r.stats.ppl_ratio_unc).toBeCloseTo(2 * Math.log(4) / 2, 12);
    expect(r.stats.ppl_cand_unc).toBeCloseTo(4 * Math.log(4) / 2, 12);
  });
});

describe("llama.cpp's --kl-divergence statistics", () => {
  it('percentiles interpolate at fraction * (n - 1), with the exact keys; 50 is the median', () => {
    const v = [5, 1, 4, 2, 3]; // sorted 1..5
    const p = percentiles(v, KLD_PERCENTILES);
    // JavaScript lists integer-like keys first, so compare the key sets.
    expect(Object.keys(p).sort()).toEqual(['min', '0.1', '1', '5', '10', '50', '90', '95', '99', '99.9', 'max'].sort());
    expect(p.min).toBe(1);
    expect(p.max).toBe(5);
    expect(p['50']).toBe(3);
    expect(p['10']).toBeCloseTo(1 + 0.1 * 4, 12);
    expect(p['99.9']).toBeCloseTo(1 + 0.999 * 4, 12);
    expect(percentile([1, 2, 3, 4], 0.5)).toBe(2.5); // even count: mean of the middle two, as llama.cpp's median
  });
  it('Wilson 95 % interval: textbook values', () => {
    const [lo, hi] = wilsonInterval(8, 10);
    expect(lo).toBeCloseTo(0.4902, 4);
    expect(hi).toBeCloseTo(0.9433, 4);
    const [lo1, hi1] = wilsonInterval(100, 100);
    expect(lo1).toBeCloseTo(0.96301, 4);
    expect(hi1).toBe(1);
  });
  it('mean and uncertainty: sqrt(var / (n - 1)) with the population variance', () => {
    const [m, u] = meanAndUncertainty([1, 2, 3, 4]);
    expect(m).toBe(2.5);
    expect(u).toBeCloseTo(Math.sqrt(1.25 / 3), 14);
  });
  it('statistics against a float64 reference over random logits', () => {
    const r = rng(9);
    const V = 7;
    const n = 40;
    const a = new KldAccumulator();
    const kls: number[] = [];
    const dps: number[] = [];
    let same = 0;
    for (let t = 0; t < n; t++) {
      const ref = Array.from({ length: V }, () => r() * 4);
      const cand = ref.map((x) => x + (r() - 0.5));
      const next = t % V;
      const st = comparePosition(ref, cand, V, 0, next);
      a.add(st);
      // Reference: softmax by definition.
      const sm = (l: number[]) => { const e = l.map(Math.exp); const z = e.reduce((x, y) => x + y,
        0); return e.map((x) => x / z); };
      const p = sm(ref);
      const q = sm(cand);
      kls.push(p.reduce((s, pi, i) => s + pi * Math.log(pi / q[i]), 0));
      dps.push(q[next] - p[next]);
      if (p.indexOf(Math.max(...p)) === q.indexOf(Math.max(...q))) same++;
    }
    const s = a.result().stats;
    const sorted = [...kls].sort((x, y) => x - y);
    expect(s.kld_percentiles.max).toBeCloseTo(sorted[n - 1], 12);
    expect(s.kld_percentiles['50']).toBeCloseTo((sorted[19] + sorted[20]) / 2, 12);
    expect(s.same_top1).toBe(same / n);
    expect(s.delta_p!.mean).toBeCloseTo(dps.reduce((x, y) => x + y, 0) / n, 12);
    expect(s.delta_p!.rms).toBeCloseTo(Math.sqrt(dps.reduce((x, y) => x + y * y, 0) / n), 12);
    expect(s.n_next).toBe(n);
  });
  it('self reference: KL 0 everywhere, same_top1 1, ppl_ratio exactly 1', () => {
    const a = new KldAccumulator();
    for (let t = 0; t < 20; t++) {
      const l = Array.from({ length: 5 }, (_, i) => Math.sin(t * 5 + i));
      a.add(comparePosition(l, l, 5, 0, t % 5));
    }
    const s = a.result().stats;
    expect(Object.values(s.kld_percentiles).every((v) => v === 0)).toBe(true);
    expect(s.same_top1).toBe(1);
    expect(s.same_top1_ci95[1]).toBe(1);
    expect(s.ppl_ratio).toBe(1);
    expect(s.ppl_ratio_unc).toBe(0);
    expect(s.ppl_ref).toBe(s.ppl_cand);
  });
});

describe('scores and identity', () => {
  it('score = 100 exp(-kld), negative clamped', () => {
    expect(kldToScore(0)).toBe(100);
    expect(kldToScore(-0.1)).toBe(100);
    expect(kldToScore(0.002903)).toBeCloseTo(99.71012096299961, 3); // the Mistral report (kld rounded to 6 places)
    expect(kldToScore(1.7381)).toBeCloseTo(17.59, 2);
  });
  it('corpus identity: UTF-8 size and sha256 of the head', async () => {
    const id = await corpusIdentity('abc', 'x');
    expect(id).toEqual({ path: 'x', size_bytes: 3,
      sha256_head: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', sha256_head_bytes: 3 });
    expect((await corpusIdentity('é', 'y')).size_bytes).toBe(2);
  });
});
