// CPU reference of TurboQuant's KV coding (format.ts): the fork's quantize_row_turbo*_0_ref and dequantize_row
// (ggml-turbo-quant.c) op for op, each f32 op of the C code rounded by Math.fround (exact for +, -, *, / and sqrt
// of f32 operands computed in float64), sums in the C code's order. The test oracle of the turbo kernels, checked
// bit for bit against the fork's own blocks (tests/fixtures/turbo).
import { f16ToF32, f32ToF16 } from '../../tensor/dtype.ts';
import {
  TURBO_BLOCK_BYTES, TURBO_BOUNDS, TURBO_CENTROIDS, TURBO_GROUP, TURBO_INV_SQRT_GROUP, TURBO_SIGNS1, TURBO_SIGNS2,
  turboPadded, turboSign, type TurboType,
} from './format.ts';

const f = Math.fround;
const EPS = f(1e-10);

/** Nearest centroid by the decision boundaries. */
export function turboIndex(t: TurboType, v: number): number {
  const b = TURBO_BOUNDS[t];
  for (let i = 0; i < b.length; i++) if (v < f(b[i])) return i;
  return b.length;
}

/** The fork's WHT on one group, in place: signs `first`, the butterflies, x * (1/sqrt(128) * signs `second`). */
function wht(x: number[], first: readonly number[], second: readonly number[]): void {
  for (let i = 0; i < TURBO_GROUP; i++) x[i] *= turboSign(first, i);
  for (let h = 1; h < TURBO_GROUP; h *= 2) {
    for (let i = 0; i < TURBO_GROUP; i += 2 * h) {
      for (let j = i; j < i + h; j++) {
        const a = x[j], b = x[j + h];
        x[j] = f(a + b);
        x[j + h] = f(a - b);
      }
    }
  }
  for (let i = 0; i < TURBO_GROUP; i++) x[i] = f(x[i] * (TURBO_INV_SQRT_GROUP * turboSign(second, i)));
}

/** The forward rotation y = D(s2) H/sqrt(128) D(s1) x of one group (orthogonal). */
export function turboRotate(x: number[]): void {
  wht(x, TURBO_SIGNS1, TURBO_SIGNS2);
}

/** The inverse rotation (turbo_cpu_fwht_inverse): the same butterflies with the sign patterns swapped. */
export function turboUnrotate(x: number[]): void {
  wht(x, TURBO_SIGNS2, TURBO_SIGNS1);
}

/** One 128-value group coded: its indices and its stored norm (f16 bits). */
export function encodeGroup(t: TurboType, group: ArrayLike<number>): { idx: number[]; norm: number } {
  const x = Array.from({ length: TURBO_GROUP }, (_, j) => f(group[j]));
  let sq = 0;
  for (const v of x) sq = f(sq + f(v * v));
  const norm = f(Math.sqrt(sq));
  const inv = norm > EPS ? f(1 / norm) : 0;
  for (let j = 0; j < TURBO_GROUP; j++) x[j] = f(x[j] * inv);
  turboRotate(x);
  const idx = x.map((v) => turboIndex(t, v));
  let rsq = 0;
  for (const i of idx) {
    const c = f(TURBO_CENTROIDS[t][i]);
    rsq = f(rsq + f(c * c));
  }
  const rnorm = f(Math.sqrt(rsq));
  return { idx, norm: f32ToF16(rnorm > EPS ? f(norm / rnorm) : norm) };
}

/** A group's indices and norm as the fork's block bytes. */
export function packBlock(t: TurboType, idx: readonly number[], norm: number): Uint8Array {
  const b = new Uint8Array(TURBO_BLOCK_BYTES[t]);
  b[0] = norm & 0xff;
  b[1] = norm >>> 8;
  for (let j = 0; j < TURBO_GROUP; j++) {
    const i = idx[j];
    if (t === 'turbo4') b[4 + (j >> 1)] |= i << ((j & 1) * 4);
    else b[2 + (j >> 2)] |= (i & 3) << ((j & 3) * 2);
    if (t === 'turbo3' && i & 4) b[34 + (j >> 3)] |= 1 << (j & 7);
  }
  return b;
}

/** The fork's block bytes read back: indices and the norm's f16 bits. */
export function unpackBlock(t: TurboType, b: Uint8Array): { idx: number[]; norm: number } {
  const idx = Array.from({ length: TURBO_GROUP }, (_, j) => {
    if (t === 'turbo4') return (b[4 + (j >> 1)] >> ((j & 1) * 4)) & 15;
    const lo = (b[2 + (j >> 2)] >> ((j & 3) * 2)) & 3;
    return t === 'turbo3' ? lo | (((b[34 + (j >> 3)] >> (j & 7)) & 1) << 2) : lo;
  });
  return { idx, norm: b[0] | (b[1] << 8) };
}

/** dequantize_row: centroid x norm, still in the rotated domain (what the fork's attention reads). */
export function decodeRotated(t: TurboType, block: Uint8Array): number[] {
  const { idx, norm } = unpackBlock(t, block);
  const n = f16ToF32(norm);
  return idx.map((i) => f(f(TURBO_CENTROIDS[t][i]) * n));
}

/** A head vector of `dim` values coded as the fork's cache codes it: zero-padded to whole groups, a block each. */
export function encodeHead(t: TurboType, x: ArrayLike<number>, dim: number): Uint8Array[] {
  const padded = new Array<number>(turboPadded(dim)).fill(0);
  for (let j = 0; j < dim; j++) padded[j] = x[j];
  const out: Uint8Array[] = [];
  for (let g = 0; g < padded.length; g += TURBO_GROUP) {
    const { idx, norm } = encodeGroup(t, padded.slice(g, g + TURBO_GROUP));
    out.push(packBlock(t, idx, norm));
  }
  return out;
}

/** A head's blocks decoded back to its `dim` values in the original domain (decode, inverse rotation, unpad). */
export function decodeHead(t: TurboType, blocks: readonly Uint8Array[], dim: number): number[] {
  const out: number[] = [];
  for (const b of blocks) {
    const x = decodeRotated(t, b);
    turboUnrotate(x);
    out.push(...x);
  }
  return out.slice(0, dim);
}
