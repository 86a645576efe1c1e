// CPU reference of finite.wgsl: counts NaN and +-Inf among decoded values (float64 tests, not bit tests).
import type { NonFinite } from './finite.ts';

export function nonFiniteRef(values: ArrayLike<number>): NonFinite {
  let count = 0, first = -1;
  for (let i = 0; i < values.length; i++) {
    if (Number.isFinite(values[i])) continue;
    if (first < 0) first = i;
    count++;
  }
  return { count, first };
}
