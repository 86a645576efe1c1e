// The demo's memory check with TurboQuant caches (no GPU): the KV cache's bytes are the padded blocks' (a head of
// 64 values pays for a 128-value block: 52 bytes in turbo3, 36 in turbo2), beside q8's and the full cache's.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parseConfig } from '../../src/hrm/config.ts';
import { kvStorage } from '../../src/hrm/kv-spec.ts';
import { memoryPlan } from '../../demo/memory.ts';

describe('demo memory check with TurboQuant caches', () => {
  const path = new URL('../../models/hrm-text-brown-10m/config.json', import.meta.url);
  const config = parseConfig(JSON.parse(readFileSync(path, 'utf8')));
  const lim = { maxBufferSize: 2 ** 30, maxStorageBufferBindingSize: 2 ** 30 };
  const cache = (kv: string) => memoryPlan(config, 0, 1000, 'bf16', kvStorage(kv), lim).cache;

  it('counts bytes a token from the blocks each head stores', () => {
    // 24 slots x 5 heads x 1000 tokens, K and V.
    const heads = 24 * 5 * 1000;
    expect(cache('ctk=turbo3,ctv=turbo3')).toBe(heads * 2 * 52);
    expect(cache('ctk=q8_0,ctv=turbo2')).toBe(heads * (72 + 36));
    expect(cache('ctk=turbo4,ctv=f16')).toBe(heads * (68 + 64 * 4)); // the full side beside a coded one is f32
    expect(cache('ctk=f16,ctv=f16')).toBe(heads * 2 * 128);
  });
});
