// KV config strings: accepted types, asymmetric K/V, and errors that list what is accepted.
import { describe, expect, it } from 'vitest';
import { DEFAULT_REFERENCE_KV, isFullPrecision, KV_GROUP_SIZE, kvStorage,
  parseKvConfig } from '../../src/hrm/kv-spec.ts';
import { InputError } from '../../src/errors.ts';

describe('parseKvConfig', () => {
  it('parses the default reference as full precision', () => {
    const c = parseKvConfig(DEFAULT_REFERENCE_KV);
    expect(c).toEqual({ k: { bits: null, name: 'f16' }, v: { bits: null, name: 'f16' }, groupSize: 64,
      label: 'ctk=f16,ctv=f16' });
    expect(isFullPrecision(c)).toBe(true);
    expect(KV_GROUP_SIZE).toBe(64);
  });
  it.each([
    ['f16', null], ['fp16', null], ['f32', null], ['bf16', null], ['q8_0', 8], ['q8', 8], ['q6_K', 6], ['q6',
      6], ['q5_0', 5], ['q5_1', 5],
    ['q5_K', 5], ['q5', 5], ['q4_0', 4], ['q4_1', 4], ['q4_K', 4], ['q4', 4], ['q3_K', 3], ['q3', 3], ['q2_K',
      2], ['q2', 2],
  ] as const)('%s -> %s bits', (name, bits) => {
    const c = parseKvConfig(`ctk=${name},ctv=${name}`);
    expect([c.k.bits, c.v.bits, c.k.name]).toEqual([bits, bits, name]);
  });
  it('supports asymmetric K/V and canonicalises names and spacing', () => {
    const c = parseKvConfig(' ctk = q8_0 , ctv=Q4_k ');
    expect([c.k.bits, c.v.bits, c.label]).toEqual([8, 4, 'ctk=q8_0,ctv=q4_K']);
    expect(isFullPrecision(c)).toBe(false);
  });
  it('skips empty fragments, as REFRACT does', () => {
    expect(parseKvConfig('ctk=q8_0,,ctv=q4_0').label).toBe('ctk=q8_0,ctv=q4_0');
    expect(parseKvConfig(',ctv=q4_0,').label).toBe('ctk=f16,ctv=q4_0');
  });
  it('names the option in its errors', () => {
    expect(() => parseKvConfig('', '--candidate')).toThrow(/^\[kvconfig\] --candidate is empty/);
    expect(() => parseKvConfig('ctk=q9', '--kv')).toThrow(/unknown cache type ctk=q9 in --kv "ctk=q9"/);
    expect(kvStorage('ctk=q8_0,ctv=f16')).toEqual({ k: 8, v: null });
    expect(kvStorage('ctk=q8_0,ctv=TURBO3')).toEqual({ k: 8, v: 'turbo3' });
    expect(parseKvConfig('ctk=turbo4,ctv=turbo2').label).toBe('ctk=turbo4,ctv=turbo2');
  });
  it('defaults a missing side to f16', () => {
    expect(parseKvConfig('ctv=q4_0').label).toBe('ctk=f16,ctv=q4_0');
    expect(parseKvConfig('ctk=q8').label).toBe('ctk=q8,ctv=f16');
  });
  it.each([
    ['ctk=q7_0,ctv=f16', /^\[kvconfig\] unknown cache type ctk=q7_0.*accepted types: f16, fp16/],
    ['ctk=f16,foo=1', /^\[kvconfig\] unknown key "foo".*keys: ctk, ctv/],
    ['ctk=turbo5,ctv=f16', /unknown cache type ctk=turbo5.*turbo4, turbo3, turbo2/],
    ['ctk', /malformed part "ctk".*need key=value/],
    ['ctk=', /malformed part "ctk="/],
    ['=q8_0', /malformed part "=q8_0"/],
    ['ctk=f16,ctk=q8_0', /key "ctk" given twice/],
    ['', /^\[kvconfig\] KV config is empty \(got ""\); accepted types/],
    ['   ', /KV config is empty/],
    [',, ,', /KV config is empty/],
  ])('%j -> InputError', (spec, msg) => {
    expect(() => parseKvConfig(spec)).toThrow(InputError);
    expect(() => parseKvConfig(spec)).toThrow(msg);
  });
});
