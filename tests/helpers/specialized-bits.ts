// Outputs, as bits, of kernels run with their overrides as pipeline constants or written into the source
// (kernels/specialize.ts): gemv_wide's products (the kernel naga panicked on; with its norm, and with swiglu) and
// the embedded model's bf16 logits with a quantized cache. Each setting on a Gpu of its own (pipelines are cached
// per device). Shared by specialize.test.ts (Node) and deno-specialize.ts (Deno).
import { Gpu } from '../../src/kernels/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { matmul } from '../../src/kernels/matmul/matmul.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { randn } from '../../testkit/helpers/seeded.ts';
import { BROWN } from '../../testkit/helpers/fixtures.ts';

// gemv_wide's operands: 256 bf16 a row are 32 16-byte units, one per lane of a 32-lane row group.
const K = 256;
export const N = 64;
export const PROMPT = [6, 40, 41, 42, 43, 44, 45];

/**
 * gemv_wide's two outputs (when `gemvWide`), then the tiled matmul's (with `tiled`), then the logits
 * [PROMPT.length, vocab] (unless `model` is false), as u32 bits; `unroll` forces the loops written out (unroll.ts).
 * Both through the Gpu's kernel options.
 */
export async function outputBits(special: boolean, gemvWide: boolean,
  o: { unroll?: boolean; tiled?: boolean; model?: boolean } = {}): Promise<Uint32Array[]> {
  const gpu = await Gpu.create({ kernels: { specialize: special, unroll: o.unroll } });
  try {
    const out: Uint32Array[] = [];
    if (gemvWide) {
      const x = Tensor.from(gpu, randn(1, K), [1, K], 'f32', 'x');
      const w = Tensor.from(gpu, randn(2, N * K, 0.1), [N, K], 'bf16', 'w');
      const gemv = { kernel: 'wide' as const, wg: 32, groups: 4, rows: 16 };
      for (const swiglu of [false, true]) {
        const y = matmul(x, w, { path: 'gemv', gemv, norm: { eps: 1e-6 }, swiglu, round: 'bf16' });
        out.push(new Uint32Array((await y.readF32()).buffer));
      }
    }
    if (o.tiled) {
      // 70 x 200 @ 130 x 200^T: partial tiles on both axes and a K that is not a multiple of the slice.
      const x = Tensor.from(gpu, randn(3, 70 * 200), [70, 200], 'f32', 'x');
      const w = Tensor.from(gpu, randn(4, 130 * 200, 0.1), [130, 200], 'bf16', 'w');
      out.push(new Uint32Array((await matmul(x, w, { path: 'tiled', round: 'bf16' }).readF32()).buffer));
    }
    if (o.model === false) return out;
    const lm = await loadModel(dirFiles(BROWN), { gpu, dtype: 'bf16' });
    const cache = lm.model.newCache({ capacity: PROMPT.length, kv: { k: 8, v: 4 } });
    out.push(new Uint32Array((await lm.model.forward(PROMPT, cache, { mask: 'prefix' }).readF32()).buffer));
    return out;
  } finally {
    gpu.destroy();
  }
}
