// The embedded model (models/hrm-text-brown-10m) against a third-party implementation: transformers'
// HrmTextForCausalLM in f32 (TF32 off) and bf16 on the H200 (reference.safetensors, tools/train-embedded/reference.py),
// and the same math in float64 (exact.safetensors, tools/train-embedded/exact.py). Four prompts, prefix and causal
// logits of the prompt, 24 greedy steps: the ids must be transformers' exactly, our f32 logits within the f32 bound
// of float64 (bench/harness/tf-parity.ts says why), bf16 within 4 units of transformers' own bf16 error, and the
// q8 / q4 KV caches near our full cache.
import { describe, expect, it } from 'vitest';
import { transformersParity } from '../../bench/runners/parity-transformers.ts';
import { EMBEDDED } from '../../testkit/helpers/fixtures.ts';
import { getGpu } from '../helpers/gpu.ts';

describe('the embedded model against transformers and float64', () => {
  it('matches on every prompt and path', async () => {
    const r = await transformersParity({
      model: EMBEDDED, steps: 24, requireLogits: true,
      runs: [{ name: 'f32', dtype: 'f32', caches: [8, 4] }, { name: 'bf16', dtype: 'bf16' }],
      gpu: async () => ({ gpu: await getGpu(), own: false }),
    });
    expect(r.failed, JSON.stringify(r.checks.filter((c) => !c.ok))).toBe(0);
    const names = r.checks.map((c) => c.name);
    for (const p of [0, 1, 2, 3]) {
      expect(names).toContain(`f32: prompt${p} greedy ids (24 steps) differing from transformers f32`);
      for (const what of ['prefix', 'causal', 'decode']) {
        const exact = r.checks.find((c) =>
          c.name === `f32: prompt${p} f32 ${what} logits vs float64, max |diff| / max |logit|`);
        // Measured 3e-7..1e-6 against a bound of 1.8e-4: an f32 implementation of the same math, nothing more.
        expect(exact?.figure, `prompt${p} ${what}`).toBeGreaterThan(0);
        expect(exact!.figure, `prompt${p} ${what}`).toBeLessThan(exact!.bound / 20);
      }
      expect(names.some((n) => n.startsWith(`bf16: prompt${p} bf16 decode logits vs transformers f32`))).toBe(true);
      expect(names.some((n) => n.startsWith(`f32: prompt${p} q4 KV cache, 24 decode steps`))).toBe(true);
    }
  });
});
