// Data types as stored on the GPU. bf16 and f16 are packed two per 32-bit word (WGSL has no bf16 type, and
// f16 storage needs the shader-f16 feature); readback widens them to f32.
import { DTypeError } from '../errors.ts';

export type DType = 'f32' | 'f16' | 'bf16' | 'u32' | 'i32';
export const DTYPES: readonly DType[] = ['f32', 'f16', 'bf16', 'u32', 'i32'];

/** Bytes per element. */
export function dtypeBytes(dtype: DType): number {
  switch (dtype) {
    case 'f32': case 'u32': case 'i32': return 4;
    case 'f16': case 'bf16': return 2;
    default: throw new DTypeError('dtype', `unknown dtype ${JSON.stringify(dtype)}; known: ${DTYPES.join(', ')}`);
  }
}

/** Bytes a GPU buffer needs for `n` elements: rounded up to whole 4-byte words. */
export function storageBytes(dtype: DType, n: number): number {
  return Math.ceil((n * dtypeBytes(dtype)) / 4) * 4;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** f32 -> bf16 bits, round to nearest even (as MLX and PyTorch do). NaN stays NaN. */
export function f32ToBf16(x: number): number {
  f32[0] = x;
  const b = u32[0];
  if ((b & 0x7f800000) === 0x7f800000 && (b & 0x7fffff) !== 0) return (b >>> 16) | 0x40;
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

/** bf16 bits -> f32 (exact: bf16 is the top half of an f32). */
export function bf16ToF32(h: number): number {
  u32[0] = (h & 0xffff) << 16;
  return f32[0];
}

const f64 = new Float64Array(1);
const f64Hi = new Uint32Array(f64.buffer, 4, 1);

/**
 * Spacing of the half type's values at |x|: the ulp of x's binade (read from its exponent bits, exact at powers of
 * two), the subnormal spacing below the smallest normal. The unit of the parity criteria, in tests and self-checks.
 */
export function halfUlp(x: number, dtype: 'bf16' | 'f16'): number {
  const [mant, minExp] = dtype === 'bf16' ? [7, -126] : [10, -14];
  f64[0] = x;
  const e = x === 0 ? minExp : Math.max(minExp, ((f64Hi[0] >>> 20) & 0x7ff) - 1023);
  return 2 ** (e - mant);
}

/** Round an f32 value to the nearest bf16 value (RNE), returned as a number. */
export function roundBf16(x: number): number {
  return bf16ToF32(f32ToBf16(x));
}

/** f32 -> IEEE half bits, round to nearest even, with subnormals, overflow to inf. */
export function f32ToF16(x: number): number {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let m = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    if (rem > half || (rem === half && (m & 1))) m++;
    return sign | m;
  }
  let m = mant >>> 13;
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (m & 1))) {
    m++;
    if (m === 0x400) { m = 0; e++; if (e >= 0x1f) return sign | 0x7c00; }
  }
  return sign | (e << 10) | m;
}

/** IEEE half bits -> f32. */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 0x1f) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/** Round to the nearest f16 value (RNE). */
export function roundF16(x: number): number {
  return f16ToF32(f32ToF16(x));
}

/** Pack numbers into 16-bit words of the given half type. */
export function packHalf(dtype: 'bf16' | 'f16', values: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(values.length + (values.length & 1));
  const conv = dtype === 'bf16' ? f32ToBf16 : f32ToF16;
  for (let i = 0; i < values.length; i++) out[i] = conv(values[i]);
  return out;
}

/** Widen 16-bit words of the given half type to f32. */
export function unpackHalf(dtype: 'bf16' | 'f16', bits: Uint16Array, n = bits.length): Float32Array {
  const out = new Float32Array(n);
  if (dtype === 'bf16') {
    const w = new Uint32Array(out.buffer);
    for (let i = 0; i < n; i++) w[i] = bits[i] << 16;
  } else {
    for (let i = 0; i < n; i++) out[i] = f16ToF32(bits[i]);
  }
  return out;
}
