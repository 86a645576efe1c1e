// How far a decode step's attention dispatches reach into the cache. The dispatches of a captured step must be the
// same at every position it replays (CONTRIBUTING, step 6), so they cannot follow kvLen; over the whole capacity
// each step pays for every workgroup past the cached keys, which on a CPU driver costs nearly as much as one that
// works (SwiftShader: 0.84 s a step of the embedded model at 50 positions of capacity, 83 s at 1000). So they cover
// a reach: the keys in use rounded up to a power of two, at least MIN_REACH, at most the capacity. Positions in one
// reach share their dispatches (the decode graph captures one reach at a time, src/hrm/decode.ts), and the reach
// doubles as the cache fills, so it costs at most twice the keys in use. The kernels sum over chunks holding keys
// in an order fixed by kvLen alone: any reach that covers kvLen gives the same bits.
import { ShapeError } from '../../errors.ts';

/** The smallest reach: two chunks of qsdpa_one at head dim 128, or of sdpa_one; below it the step costs little. */
export const MIN_REACH = 64;

/** The reach that covers `kvLen` keys of a cache of `capacity` positions: the one place that chooses it. */
export function attentionReach(kvLen: number, capacity: number): number {
  let reach = MIN_REACH;
  while (reach < kvLen) reach *= 2;
  return Math.min(capacity, reach);
}

/**
 * The keys a decode attention dispatch covers: `reach` when its caller fixed one (a captured step, over all the
 * positions it replays at), else attentionReach(kvLen, capacity). Every decode attention kernel takes it from here.
 */
export function reachFor(op: string, kvLen: number, capacity: number, reach?: number): number {
  if (reach === undefined) return attentionReach(kvLen, capacity);
  if (!Number.isInteger(reach) || reach < kvLen || reach > capacity) {
    throw new ShapeError(op, `reach ${reach} must be an integer in [kvLen ${kvLen}, capacity ${capacity}]`);
  }
  return reach;
}

/**
 * The positions a coded cache side (q8/q4, turbo) is decoded over for a full-precision attention pass: the `len`
 * keys in use, or a captured step's `reach` (its dispatch replays at every position of the reach, so it cannot
 * follow len). Both decoders take it from here.
 */
export function decodeSpan(op: string, len: number, capacity: number, reach?: number): number {
  if (!(Number.isInteger(len) && len >= 0 && len <= capacity)) {
    throw new ShapeError(op, `len ${len} is not within the capacity ${capacity}`);
  }
  return reach === undefined ? len : reachFor(op, len, capacity, reach);
}
