// Line and file length as `npm test` enforces them (eslint.config.mjs: max-len 120 columns and max-lines 300 a file,
// comments included; the generated shaders.gen.ts excepted), and every other rule of the config: no exceptions.
import { describe, expect, it } from 'vitest';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('line and file length (ESLint)', () => {
  it('no file over 300 lines, no line over 120 columns, nothing else the config forbids', async () => {
    const results = await new ESLint({ cwd: root }).lintFiles(['.']);
    const messages = results.flatMap((r) => r.messages.map((m) => `${relative(root, r.filePath)}:${m.line} ` +
      `${m.ruleId ?? 'parse'} ${m.message}`));
    expect(messages).toEqual([]);
  }, 240_000);
});
