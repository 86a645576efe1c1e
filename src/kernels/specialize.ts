// Override constants written into the WGSL source, for WebGPU implementations whose shader translator cannot take
// our overrides. naga 29 (wgpu: Deno, Firefox) panics applying them to a module with a workgroup array sized by
// an override expression (`array<f32, WG * ROWS * MB>`, linear.inc.wgsl) when a named override is declared after
// it: naga gives the size an anonymous override, then `process_overrides` either finds no name to look its value
// up by (pipeline_constants.rs:371, `unreachable!()`: gemv_wide, whose THREADS sizes the workgroup) or skips it
// and inserts the next override's constant out of order (arena/handlevec.rs:66: gemv_upl's UPL). Seen on an H200
// under Deno 2.9.6; lavapipe never took those kernels. A module without overrides never reaches that code, and
// `const` gives the same values the pipeline constants would: naga folds both the same way.
import type { Overrides } from './kernel.ts';
import { ShapeError } from '../errors.ts';
import { runtimeName } from '../gpu/device.ts';

/** `override NAME: TYPE = DEFAULT;` at the start of a line: the form every kernel declares its options in. */
const DECLARATION = /^override[ \t]+(\w+)[ \t]*:[ \t]*(\w+)[ \t]*=([^;\n]+);/gm;

/**
 * Whether this runtime's pipelines take overrides as source text: Deno and Firefox translate shaders with naga.
 * A Gpu's option `kernels.specialize` (tests: the same kernels both ways on one adapter) replaces the answer for
 * that Gpu (kernel.ts, shaderText).
 */
export function runtimeSpecializes(): boolean {
  if (runtimeName() === 'deno') return true;
  const ua = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent ?? '';
  return runtimeName() === 'browser' && /\bFirefox\//.test(ua);
}

/**
 * `source` with each override declaration turned into a `const` of the value given in `values` (else of its
 * default), so the module declares no override. Values convert as WebGPU converts pipeline constants, except that a
 * u32/i32 value must be a whole number in range (the wrappers never pass another); `label` names the kernel in
 * errors.
 */
export function specialize(source: string, values: Overrides, label: string): string {
  const seen = new Set<string>();
  const out = source.replace(DECLARATION, (_, name: string, type: string, init: string) => {
    seen.add(name);
    const v = values[name];
    return `const ${name}: ${type} = ${v === undefined ? init.trim() : literal(v, type, name, label)};`;
  });
  const stray = /^[ \t]*(@id\([^)]*\)[ \t]*)?override\b.*$/m.exec(out);
  if (stray) {
    const want = "expected 'override NAME: TYPE = DEFAULT;'";
    throw new ShapeError(label, `cannot specialize the override declaration '${stray[0].trim()}' (${want})`);
  }
  const unknown = Object.keys(values).filter((k) => !seen.has(k));
  if (unknown.length) throw new ShapeError(label, `unknown override(s) ${unknown.join(', ')}`);
  return out;
}

/** A WGSL literal of `type` holding exactly the value WebGPU would give the override for the number `v`. */
function literal(v: number, type: string, name: string, label: string): string {
  const bad = (why: string) => new ShapeError(label, `override '${name}' = ${v} ${why}`);
  if (type === 'bool') return v !== 0 && !Number.isNaN(v) ? 'true' : 'false';
  if (!Number.isFinite(v)) throw bad(`is not finite (${type})`);
  if (type === 'u32' || type === 'i32') {
    const [lo, hi] = type === 'u32' ? [0, 0xffffffff] : [-0x80000000, 0x7fffffff];
    if (!Number.isInteger(v) || v < lo || v > hi) throw bad(`is not a valid ${type}`);
    return `${v}${type === 'u32' ? 'u' : 'i'}`;
  }
  if (type === 'f32') {
    // The shortest decimal of an f32 value read back as f32 is that value; -0 keeps its sign.
    const f = Math.fround(v);
    if (!Number.isFinite(f)) throw bad('is out of the range of f32');
    return `${Object.is(f, -0) ? '-0.0' : String(f)}f`;
  }
  throw bad(`has type ${type}, which specialization does not write (u32, i32, f32 or bool)`);
}
