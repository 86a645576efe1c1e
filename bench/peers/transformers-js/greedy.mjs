// transformers.js's greedy ids and timing for HRM-Text (issue 44), shared by the Chrome page (page.mjs) and the Node
// check (node-check.mjs): the prompt given as ids (no tokenizer), prefilled as HrmTextForCausalLM.generate does it
// (token_type_ids 1 on the prompt: HRM's bidirectional prompt block), then greedy decoding to `n` tokens with
// nothing stopping it (eos_token_id null). A logits processor stamps the time each step's logits reach the sampler:
// the first stamp ends the prefill (prompt_ms), the last ends decoding (decode_ms over the n - 1 steps after the
// first token), as our bench and llama-bench count them.
/**
 * @param {any} T the transformers.js module
 * @param {{ model: string, dtype: string, device: string, ids: number[], n: number, top?: number }} o
 */
export async function greedy(T, o) {
  const { AutoModelForCausalLM, Tensor, LogitsProcessor, LogitsProcessorList } = T;
  const t00 = performance.now();
  const model = await AutoModelForCausalLM.from_pretrained(o.model, { dtype: o.dtype, device: o.device });
  const loadMs = performance.now() - t00;
  const S = o.ids.length;
  const input_ids = new Tensor('int64', BigInt64Array.from(o.ids.map(BigInt)), [1, S]);
  const attention_mask = new Tensor('int64', new BigInt64Array(S).fill(1n), [1, S]);
  const stamps = [], tops = [];
  const k = o.top ?? 5;
  class Stamp extends LogitsProcessor {
    _call(_ids, logits) {
      stamps.push(performance.now());
      const row = logits.data;
      const idx = [];
      for (let v = 0; v < row.length; v++) {
        if (idx.length < k || row[v] > row[idx[idx.length - 1]]) {
          if (idx.length === k) idx.pop();
          let i = idx.length;
          idx.push(v);
          while (i > 0 && row[idx[i - 1]] < row[idx[i]]) { [idx[i - 1], idx[i]] = [idx[i], idx[i - 1]]; i--; }
        }
      }
      tops.push(idx.map((v) => [v, Number(row[v].toPrecision(6))]));
      return logits;
    }
  }
  const run = async () => {
    stamps.length = 0; tops.length = 0;
    const lp = new LogitsProcessorList();
    lp.push(new Stamp());
    const t0 = performance.now();
    const out = await model.generate({
      input_ids, attention_mask, max_new_tokens: o.n, min_new_tokens: 0, do_sample: false, num_beams: 1,
      eos_token_id: null, logits_processor: lp,
    });
    const ids = Array.from(out.data.slice(S), Number);
    return { ids, prompt_ms: stamps[0] - t0, decode_ms: stamps[stamps.length - 1] - stamps[0] };
  };
  const first = await run();          // warm-up: shader compilation, the first allocations
  const r = await run();
  const same = first.ids.length === r.ids.length && first.ids.every((x, i) => x === r.ids[i]);
  await model.dispose?.();
  return {
    engine: 'transformers.js', model: o.model, dtype: o.dtype, device: o.device, mask: 'prefix',
    prompt_tokens: S, load_ms: Number(loadMs.toFixed(1)), prompt_ms: Number(r.prompt_ms.toFixed(3)),
    decode_tokens: r.ids.length - 1, decode_ms: Number(r.decode_ms.toFixed(3)),
    warmup: { prompt_ms: Number(first.prompt_ms.toFixed(3)), decode_ms: Number(first.decode_ms.toFixed(3)),
      same_ids: same },
    ids: r.ids, top: tops.slice(),
  };
}
