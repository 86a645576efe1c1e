// The model's projections and embedding by the kind of weight: dense chunks go to matmul / embed, quantized ones
// (Weight.quant) to qlinear / qembed, with the same options and fusions; a layer's MLP block and its tail after
// attention (o_proj + the MLP, + the next layer's norm + gqkv within a stack), one dispatch where the persistent
// kernel (kernels/persist/mlp.ts) takes them.
import { Tensor } from '../tensor/tensor.ts';
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

/** A layer's weights after its attention: the output projection, then the MLP's. */
export interface TailWeights { o: Weight; gateUp: Weight; down: Weight }

/**
 * A layer's tail after its attention into x in place: x += o(attn) (attn: the gated attention output), then HRM's
 * MLP block (mlp). For a decode row with `persistent` (as mlp's), all of it in one dispatch, the persistent kernel's
 * OPROJ variant (kernels/persist/mlp.ts), where the Gpu runs it, its grid was measured (prepareTail) and it takes
 * the three weights (dense, one chunk each; it reproduces the three products' sums), and with `next` (the next
 * layer's gqkv weight) the NEXT variant where it takes that too: it then also computes next(rmsNorm(x)), returned
 * (the product linear(x, next, { norm }) would give, bit for bit); else o_proj's residual product, then mlp (whose
 * MLP may still run on the persistent kernel alone). Null where the next gqkv was not computed.
 */
export function tail(x: Tensor, attn: Tensor, w: TailWeights, o: MlpBlockOptions, next?: Weight): Tensor | null {
  const dense = o.persistent ? denseOperands(w.o, w.gateUp, w.down) : null;
  if (dense) {
    const one = { eps: o.eps, round: o.round, oProj: { attn, w: dense[0] } };
    const q = next && denseOperands(next);
    if (q) {
      const out = Tensor.empty(x.gpu, [1, q[0].shape[0]], 'f32', 'gqkv');
      if (mlpPersistent(x, dense[1], dense[2], { ...one, next: { w: q[0], out } })) return out;
      out.dispose();
    }
    if (mlpPersistent(x, dense[1], dense[2], one)) return null;
  }
  linear(attn, w.o, { round: o.round, accumulate: x });
  mlp(x, w.gateUp, w.down, o);
  return null;
}

/**
 * HRM's MLP block into x in place: x + down(silu(gate) * up), gate | up = gateUp(rmsNorm(x)). For a decode row:
 * with `persistent` (a forward whose caller reads the barrier's flag after it: decode.ts, stepper.ts) the persistent
 * kernel (kernels/persist/mlp.ts) where the Gpu runs it, its grid was measured (prepareTail) and it takes the
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
 * Measure the persistent kernel's grid on a layer's weights (mlpGrid) before a persistent forward needs it, for the
 * variants tail runs: with `next` (the next layer's gqkv weight) the NEXT one, and the OPROJ one (where NEXT is not
 * taken or held at no grid), else (where it does not take o_proj) the MLP alone. x is a decode row's [1, hidden]
 * f32 (its values unused). Once per kernel variant and Gpu; nothing where the kernels are off or the weights are
 * not dense ones of one chunk each.
 */
export async function prepareTail(x: Tensor, w: TailWeights, next?: Weight): Promise<void> {
  const dense = denseOperands(w.o, w.gateUp, w.down);
  if (dense) {
    const attn = Tensor.empty(x.gpu, [1, w.o.cols], 'f32', 'prepare.attn');
    const q = next && denseOperands(next);
    const out = q && Tensor.empty(x.gpu, [1, q[0].shape[0]], 'f32', 'prepare.gqkv');
    try {
      const oProj = { attn, w: dense[0] };
      if (q && await mlpGrid(x, dense[1], dense[2], oProj, { w: q[0], out: out! }) > 0) return;
      if (await mlpGrid(x, dense[1], dense[2], oProj) > 0) return;
    } finally {
      attn.dispose();
      out?.dispose();
    }
  }
  const mlpDense = denseOperands(w.gateUp, w.down);
  if (mlpDense) await mlpGrid(x, mlpDense[0], mlpDense[1]);
}

/** The weights' tensors where all are dense and of one chunk each, else null. */
function denseOperands(...ws: Weight[]): Tensor[] | null {
  return ws.every((w) => !w.quant && w.chunks.length === 1) ? ws.map((w) => w.chunks[0]) : null;
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
