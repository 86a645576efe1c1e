// The TurboQuant fork's own blocks (tests/fixtures/turbo/turbo.json, made by tools/turbo-fixtures): rows as f32,
// blocks as bytes, and for the first rows the fork's dequantized values (rotated and through its inverse WHT).
import { readFileSync } from 'node:fs';
import type { TurboType } from '../../src/kernels/turbo/format.ts';

export interface TurboFixtureRow {
  name: string;
  dim: number;
  x: Float32Array;
  blocks: Record<TurboType, Uint8Array>;
  rotated?: Record<TurboType, Float32Array>;
  values?: Record<TurboType, Float32Array>;
}

function bytes(hex: string): Uint8Array {
  return Uint8Array.from({ length: hex.length / 2 }, (_, i) => parseInt(hex.slice(2 * i, 2 * i + 2), 16));
}

function floats(hex: string): Float32Array {
  const b = bytes(hex);
  const words = new Uint32Array(b.length / 4);
  for (let i = 0; i < words.length; i++) words[i] = parseInt(hex.slice(8 * i, 8 * i + 8), 16);
  return new Float32Array(words.buffer);
}

interface Raw { name: string; dim: number; x: string; [t: string]: unknown }
type RawType = { block: string; rotated?: string; values?: string };

const TYPES: TurboType[] = ['turbo2', 'turbo3', 'turbo4'];

export function turboFixtures(): { commit: string; rows: TurboFixtureRow[] } {
  const text = readFileSync(new URL('../fixtures/turbo/turbo.json', import.meta.url), 'utf8');
  const raw = JSON.parse(text) as { commit: string; rows: Raw[] };
  const per = <T>(r: Raw, pick: (t: RawType) => T): Record<TurboType, T> =>
    Object.fromEntries(TYPES.map((t) => [t, pick(r[t] as RawType)])) as Record<TurboType, T>;
  const rows = raw.rows.map((r) => {
    const full = (r.turbo2 as RawType).rotated !== undefined;
    return {
      name: r.name, dim: r.dim, x: floats(r.x), blocks: per(r, (t) => bytes(t.block)),
      ...(full ? { rotated: per(r, (t) => floats(t.rotated!)), values: per(r, (t) => floats(t.values!)) } : {}),
    };
  });
  return { commit: raw.commit, rows };
}
