// The export's contract checked without a browser: transformers.js in Node (onnxruntime-node, CPU) on an export of
// bench/peers/transformers-js/export-onnx.py, greedy from a prompt of ids, one JSON line (as the page prints):
//   node bench/peers/transformers-js/node-check.mjs TRANSFORMERS_DIR MODELS_ROOT NAME DTYPE IDS.json [N]
// TRANSFORMERS_DIR: an installed @huggingface/transformers (npm install --ignore-scripts into a folder outside the
// repository: it is not one of the repository's dependencies); MODELS_ROOT/NAME: the export's folder.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { greedy } from './greedy.mjs';

const [dir, root, name, dtype, idsPath, n = '128'] = process.argv.slice(2);
const T = await import(pathToFileURL(`${dir}/dist/transformers.node.mjs`).href);
T.env.allowRemoteModels = false;
T.env.allowLocalModels = true;
T.env.localModelPath = root.endsWith('/') ? root : root + '/';
const j = JSON.parse(readFileSync(idsPath, 'utf8'));
const ids = Array.isArray(j) ? j : j.prompts[0].ids;
console.log(JSON.stringify(await greedy(T, { model: name, dtype, device: 'cpu', ids, n: Number(n) })));
