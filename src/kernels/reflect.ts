// What Kernel (kernel.ts) reads a WGSL module and its callers' names with: the source as wgsl_reflect can parse it,
// the overrides' canonical key, and the names a caller gave that the module does not declare.
import type { Overrides } from './kernel.ts';

/**
 * wgsl_reflect cannot parse subgroup-matrix types and builtins (matmul_sgmat.wgsl); the lines using them touch only
 * workgroup memory and locals, never a binding, uniform or override, so the reflected copy leaves them out.
 */
export function reflectable(src: string): string {
  return src.replace(/^.*\b(subgroup_matrix_(left|right|result)|subgroupMatrix\w+)\b.*$/gm, '');
}

/** Overrides in a canonical form, `NAME=value,...` sorted by name: a pipeline's cache key and label. */
export function overrideKey(overrides: Overrides): string {
  return Object.keys(overrides).sort().map((k) => `${k}=${overrides[k]}`).join(',');
}

/**
 * The keys of `given` that `known` rejects, where `found` of its keys were already matched: none when it has no
 * more keys than that, counted without building their array (the dispatch path runs this every call).
 */
export function unknownKeys(given: object, found: number, known: (name: string) => boolean): string[] {
  let n = 0;
  for (const _ in given) n++;
  return n === found ? [] : Object.keys(given).filter((k) => !known(k));
}
