// The layers of src/ (issue 31), checked by tests/package/layers.test.ts on every `npm test`:
// errors.ts, math/  <-  gpu/, io/  <-  tensor/  <-  kernels/  <-  hrm/  <-  refract/  <-  index.ts, advanced.ts,
// worker/
// Each layer imports only the ones below it (and itself); cli/, demo/ and bench/ import the public entries or the
// internals named below (APP_INTERNALS, BENCH_INTERNALS); product code never imports a CPU reference (*.ref.ts), which
// tests own.
// Outside src/: testkit/ (what tests and bench share and the package does not ship: the parity checks, their helpers,
// random weights) imports src/ and itself; bench/ imports src/ and testkit/, never tests/; src/ imports none of them.
const BOTTOM = ['^src/errors\\.ts$', '^src/math/'];
const below = {
  math: ['^src/math/'],
  gpu: ['^src/gpu/', ...BOTTOM],
  io: ['^src/io/', ...BOTTOM],
  tensor: ['^src/tensor/', '^src/gpu/', ...BOTTOM],
  kernels: ['^src/kernels/', '^src/tensor/', '^src/gpu/', ...BOTTOM],
  hrm: ['^src/hrm/', '^src/kernels/', '^src/tensor/', '^src/gpu/', '^src/io/', ...BOTTOM],
  refract: ['^src/refract/', '^src/hrm/', '^src/kernels/', '^src/tensor/', '^src/gpu/', '^src/io/', ...BOTTOM],
};

const layerRules = Object.entries(below).map(([layer, allowed]) => ({
  name: `${layer}-imports-only-below`,
  comment: `src/${layer}/ imports only ${allowed.join(', ')}`,
  severity: 'error',
  from: { path: `^src/${layer}/` },
  to: { path: '^src/', pathNot: allowed },
}));

/** The package's public entries: what any app may import. */
const ENTRIES = ['^src/(index|advanced)\\.ts$', '^src/worker/', '^src/refract/index\\.ts$'];
/**
 * Internals the CLI and the demo use as tools of their own, not API: safetensors files and byte sources (hrm
 * compare/convert, the demo's download cache), the logits comparison and the checkpoint converter (hrm compare,
 * hrm convert), REFRACT's corpus download (refract fetch) and its chart renderer (the demo's plots).
 */
const APP_INTERNALS = [
  '^src/io/(safetensors|sources)\\.ts$', '^src/hrm/(compare|convert)\\.ts$',
  '^src/refract/corpus-fetch\\.ts$', '^src/refract/report/charts\\.ts$',
];
/** The model's parts bench builds and times one by one (random weights, one layer, a decode step). */
const BENCH_INTERNALS = ['^src/hrm/(weights|layout|linear|config|model|cache|decode|files)\\.ts$'];

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
      name: 'src-is-the-package',
      comment: 'the shipped package imports nothing of testkit/, tests/, bench/ or demo/',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(testkit|tests|bench|demo)/' },
    },
    {
      name: 'testkit-below-tests-and-bench',
      comment: 'testkit/ holds what tests and bench share: it imports src/ and itself only',
      severity: 'error',
      from: { path: '^testkit/' },
      to: { path: '^(tests|bench|demo)/' },
    },
    {
      name: 'bench-never-imports-tests',
      comment: 'a check or helper bench needs lives in testkit/, which tests import too',
      severity: 'error',
      from: { path: '^bench/' },
      to: { path: '^tests/' },
    },
    {
      name: 'no-cycles',
      comment: 'two modules that need each other at run time share a part that belongs in a third, below both ' +
        '(a cycle of type imports only is allowed: it costs no load order)',
      severity: 'error',
      from: { path: '^(src|demo|bench|testkit)/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
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
      comment: 'cli/ and demo/ go through the public entries, or the internals named in APP_INTERNALS',
      severity: 'error',
      from: { path: '^(src/cli|demo)/' },
      to: { path: '^src/', pathNot: [...ENTRIES, '^src/cli/', ...APP_INTERNALS] },
    },
    {
      name: 'bench-uses-the-entries-and-what-it-measures',
      comment: 'bench/ times kernels and the model directly: the entries, kernels/, tensor/, gpu/, io/ and ' +
        'BENCH_INTERNALS',
      severity: 'error',
      from: { path: '^bench/' },
      to: { path: '^src/',
        pathNot: [...ENTRIES, '^src/(kernels|tensor|gpu|io)/', '^src/errors\\.ts$', ...BENCH_INTERNALS] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['node_modules', '^src/kernels/shaders\\.gen\\.ts$', '^testkit/shaders\\.gen\\.ts$'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
