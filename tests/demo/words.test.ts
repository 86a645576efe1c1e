// The page's counts read as English (issue 42, item 14: "1 prompts" in the trajectory score's line).
import { describe, expect, it } from 'vitest';
import { counted } from '../../demo/dom.ts';

describe('counted', () => {
  it('says one thing in the singular and every other count in the plural', () => {
    expect(counted(1, 'prompt')).toBe('1 prompt');
    expect(counted(2, 'prompt')).toBe('2 prompts');
    expect(counted(0, 'chunk')).toBe('0 chunks');
  });
});
