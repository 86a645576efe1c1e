// Writes tests/package/long-lines.json: the lines over 120 columns each file still has (ESLint's max-len, as
// eslint.config.mjs sets it), which tests/package/lint.test.ts holds the tree to. Run it after wrapping lines.
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const root = fileURLToPath(new URL('../', import.meta.url));
const long = {};
for (const r of await new ESLint({ cwd: root }).lintFiles(['.'])) {
  const n = r.messages.filter((m) => m.ruleId === 'max-len').length;
  if (n) long[relative(root, r.filePath)] = n;
}
const sorted = Object.fromEntries(Object.entries(long).sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync(new URL('tests/package/long-lines.json', `file://${root}`), `${JSON.stringify(sorted, null, 2)}\n`);
const total = Object.values(long).reduce((a, b) => a + b, 0);
console.log(`tests/package/long-lines.json: ${total} lines in ${Object.keys(long).length} files`);
