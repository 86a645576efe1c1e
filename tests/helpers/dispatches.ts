// The dispatches a piece of code records, as plain data (for tests of a decode step's structure: a step recorded
// once and replayed at other positions may differ only in uniform values).
import { expect, vi } from 'vitest';
import { Kernel } from '../../src/kernels/kernel.ts';
import { Tensor } from '../../src/tensor/tensor.ts';

export interface DispatchRecord {
  /** file#entry */
  kernel: string;
  overrides: Record<string, number>;
  workgroups: number[];
  /** Bytes bound per binding name. */
  bindings: Record<string, number>;
  uniforms: Record<string, number>;
}

/** Runs `fn` and returns the Kernel.dispatch calls it made (they still run). */
export function recordDispatches(fn: () => unknown): DispatchRecord[] {
  const spy = vi.spyOn(Kernel.prototype, 'dispatch');
  try {
    fn();
    return spy.mock.calls.map(([, a], i) => {
      const k = spy.mock.contexts[i] as Kernel;
      const wg = typeof a.workgroups === 'number' ? [a.workgroups] : a.workgroups;
      return {
        kernel: `${k.file}#${k.entry}`,
        overrides: { ...a.overrides },
        workgroups: [wg[0], wg[1] ?? 1, wg[2] ?? 1],
        bindings: Object.fromEntries(Object.entries(a.bindings).map(([n, b]) => [n,
          b instanceof Tensor ? b.byteLength : b.size])),
        uniforms: { ...a.uniforms },
      };
    });
  } finally {
    spy.mockRestore();
  }
}

/**
 * Same kernels, overrides, workgroup counts, binding sizes and uniform fields in the same order; uniform values
 * may differ only in the fields named in `varying`.
 */
export function expectSameStructure(a: DispatchRecord[], b: DispatchRecord[], varying: string[], what: string): void {
  const shape = (r: DispatchRecord) => ({ ...r, uniforms: Object.keys(r.uniforms).sort() });
  expect(a.map(shape), `${what}: structure`).toEqual(b.map(shape));
  for (let i = 0; i < a.length; i++) {
    const changed = Object.keys(a[i].uniforms).filter((u) => a[i].uniforms[u] !== b[i].uniforms[u]);
    expect(changed.filter((u) => !varying.includes(u)),
      `${what}: uniforms of dispatch ${i} (${a[i].kernel}) that changed`).toEqual([]);
  }
}
