// The model's projections and embedding by the kind of weight: dense chunks go to matmul / embed, quantized ones
// (Weight.quant) to qlinear / qembed, with the same options and fusions.
import type { Tensor } from '../tensor/tensor.ts';
import { embed as denseEmbed, type EmbedOptions } from '../kernels/ops/ops.ts';
import { matmul } from '../kernels/matmul/matmul.ts';
import type { MatmulOptions } from '../kernels/matmul/matmul.ts';
import { qembed, qlinear, type QuantMatrix } from '../kernels/qlinear/qlinear.ts';
import { mlpFold, type MlpOptions } from '../kernels/matmul/gemv-mlp.ts';
import { qmlpFold } from '../kernels/qlinear/qgemv-mlp.ts';
import { decodeMlpFolds } from '../kernels/plan/matmul.ts';
import { mlpGrid, mlpPersistent } from '../kernels/persist/mlp.ts';
import type { Round } from '../kernels/common/codes.ts';
import type { Weight } from './layout.ts';

/** A weight's quantized view (qlinear's QuantMatrix), or null for a dense one. */
export function quantMatrix(w: Weight): QuantMatrix | null {
  return w.quant ? { bits: w.quant.bits, groupSize: w.quant.groupSize, q: w.chunks, scales: w.quant.scales,
    biases: w.quant.biases } : null;
}

/** x @ W^T (nn.Linear / nn.QuantizedLinear) with matmul's options. */
export function linear(x: Tensor, w: Weight, opts: MatmulOptions = {}): Tensor {
  const q = quantMatrix(w);
  return q ? qlinear(x, q, opts) : matmul(x, w.chunks, opts);
}

/** mlp's options: rmsNorm's eps, the output rounding, and whether the persistent MLP may run (see mlp). */
export interface MlpBlockOptions { eps: number; round: Round; persistent?: boolean }

/**
 * HRM's MLP block into x in place: x + down(silu(gate) * up), gate | up = gateUp(rmsNorm(x)). For a decode row:
 * with `persistent` (a forward whose caller reads the barrier's flag after it: decode.ts, stepper.ts) the persistent
 * kernel (kernels/persist/mlp.ts) where the Gpu runs it, its grid was measured (prepareMlp) and it takes the
 * weights (dense, one chunk each; it reproduces the two products' sums); else one dispatch where the planner folds
 * it (kernels/plan/matmul.ts, decodeMlpFolds) and the kernel takes the weights (gemv_mlp on dense weights of one
 * chunk each, qgemv_mlp on 4- and 8-bit ones); else the two products.
 */
export function mlp(x: Tensor, gateUp: Weight, down: Weight, o: MlpBlockOptions): Tensor {
  const dense = o.persistent ? denseOperands(gateUp, down) : null;
  if (dense && mlpPersistent(x, dense[0], dense[1], { eps: o.eps, round: o.round })) return x;
  if (decodeMlpFolds(x.gpu, x.size / gateUp.cols) && mlpFoldWeights(x, gateUp, down, o)) return x;
  const a = linear(x, gateUp, { round: o.round, norm: { eps: o.eps }, swiglu: true });
  linear(a, down, { round: o.round, accumulate: x });
  a.dispose();
  return x;
}

/**
 * Measure the persistent MLP's grid on a model's weights (mlpGrid) before a persistent forward needs it: x is a
 * decode row's [1, hidden] f32 (its values unused). Once per kernel variant and Gpu; nothing where the kernels are
 * off or the weights are not dense ones of one chunk each.
 */
export async function prepareMlp(x: Tensor, gateUp: Weight, down: Weight): Promise<void> {
  const dense = denseOperands(gateUp, down);
  if (dense) await mlpGrid(x, dense[0], dense[1]);
}

/** gate_up's and down's tensors where both are dense and of one chunk each, else null. */
function denseOperands(gateUp: Weight, down: Weight): [Tensor, Tensor] | null {
  const one = !gateUp.quant && !down.quant && gateUp.chunks.length === 1 && down.chunks.length === 1;
  return one ? [gateUp.chunks[0], down.chunks[0]] : null;
}

/**
 * The one-dispatch MLP on a model's weights where its kernel takes them (x updated), else null: qgemv_mlp on 4- and
 * 8-bit ones (`units` and `prefetch` are the dense kernel's only), gemv_mlp on dense ones of one chunk each.
 */
export function mlpFoldWeights(x: Tensor, gateUp: Weight, down: Weight, o: MlpOptions): Tensor | null {
  const [gq, dq] = [quantMatrix(gateUp), quantMatrix(down)];
  if (gq && dq) return qmlpFold(x, gq, dq, o);
  const dense = denseOperands(gateUp, down);
  return dense ? mlpFold(x, dense[0], dense[1], o) : null;
}

/** Rows of the embedding table for ids, times opts.scale (nn.Embedding / nn.QuantizedEmbedding). */
export function embedding(ids: Tensor, w: Weight, opts: EmbedOptions = {}): Tensor {
  const q = quantMatrix(w);
  return q ? qembed(ids, q, opts) : denseEmbed(ids, w.chunks, opts);
}
