// Line and file length, enforced by `npm test` (tests/package/lint.test.ts): 120 columns and 300 lines a file,
// comments included (CONTRIBUTING.md). Only these two rules: the code's style is its own, not a formatter's.
import tsParser from '@typescript-eslint/parser';

export default [
  {
    ignores: [
      'node_modules/', 'dist/', 'demo-dist/', 'artifacts/', '.vite/', '.h200/', 'bench/results/',
      '**/shaders.gen.ts',   // generated from the WGSL (scripts/gen-wgsl.mjs)
    ],
  },
  {
    files: ['**/*.ts', '**/*.mjs', '**/*.js', '**/*.cjs'],
    languageOptions: { parser: tsParser, ecmaVersion: 'latest', sourceType: 'module' },
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    rules: {
      'max-len': ['error', { code: 120, tabWidth: 2 }],
      'max-lines': ['error', { max: 300, skipBlankLines: false, skipComments: false }],
    },
  },
];
