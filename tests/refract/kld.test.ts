// KLD@D building blocks: chunking rules, per-position KL, dropping non-finite positions, corpus identity.
import { describe, expect, it } from 'vitest';
import { comparePosition, corpusIdentity, KldAccumulator, kldChunks, kldToScore } from '../../src/refract/axes/kld.ts';
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
    for (const v of [0.1, Number.NaN, 0.3, Infinity, 0.2]) a.add(v);
    const r = a.result();
    expect(r.meanKld).toBeCloseTo(0.2, 14);
    expect([r.kept, r.dropped]).toEqual([3, 2]);
    expect(a.perPosition).toHaveLength(5);
    expect(r.ppl).toBeNull();
  });
  it('throws when every position is non-finite', () => {
    const a = new KldAccumulator();
    a.add(Number.NaN);
    expect(() => a.result()).toThrow(BackendCapabilityError);
  });
  it('PPL, RMS dp and same-top from position stats', () => {
    const a = new KldAccumulator();
    a.add({ kl: 0, sameTop: true, dp: 0.1, nllCand: Math.log(2) });
    a.add({ kl: 0, sameTop: false, dp: -0.1, nllCand: Math.log(8) });
    const r = a.result();
    expect(r.ppl).toBeCloseTo(4, 12);
    expect(r.rmsDpPct).toBeCloseTo(10, 12);
    expect(r.sameToppPct).toBe(50);
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
    expect(id).toEqual({ path: 'x', size_bytes: 3, sha256_head: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', sha256_head_bytes: 3 });
    expect((await corpusIdentity('é', 'y')).size_bytes).toBe(2);
  });
});
