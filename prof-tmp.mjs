const lib = await import('./dist/index.js');
const lm = await lib.loadModel(undefined, { dtype: 'bf16' });
const ids = Array.from({ length: 64 }, (_, i) => 100 + i);
let rec = 0, n = 0, disp = 0;
for (let i = 0; i < 40; i++) {
  const cache = lm.model.newCache({ capacity: 64, mode: 'after-prefill' });
  const d0 = lm.model.gpu.dispatchCount;
  const t0 = performance.now();
  const l = lm.model.forward(ids, cache, { mask: 'prefix', logits: 'last' });
  if (i >= 5) { rec += performance.now() - t0; n++; disp += lm.model.gpu.dispatchCount - d0; }
  await l.readF32(); l.dispose(); cache.dispose();
}
console.log('recording us per dispatch', (rec * 1000 / disp).toFixed(1));
process.exit(0);
