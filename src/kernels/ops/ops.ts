// HRM's small ops: embedding, residual add, the MLP's silu(gate) * up, attention's sigmoid output gate, and the
// row ops of the head (softmax, log-softmax, log-sum-exp, KL, argmax). Activations are f32; `round` rounds each
// op's output where an MLX model in bf16 / f16 would (elementwise.wgsl); the row ops are f32 throughout (rows.wgsl).
// Without a caller in the model, kept on purpose: siluMul and sigmoidGate are the composed forms the fused kernels
// (matmul's swiglu, attention's gate) are tested against bit for bit; softmaxRows, logSoftmaxRows and klRows are
// the library's GPU row ops for scoring logits (tests/kernels/ops/ops.test.ts checks each against ops.ref.ts).
import { Kernel, grid } from '../kernel.ts';
import { Tensor, numel } from '../../tensor/tensor.ts';
import { DTypeError, ShapeError } from '../../errors.ts';
import { roundBf16, roundF16 } from '../../tensor/dtype.ts';
import { DTYPE_CODE, roundCode, type Round } from '../common/codes.ts';

const EW = 'ops/elementwise.wgsl';
const ROWS = 'ops/rows.wgsl';
const K = {
  embed: new Kernel(EW, 'embed'),
  add: new Kernel(EW, 'add'),
  siluMul: new Kernel(EW, 'silu_mul'),
  sigmoidGate: new Kernel(EW, 'sigmoid_gate'),
  softmax: new Kernel(ROWS, 'softmax_rows'),
  logSoftmax: new Kernel(ROWS, 'log_softmax_rows'),
  logSumExp: new Kernel(ROWS, 'logsumexp_rows'),
  kl: new Kernel(ROWS, 'kl_rows'),
  argmax: new Kernel(ROWS, 'argmax_rows'),
};
const WG = 64;

export interface RoundOptions { round?: Round }

const desc = (t: Tensor): string => `'${t.label}' [${t.shape.join(', ')}] ${t.dtype}`;

function requireF32(op: string, ...ts: Tensor[]): void {
  for (const t of ts) if (t.dtype !== 'f32') throw new DTypeError(op, `${desc(t)} must be f32`);
}

function lastAxis(op: string, t: Tensor): number {
  const c = t.rank ? t.shape[t.rank - 1] : 0;
  if (!c) throw new ShapeError(op, `${desc(t)} needs a non-empty last axis`);
  return c;
}

/** Uniforms of elementwise.wgsl (every entry declares the same struct). */
function ew(n: number, cols: number, lda: number, vocab = 0, row0 = 0, rows = 0, scale = 0) {
  return { n, cols, lda, vocab, row0, rows, scale };
}

export interface EmbedOptions extends RoundOptions {
  /** Multiplier (HRM's embedding_scale); default 1. With round 'bf16' / 'f16' it is first rounded to that dtype, as
   * MLX casts a Python float to the array's dtype. */
  scale?: number;
}

/**
 * out[..., h] = r(table[ids[...], h] * scale). ids: u32 (any shape); table: [V, H] f32 / bf16 / f16, or its
 * row-chunks [V_0, H], [V_1, H], ... (V = sum V_i) when it is larger than one binding.
 * The GPU cannot raise: an id >= V reads row V - 1. Validate ids on the CPU before calling (the tokenizer and the
 * model know V); this kernel only guarantees no out-of-bounds read.
 */
export function embed(ids: Tensor, table: Tensor | readonly Tensor[], opts: EmbedOptions = {}): Tensor {
  const chunks = Array.isArray(table) ? (table as readonly Tensor[]) : [table as Tensor];
  if (ids.dtype !== 'u32') throw new DTypeError('embed', `ids ${desc(ids)} must be u32`);
  if (!chunks.length) throw new ShapeError('embed', `no table given for ids ${desc(ids)}`);
  const H = chunks[0].shape[1];
  for (const t of chunks) {
    if (!(t.dtype in DTYPE_CODE) || t.dtype !== chunks[0].dtype) {
      throw new DTypeError('embed', `table ${desc(t)} must be f32, bf16 or f16, every chunk alike (ids ${desc(ids)})`);
    }
    if (t.rank !== 2 || t.shape[0] === 0 || t.shape[1] !== H) throw new ShapeError('embed',
      `table ${desc(t)} must be [V, ${H}] (ids ${desc(ids)})`);
  }
  const round = opts.round ?? 'none';
  const s = opts.scale ?? 1;
  const scale = round === 'bf16' ? roundBf16(s) : round === 'f16' ? roundF16(s) : s;
  const V = chunks.reduce((n, t) => n + t.shape[0], 0);
  const out = Tensor.empty(ids.gpu, [...ids.shape, H], 'f32', 'embed.out');
  const overrides = { WG, ROUND: roundCode('embed', round),
    WDT: DTYPE_CODE[chunks[0].dtype as keyof typeof DTYPE_CODE] };
  let row0 = 0;
  for (const t of chunks) {
    K.embed.dispatch(ids.gpu, {
      bindings: { ids, table: t, out }, uniforms: ew(out.size, H, H, V, row0, t.shape[0], scale),
      overrides, workgroups: grid(ids.gpu, out.size, WG),
    });
    row0 += t.shape[0];
  }
  return out;
}

/** out = r(a + b), same shapes (the residual add). */
export function add(a: Tensor, b: Tensor, opts: RoundOptions = {}): Tensor {
  requireF32('add', a, b);
  if (a.shape.join() !== b.shape.join()) throw new ShapeError('add', `shapes differ: a ${desc(a)} vs b ${desc(b)}`);
  const out = Tensor.empty(a.gpu, a.shape, 'f32', 'add.out');
  K.add.dispatch(a.gpu, {
    bindings: { a, b, out }, uniforms: ew(a.size, 1, 1), overrides: { WG, ROUND: roundCode('add', opts.round) },
    workgroups: grid(a.gpu, a.size, WG),
  });
  return out;
}

/** out[..., i] = r(r(g * r(sigmoid(g))) * u), g = gu[..., i], u = gu[..., I + i]; gu [..., 2I] -> [..., I]. */
export function siluMul(gu: Tensor, opts: RoundOptions = {}): Tensor {
  requireF32('siluMul', gu);
  const w = lastAxis('siluMul', gu);
  if (w % 2) throw new ShapeError('siluMul', `gu ${desc(gu)}: last axis must be even ([gate | up])`);
  const I = w / 2;
  const out = Tensor.empty(gu.gpu, [...gu.shape.slice(0, -1), I], 'f32', 'siluMul.out');
  K.siluMul.dispatch(gu.gpu, {
    bindings: { a: gu, out }, uniforms: ew(out.size, I, w), overrides: { WG, ROUND: roundCode('siluMul', opts.round) },
    workgroups: grid(gu.gpu, out.size, WG),
  });
  return out;
}

/** out[..., i] = r(r(sigmoid(gqkv[..., i])) * o[..., i]); gqkv [..., 4D] ([gate | q | k | v]), o [..., D]. */
export function sigmoidGate(gqkv: Tensor, o: Tensor, opts: RoundOptions = {}): Tensor {
  requireF32('sigmoidGate', gqkv, o);
  const D = lastAxis('sigmoidGate', o);
  const w = lastAxis('sigmoidGate', gqkv);
  if (w !== 4 * D || gqkv.size / w !== o.size / D) {
    throw new ShapeError('sigmoidGate', `gqkv ${desc(gqkv)} must be [..., 4 * ${D}] with the rows of o ${desc(o)}`);
  }
  const out = Tensor.empty(o.gpu, o.shape, 'f32', 'sigmoidGate.out');
  K.sigmoidGate.dispatch(o.gpu, {
    bindings: { a: gqkv, b: o, out }, uniforms: ew(o.size, D, w), overrides: { WG,
      ROUND: roundCode('sigmoidGate', opts.round) },
    workgroups: grid(o.gpu, o.size, WG),
  });
  return out;
}

export interface RowOptions {
  /** Divide the logits by this first (computed as x * (1 / T), as mlx-lm's sampler scales logits). Default 1. */
  temperature?: number;
}

function rowDispatch(kernel: Kernel, x: Tensor, bindings: Record<string, Tensor>, invTemp = 1): void {
  const cols = lastAxis(kernel.name, x);
  const rows = x.size / cols;
  kernel.dispatch(x.gpu,
    { bindings: { x, ...bindings }, uniforms: { rows, cols, inv_temp: invTemp }, workgroups: grid(x.gpu, rows, 1) });
}

function invTemperature(op: string, t: number | undefined): number {
  const T = t ?? 1;
  if (!(T > 0) || !Number.isFinite(T)) throw new ShapeError(op,
    `temperature must be a positive finite number, got ${T}`);
  return 1 / T;
}

/** out[r, :] = softmax(x[r, :] / T) over the last axis, f32 inside. */
export function softmaxRows(x: Tensor, opts: RowOptions = {}): Tensor {
  requireF32('softmaxRows', x);
  const out = Tensor.empty(x.gpu, x.shape, 'f32', 'softmaxRows.out');
  rowDispatch(K.softmax, x, { out }, invTemperature('softmaxRows', opts.temperature));
  return out;
}

/** out[r, :] = x[r, :] / T - logsumexp(x[r, :] / T). */
export function logSoftmaxRows(x: Tensor, opts: RowOptions = {}): Tensor {
  requireF32('logSoftmaxRows', x);
  const out = Tensor.empty(x.gpu, x.shape, 'f32', 'logSoftmaxRows.out');
  rowDispatch(K.logSoftmax, x, { out }, invTemperature('logSoftmaxRows', opts.temperature));
  return out;
}

/** out[r] = log sum_j exp(x[r, j]) (max-subtracted); shape x.shape without the last axis. */
export function logSumExpRows(x: Tensor): Tensor {
  requireF32('logSumExpRows', x);
  lastAxis('logSumExpRows', x);
  const out = Tensor.empty(x.gpu, x.shape.slice(0, -1), 'f32', 'logSumExpRows.out');
  rowDispatch(K.logSumExp, x, { out });
  return out;
}

/** out[r] = KL(P_r || Q_r) = sum_v P (log P - log Q), P = softmax(p[r]), Q = softmax(q[r]); log-probs in f32. */
export function klRows(p: Tensor, q: Tensor): Tensor {
  requireF32('klRows', p, q);
  lastAxis('klRows', p);
  if (p.shape.join() !== q.shape.join()) throw new ShapeError('klRows', `shapes differ: p ${desc(p)} vs q ${desc(q)}`);
  const out = Tensor.empty(p.gpu, p.shape.slice(0, -1), 'f32', 'klRows.out');
  rowDispatch(K.kl, p, { y: q, out });
  return out;
}

/**
 * out[r] = first index of the maximum of x[r, :] (mx.argmax), u32, or 0xffffffff when the row holds a NaN; into
 * `out` when given (u32, one per row).
 */
export function argmaxRows(x: Tensor, out?: Tensor): Tensor {
  requireF32('argmaxRows', x);
  lastAxis('argmaxRows', x);
  const rows = x.shape.slice(0, -1);
  if (out && (out.dtype !== 'u32' || out.size !== numel(rows))) {
    throw new ShapeError('argmaxRows', `out ${desc(out)} must be u32 with one entry per row of x ${desc(x)}`);
  }
  const idx = out ?? Tensor.empty(x.gpu, rows, 'u32', 'argmaxRows.out');
  rowDispatch(K.argmax, x, { idx });
  return idx;
}
