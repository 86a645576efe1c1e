// The buffer an attention kernel binds as `mask` (common/mask.inc.wgsl): prefix token types or an explicit mask,
// checked against the queries and keys of the call, or a placeholder when the mask needs no tensor.
import type { Gpu } from '../../gpu/gpu.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, ShapeError } from '../../errors.ts';
import { placeholder } from '../common/placeholder.ts';
import type { AttnMask } from './types.ts';

export function maskBinding(op: string, gpu: Gpu, m: AttnMask,
  { seq, kvLen, offset }: { seq: number; kvLen: number; offset: number }): Tensor {
  if (m.kind === 'none' || m.kind === 'causal') return placeholder(gpu, 'no_mask', 'u32');
  const t = m.kind === 'prefix' ? m.tokenTypes : m.mask;
  if (t.dtype !== 'u32') throw new DTypeError(op, `${m.kind} mask '${t.label}' is ${t.dtype}; expected u32`);
  if (m.kind === 'prefix') {
    // Token types of every key and of every query position.
    const need = Math.max(kvLen, offset + seq);
    if (t.size < need) throw new ShapeError(op,
      `prefix mask '${t.label}' [${t.shape.join(', ')}] has ${t.size} entries; ` +
      `${need} needed (tokenTypes of keys 0..${need})`);
  } else if (t.size !== seq * kvLen) {
    throw new ShapeError(op,
      `explicit mask '${t.label}' [${t.shape.join(', ')}] has ${t.size} entries; ` +
      `expected [${seq}, ${kvLen}] (S, kvLen)`);
  }
  return t;
}
