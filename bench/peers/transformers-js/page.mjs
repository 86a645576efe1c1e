// The transformers.js page of the peer run (issue 44), bundled by bench/peers/transformers-js/pack.sh with
// transformers.js 4.3.1 and onnxruntime-web's WebGPU build into site/page.js; chrome.ts opens site/page.html and calls
// window.runGreedy. Models load from /models/NAME/ (export-onnx.py's folders), ORT's wasm from /ort/, nothing remote.
import * as T from '@huggingface/transformers';
import { greedy } from './greedy.mjs';

T.env.allowRemoteModels = false;
T.env.allowLocalModels = true;
T.env.localModelPath = '/models/';
T.env.useBrowserCache = false;
T.env.backends.onnx.wasm.wasmPaths = '/ort/';
T.env.backends.onnx.wasm.proxy = false;

/** @param {{ model: string, dtype: string, ids: string, n: number }} o */
window.runGreedy = async (o) => {
  const j = await (await fetch(o.ids)).json();
  const ids = Array.isArray(j) ? j : j.prompts[0].ids;
  const adapter = await navigator.gpu?.requestAdapter({ powerPreference: 'high-performance' });
  const r = await greedy(T, { model: o.model, dtype: o.dtype, device: 'webgpu', ids, n: o.n });
  return { ...r, version: T.env.version, ort: T.env.backends.onnx.versions ?? null,
    adapter: adapter ? `${adapter.info.vendor} ${adapter.info.architecture} ${adapter.info.description}`.trim() : null,
    userAgent: navigator.userAgent };
};
window.pageReady = true;
