// What the persistent kernels' tests share (tests/kernels/persist/, tests/hrm/persist-*.test.ts).
import { expect, vi } from 'vitest';
import { PROMPT } from './decode.ts';
import { HrmModel } from '../../src/hrm/model.ts';
import type { LayerWeights } from '../../src/hrm/weights.ts';
import type { Tensor } from '../../src/tensor/tensor.ts';
import { matmul } from '../../src/kernels/matmul/matmul.ts';
import { persistGrid } from '../../src/kernels/plan/persist.ts';
import { Kernel } from '../../src/kernels/kernel.ts';
import type { HrmConfig } from '../../src/hrm/config.ts';
import { generate, type GenerateStats } from '../../src/hrm/generate.ts';
import type { LoadedModel } from '../../src/hrm/load.ts';

/** got and want the same f32 bits (the persistent kernels against the per-op path); `why` names the case. */
export function expectBits(got: Float32Array, want: Float32Array, why: string): void {
  const [g, w] = [new Uint32Array(got.buffer), new Uint32Array(want.buffer)];
  expect(g.length, why).toBe(w.length);
  const bad = w.findIndex((v, i) => v !== g[i]);
  expect(bad, `${why}: output ${bad} is ${got[bad]}, the per-op path's ${want[bad]}`).toBe(-1);
}

/** Spins that only a workgroup which is not running runs out, even on a loaded CPU driver (seconds of loads). */
export const TEST_SPIN = 2 ** 26;

/**
 * A small model's shape (over the fixture model's config: testkit/helpers/model.ts randomModel) whose MLP the
 * persistent kernel takes on a CPU driver: bf16 gate_up [2048, 512] and down [512, 1024]; two layers a stack, two
 * stack calls a token.
 */
export const PERSIST_SHAPE: Partial<HrmConfig> = { hidden_size: 512, intermediate_size: 1024, num_attention_heads: 8,
  head_dim: 64, num_layers_per_stack: 2, H_cycles: 1, L_cycles: 1, max_position_embeddings: 64 };

/** Greedy generation's stats for `maxTokens` tokens after PROMPT. */
export async function greedy(lm: LoadedModel, maxTokens: number): Promise<GenerateStats> {
  for await (const ev of generate(lm, '', { promptIds: PROMPT, maxTokens })) if (ev.type === 'done') return ev.stats;
  throw new Error('no done event');
}

type Tail = (x: Tensor, attn: Tensor, w: LayerWeights, persistent: boolean, next?: LayerWeights) => Tensor | null;

/**
 * While `fn` runs, a decode row's layer tail on dense weights (o_proj's residual product, then the MLP, and where
 * the stack has a next layer its norm + gqkv product, returned for its attention) is the per-op path a GPU runs,
 * gemv_wide products (matmul's path 'gemv'), whose sums the persistent kernel reproduces: on a CPU driver matmul
 * takes its 'rows' kernels instead. With `keepPersistent`, a tail that would run persistent (a persistent forward on
 * a Gpu whose kernels are on) still does. Every other tail keeps the model's own path (each stack's first gqkv too).
 */
export async function gpuPerOpMlp<T>(fn: () => Promise<T>, keepPersistent = false): Promise<T> {
  const proto = HrmModel.prototype as unknown as { tail: Tail };
  const own = proto.tail;
  const spy = vi.spyOn(proto, 'tail').mockImplementation(function (this: HrmModel, x, attn, w, persistent, next) {
    const row = x.size === this.config.hidden_size && [w.o, w.gateUp, w.down].every((v) => !v.quant);
    if (!row || (keepPersistent && persistent && persistGrid(this.gpu) > 0)) {
      return own.call(this, x, attn, w, persistent, next);
    }
    const o = { round: this.round, path: 'gemv' as const };
    const norm = { eps: this.config.rms_norm_eps };
    matmul(attn, w.o.chunks, { ...o, accumulate: x });
    const a = matmul(x, w.gateUp.chunks, { ...o, norm, swiglu: true });
    matmul(a, w.down.chunks, { ...o, accumulate: x });
    a.dispose();
    return next && !next.gqkv.quant ? matmul(x, next.gqkv.chunks, { ...o, norm }) : null;
  });
  try { return await fn(); } finally { spy.mockRestore(); }
}

/** fn's result and how many persistent MLP dispatches it recorded (captures included). */
export async function countPersistent<T>(fn: () => Promise<T>): Promise<{ result: T; dispatched: number }> {
  const spy = vi.spyOn(Kernel.prototype, 'dispatch');
  try {
    const result = await fn();
    const dispatched = spy.mock.contexts.filter((k) => (k as Kernel).file === 'persist/mlp.wgsl').length;
    return { result, dispatched };
  } finally {
    spy.mockRestore();
  }
}
