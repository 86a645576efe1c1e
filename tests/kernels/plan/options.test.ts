// The kernels' planner (kernels/plan/): a Gpu's options (DeviceOptions.kernels) are checked, a bad one named,
// and fill in the defaults; two Gpus in one process take the paths of their own options, each matching the
// float64 reference, their dispatches naming the kernels, their summaries saying why a path is off; a cache slot
// asks the planner, so its decode step follows its Gpu's options too.
import { describe, expect, it } from 'vitest';
import { Gpu } from '../../../src/kernels/gpu.ts';
import { Tensor } from '../../../src/tensor/tensor.ts';
import { InputError } from '../../../src/errors.ts';
import { DEFAULT_POLICY, kernelPolicy, resolvePolicy, type KernelOptions } from '../../../src/kernels/plan/options.ts';
import { fastPaths } from '../../../src/kernels/plan/paths.ts';
import { sdpa } from '../../../src/kernels/attention/sdpa.ts';
import { sdpaRef } from '../../../src/kernels/attention/sdpa.ref.ts';
import type { FullKV } from '../../../src/kernels/attention/types.ts';
import { CacheSlot, type CachePass } from '../../../src/hrm/slot.ts';
import { getGpu } from '../../helpers/gpu.ts';
import { randn } from '../../../testkit/helpers/seeded.ts';
import { expectClose } from '../../helpers/close.ts';
import { expectBitExact } from '../../helpers/quant-check.ts';
import { recordDispatches } from '../../helpers/dispatches.ts';

const MERGED = 'decode attention merged in its split (one dispatch)';
const H = 2, D = 64, CAP = 160;
const ONE = 'attention/sdpa_one.wgsl#', APPEND = 'attention/sdpa_one_append.wgsl#';

/** A full-precision cache side [H, CAP, D] of `x` on `gpu`. */
const side = (gpu: Gpu, x: Float32Array, label: string): FullKV =>
  ({ kind: 'full', data: Tensor.from(gpu, x, [H, CAP, D], 'f32', label) });

describe('kernel policy', () => {
  it('fills in the defaults and names the field of a bad option', () => {
    expect(resolvePolicy()).toEqual(DEFAULT_POLICY);
    const o = { sgmat: { splitK: 2 }, decodeMerge: 'separate', decodeMlp: 'fold', turboDecode: 'general' } as const;
    expect(resolvePolicy(o)).toEqual({
      sgmat: { kernel: 'auto', pipe: true,
        splitK: 2 }, attentionTensorCores: true, decodeMerge: 'separate', decodeMlp: 'fold',
      turboDecode: 'general', specialize: null, unroll: null, decodeStep: 'per-op', persistGrid: null,
      persistSpin: null,
    });
    expect(resolvePolicy({ specialize: true, unroll: false })).toMatchObject({ specialize: true, unroll: false });
    const bad: Array<[unknown, RegExp]> = [
      [{ sgmat: { splitK: 3 } }, /^\[DeviceOptions\.kernels\.sgmat\] splitK 3 must be 1, 2, 4 or 'auto'$/],
      [{ unroll: 1 }, /^\[DeviceOptions\.kernels\] unroll 1 must be true or false$/],
      [{ sgmat: { kernel: 'fast' } }, /^\[DeviceOptions\.kernels\.sgmat\] kernel "fast" must be 'auto', 'staged' or/],
      [{ sgmat: { pipe: 1 } }, /^\[DeviceOptions\.kernels\.sgmat\] pipe 1 must be true or false$/],
      [{ attentionTensorCores: 'no' }, /^\[DeviceOptions\.kernels\] attentionTensorCores "no" must be true or false$/],
      [{ decodeMerge: 'both' }, /^\[DeviceOptions\.kernels\.decodeMerge\] merge 'both' must be one of fold, separate$/],
      [{ decodeMlp: 'one' }, /^\[DeviceOptions\.kernels\.decodeMlp\] 'one' must be one of fold, separate$/],
      [{ turboDecode: 'dequant' }, /^\[DeviceOptions\.kernels\.turboDecode\] 'dequant' must be one of fused, general$/],
      [{ merge: 'fold' }, /^\[DeviceOptions\.kernels\] unknown field 'merge'; use sgmat, attentionTensorCores/],
    ];
    for (const [o, why] of bad) {
      expect(() => resolvePolicy(o as KernelOptions), JSON.stringify(o)).toThrow(InputError);
      expect(() => resolvePolicy(o as KernelOptions), JSON.stringify(o)).toThrow(why);
    }
  });

  it('Gpu.create refuses options that do not check out', async () => {
    await expect(Gpu.create({ kernels: { decodeMerge: 'both' as 'fold' } }))
      .rejects.toThrow(/^\[DeviceOptions\.kernels\.decodeMerge\] merge 'both'/);
  });

  it('two Gpus in one process take their own decode merge, both match f64 and each other bit for bit', async () => {
    const fold = await getGpu();
    const separate = await Gpu.create({ kernels: { decodeMerge: 'separate' } });
    try {
      expect([kernelPolicy(fold).decodeMerge, kernelPolicy(separate).decodeMerge]).toEqual(['fold', 'separate']);
      expect(fastPaths(fold)[MERGED]).toEqual({ on: true });
      const why = "DeviceOptions.kernels.decodeMerge is 'separate'";
      expect(separate.summary.fastPaths[MERGED]).toEqual({ on: false, why });
      const kvLen = 150, scale = 1 / Math.sqrt(D);
      const opts = { kvLen, offset: kvLen - 1, mask: { kind: 'causal' }, scale } as const;
      const q = randn(7, H * D, 4), k = randn(8, H * CAP * D), v = randn(9, H * CAP * D);
      const run = async (gpu: Gpu) => {
        const [qt, kt, vt] = [Tensor.from(gpu, q, [H, 1, D], 'f32', 'q'), side(gpu, k, 'k'), side(gpu, v, 'v')];
        let out: Tensor | undefined;
        const kernels = recordDispatches(() => { out = sdpa(qt, kt, vt, opts); });
        const got = await out!.readF32();
        for (const t of [qt, kt.data, vt.data, out!]) t.dispose();
        return { kernels: kernels.map((r) => r.kernel), got };
      };
      const [a, b] = [await run(fold), await run(separate)];
      expect(a.kernels).toEqual([`${ONE}one_split_fold`]);
      expect(b.kernels).toEqual([`${ONE}one_split`, `${ONE}one_merge`]);
      const ref = sdpaRef(q, k, v, { ...opts, heads: H, seq: 1, dim: D, cap: CAP });
      expectClose(a.got, ref, 4e-6, 0, 'folded merge against f64');
      expectClose(b.got, ref, 4e-6, 0, 'separate merge against f64');
      expectBitExact(a.got, b.got, 'folded vs separate');
    } finally {
      separate.destroy();
    }
  });

  it('a cache slot runs a decode step as its Gpu plans it: the append fused, the merge its Gpu\'s', async () => {
    const fold = await getGpu();
    const separate = await Gpu.create({ kernels: { decodeMerge: 'separate' } });
    try {
      const offset = 90;
      const gqkv = randn(11, 4 * H * D, 2), k = randn(12, H * CAP * D), v = randn(13, H * CAP * D);
      const step = async (gpu: Gpu) => {
        const geometry = { heads: H, headDim: D, ropeBase: 1e4, round: 'none' } as const;
        const slot = new CacheSlot(side(gpu, k, 'k'), side(gpu, v, 'v'), geometry);
        const pass: CachePass = { S: 1, offset, tokenTypes: [], mask: { kind: 'causal' }, shadow: null, temps: [] };
        const g = Tensor.from(gpu, gqkv, [1, 4 * H * D], 'f32', 'gqkv');
        let out: Tensor | undefined;
        const kernels = recordDispatches(() => { out = slot.appendAttend(g, pass); });
        const got = await out!.readF32();
        out!.dispose(); g.dispose(); slot.dispose();
        return { kernels: kernels.map((r) => r.kernel), got };
      };
      const [a, b] = [await step(fold), await step(separate)];
      expect(a.kernels).toEqual([`${APPEND}one_split_append_fold`]);
      expect(b.kernels).toEqual([`${APPEND}one_split_append`, `${ONE}one_merge`]);
      expectBitExact(a.got, b.got, 'the slot\'s step, folded vs separate merge');
    } finally {
      separate.destroy();
    }
  });
});
