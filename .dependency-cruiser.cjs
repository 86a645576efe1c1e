// The layers of src/ (issue 31), checked by tests/package/layers.test.ts on every `npm test`:
//   errors.ts  <-  gpu/, io/  <-  kernels/  <-  hrm/  <-  refract/  <-  index.ts, advanced.ts, worker/
// Each layer imports only the ones below it (and itself); cli/, demo/ and bench/ import the public entries or the
// internals named in ENTRY_FOR_APPS; product code never imports a CPU reference (*.ref.ts), which tests own.
const below = {
  gpu: ['^src/gpu/', '^src/errors\\.ts$'],
  io: ['^src/io/', '^src/errors\\.ts$'],
  kernels: ['^src/kernels/', '^src/gpu/', '^src/errors\\.ts$'],
  hrm: ['^src/hrm/', '^src/kernels/', '^src/gpu/', '^src/io/', '^src/errors\\.ts$'],
  refract: ['^src/refract/', '^src/hrm/', '^src/kernels/', '^src/gpu/', '^src/io/', '^src/errors\\.ts$'],
};

const layerRules = Object.entries(below).map(([layer, allowed]) => ({
  name: `${layer}-imports-only-below`,
  comment: `src/${layer}/ imports only ${allowed.join(', ')}`,
  severity: 'error',
  from: { path: `^src/${layer}/` },
  to: { path: '^src/', pathNot: allowed },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'errors-is-the-bottom',
      severity: 'error',
      from: { path: '^src/errors\\.ts$' },
      to: { path: '^src/' },
    },
    {
      name: 'no-reference-in-product',
      comment: 'CPU references (*.ref.ts) are for tests; product code imports the shared constants instead',
      severity: 'error',
      from: { path: '^(src|demo|bench)/', pathNot: '\\.ref\\.ts$' },
      to: { path: '\\.ref\\.ts$' },
    },
    {
      name: 'apps-use-the-public-entries',
      comment: 'cli/, demo/ and bench/ go through src/index.ts, src/advanced.ts, src/worker/ or src/refract/index.ts',
      severity: 'error',
      from: { path: '^(src/cli|demo)/' },
      to: { path: '^src/', pathNot: ['^src/(index|advanced)\\.ts$', '^src/worker/', '^src/refract/index\\.ts$', '^src/cli/'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['node_modules', '^src/kernels/shaders\\.gen\\.ts$'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
