// A cache slot with TurboQuant sides (turbo3 K beside turbo4 V, turbo2 K beside a full V) against sdpa over
// full-precision sides holding what the fork's code decodes (the float64 reference applied to the slot's own RoPE'd
// keys and values): a prefill quantized before the pass, then decode steps, bit for bit on the general path
// (DeviceOptions.kernels.turboDecode 'general'; a mixed pair always takes it), within turbo_one's float-order
// tolerance where two turbo sides' decode steps take it (the default); an 'after-prefill' first pass attends to the
// full-precision keys; a captured decode step replays the recorded logits at every position.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { Gpu } from '../../src/kernels/gpu.ts';
import { randn } from '../../testkit/helpers/seeded.ts';
import { recordDispatches } from '../helpers/dispatches.ts';
import { model } from '../../testkit/helpers/model.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { CacheSlot, type CachePass } from '../../src/hrm/slot.ts';
import { DecodeGraph } from '../../src/hrm/decode.ts';
import type { AttnMask, CacheSide, FullKV } from '../../src/kernels/attention/types.ts';
import { ropeK, takeV, ropeQ } from '../../src/kernels/attention/kvcache.ts';
import { sdpa } from '../../src/kernels/attention/sdpa.ts';
import { turboKV } from '../../src/kernels/turbo/turbo.ts';
import type { TurboType } from '../../src/kernels/turbo/format.ts';
import { decodeHead, encodeHead } from '../../src/kernels/turbo/turbo.ref.ts';

const H = 2, D = 64, CAP = 6, BASE = 10000;

function makeSide(gpu: Gpu, t: TurboType | null, label: string): CacheSide {
  return t ? turboKV(gpu, { heads: H, capacity: CAP, headDim: D, type: t, label })
    : { kind: 'full', data: Tensor.empty(gpu, [H, CAP, D], 'f32', label) };
}

/** The expected attention: sdpa over f32 sides holding `decode(x)` of every position written so far. */
class Expected {
  readonly k: Float32Array = new Float32Array(H * CAP * D);
  readonly v: Float32Array = new Float32Array(H * CAP * D);
  constructor(private readonly kt: TurboType | null, private readonly vt: TurboType | null) {}

  async write(gqkv: Tensor, offset: number, S: number, coded: boolean): Promise<void> {
    const o = { heads: H, headDim: D, base: BASE, offset, round: 'none' as const };
    for (const [t, src, dst] of [[this.kt, ropeK(gqkv, o), this.k], [this.vt, takeV(gqkv, o), this.v]] as const) {
      const x = await src.read();
      src.dispose();
      for (let h = 0; h < H; h++) {
        for (let s = 0; s < S; s++) {
          const row = x.slice((h * S + s) * D, (h * S + s + 1) * D);
          dst.set(t && coded ? decodeHead(t, encodeHead(t, row, D), D) : row, (h * CAP + offset + s) * D);
        }
      }
    }
  }

  async attend(gqkv: Tensor, pass: CachePass): Promise<Float32Array> {
    const gpu = gqkv.gpu;
    const side = (a: Float32Array): FullKV => ({ kind: 'full', data: Tensor.from(gpu, a, [H, CAP, D], 'f32', 'want') });
    const [k, v] = [side(this.k), side(this.v)];
    const q = ropeQ(gqkv, { heads: H, headDim: D, base: BASE, offset: pass.offset, round: 'none' });
    const at = { kvLen: pass.offset + pass.S, offset: pass.offset, mask: pass.mask };
    const out = sdpa(q, k, v, { ...at, scale: 1 / Math.sqrt(D), round: 'none', gate: gqkv });
    const got = Float32Array.from(await out.read());
    for (const t of [q, out, k.data, v.data]) t.dispose();
    return got;
  }
}

function pass(S: number, offset: number, mask: AttnMask, shadowed: boolean): CachePass {
  return { S, offset, tokenTypes: new Array(S).fill(0), mask, shadow: shadowed ? new Map() : null, temps: [] };
}

/**
 * |got - want| allowed where turbo_one runs (a decode step over two turbo sides): its tolerance
 * (tests/kernels/turbo/turbo-one.test.ts, 1e-6 (1 + |score|) of the largest value) at this test's scores (|s| < 50),
 * taken
 * against the largest output.
 */
const FUSED_TOL = 1e-4;

const CASES = [['turbo3', 'turbo4', 'before-pass', 'fused'], ['turbo3', 'turbo4', 'before-pass', 'general'],
  ['turbo2', null, 'after-prefill', 'fused']] as const;

describe('TurboQuant cache slot', () => {
  for (const [kt, vt, mode, decode] of CASES) {
    it(`K ${kt}, V ${vt ?? 'full'}, ${mode}, ${decode}: prefill and decode attend to the fork's values`, async () => {
      const gpu = decode === 'general' ? await Gpu.create({ kernels: { turboDecode: 'general' } }) : await getGpu();
      const fused = decode === 'fused' && vt !== null;
      const geo = { heads: H, headDim: D, ropeBase: BASE, round: 'none' as const };
      const slot = new CacheSlot(makeSide(gpu, kt, 'k'), makeSide(gpu, vt, 'v'), geo);
      const want = new Expected(kt, vt);
      let offset = 0;
      for (const [step, S] of [3, 1, 1].entries()) {
        const gqkv = Tensor.from(gpu, randn(70 + step, S * 4 * H * D, 2), [S, 4 * H * D], 'f32', 'gqkv');
        const shadowed = mode === 'after-prefill' && step === 0;
        const p = pass(S, offset, step === 0 ? { kind: 'causal' } : { kind: 'none' }, shadowed);
        await want.write(gqkv, offset, S, !shadowed);
        const out = slot.appendAttend(gqkv, p);
        const [got, exp] = [Array.from(await out.read()), Array.from(await want.attend(gqkv, p))];
        if (fused && S === 1) {
          const tol = FUSED_TOL * Math.max(...exp.map(Math.abs));
          expect(Math.max(...got.map((x, i) => Math.abs(x - exp[i]))), `step ${step}`).toBeLessThanOrEqual(tol);
        } else {
          expect(got, `step ${step}`).toEqual(exp);
        }
        // After the full-precision first pass the cache holds coded values, as later passes read them.
        if (shadowed) await want.write(gqkv, offset, S, true);
        for (const t of [out, gqkv, ...p.temps]) t.dispose();
        offset += S;
      }
      slot.dispose();
      if (gpu !== await getGpu()) gpu.destroy();
    });
  }

  it('a captured decode step over turbo3 sides replays the recorded logits at every position', async () => {
    const lm = await model(await getGpu(), 'hrm-tiny-a', 'f32');
    const prompt = [5, 9, 100, 7, 31], feed = [11, 300, 42, 17];
    const kv = { k: 'turbo3', v: 'turbo3' } as const;
    const prefilled = async () => {
      const cache = lm.model.newCache({ capacity: prompt.length + feed.length, kv, mode: 'after-prefill' });
      await lm.model.forward(prompt, cache, { mask: 'prefix', logits: 'last' }).readF32();
      return cache;
    };
    const a = await prefilled(), b = await prefilled();
    const g = DecodeGraph.tryBuild(lm.model, b, 'logits');
    if (!(g instanceof DecodeGraph)) throw new Error(`no graph: ${g.reason}`);
    for (const [i, t] of feed.entries()) {
      let logits!: ReturnType<typeof lm.model.forward>;
      const kernels = recordDispatches(() => { logits = lm.model.forward([t], a, { mask: 'causal' }); })
        .map((d) => d.kernel);
      // A layer call is one turbo_one dispatch: no decoded side, no separate append or query.
      if (i === 0) {
        expect(kernels).toContain('turbo/turbo_one.wgsl#turbo_one');
        expect(kernels.filter((k) => k.startsWith('turbo/turbo.wgsl') || k.includes('turbo_rope'))).toEqual([]);
      }
      const want = await logits.readF32();
      g.feed(t);
      expect(await g.nextLogits()).toEqual(want);
    }
    g.dispose();
    a.dispose(); b.dispose();
  });
});
