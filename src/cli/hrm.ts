// `hrm`: generate, logits, compare, info, convert. Same code under Node (npx hrm) and Deno (deno task hrm).
import {
  Gpu, FormatError, loadConfigs, loadModel, cacheBytes, parameterCount, type QuantSpec, checkpointBytes, EMBEDDED_MODEL,
  modelFiles,
} from '../index.ts';
import { UsageError, cacheSlots, parseConditions, kvStorage } from '../advanced.ts';
import { SafetensorsFile, encodeSafetensors } from '../io/safetensors.ts';
import { bytesSource } from '../io/sources.ts';
import { compareLogits } from '../hrm/compare.ts';
import { convertQuantized } from '../hrm/convert.ts';
import { checkWritable, choice, err, flagValue, fsp, netOptions, number, out, parseFlags, readFile, run, warn,
  writeFile, EMBEDDED_DIR } from './common.ts';
import { fmtBytes, streamGenerate } from './generate-cmd.ts';

const USAGE: Record<string, string> = {
  generate: `hrm generate [--model DIR|URL] "prompt" [--condition synth,cot] [--max-tokens 128] [--temperature 0]
             [--top-p 1] [--seed 0] [--kv ctk=q8_0,ctv=q4_0] [--dtype f32|bf16] [--stop STR]... [--quantize 4|8]`,
  logits: 'hrm logits   [--model DIR|URL] --ids 1,2,3 --mode prefix|causal [--dtype f32|bf16] [--kv ...] ' +
    '[--quantize 4|8] --out FILE.safetensors',
  compare: 'hrm compare  A.safetensors B.safetensors',
  info: 'hrm info     [--model DIR|URL] [--ctx 4096] [--quantize 4|8]',
  convert: 'hrm convert  [--model DIR|URL] --out DIR --quantize 4|8 [--q-group-size 64]',
};

const HELP = `hrm: HRM-Text on WebGPU

${Object.values(USAGE).map((u) => `  ${u.replace(/\n/g, '\n  ')}`).join('\n')}

--model defaults to the embedded ${EMBEDDED_MODEL} (${EMBEDDED_DIR}).
Conditions: direct, cot, synth, noisy (comma-combined). --kv takes llama.cpp cache types (f16, q8_0, q6_K, q4_0, ...).
--quantize quantizes the weights while loading (bit for bit mx.quantize; --q-group-size 32|64|128, default 64);
convert writes them in MLX's quantized layout (model.safetensors, config.json with "quantization", tokenizer files).
`;

const Q_OPTS = { quantize: { type: 'string' }, 'q-group-size': { type: 'string' } } as const;

/** --quantize / --q-group-size as a load option (undefined when --quantize is absent). */
function quantOpt(v: { quantize?: string; 'q-group-size'?: string }): QuantSpec | undefined {
  const groupSize = Number(choice('q-group-size', v['q-group-size'], ['32', '64', '128'] as const, '64'));
  if (v.quantize === undefined) {
    if (v['q-group-size'] !== undefined) throw new UsageError('cli', '--q-group-size needs --quantize 4|8');
    return undefined;
  }
  return { bits: Number(choice('quantize', v.quantize, ['4', '8'] as const, '4')), groupSize };
}

async function cmdGenerate(args: string[]): Promise<void> {
  const { values: v, positionals } = parseFlags(args, {
    model: { type: 'string' }, condition: { type: 'string' }, 'max-tokens': { type: 'string' },
    temperature: { type: 'string' }, 'top-p': { type: 'string' }, seed: { type: 'string' }, kv: { type: 'string' },
    dtype: { type: 'string' }, stop: { type: 'string', multiple: true },
    ...Q_OPTS,
  }, true);
  if (positionals.length !== 1) throw new UsageError('generate',
    `give the prompt as one argument (got ${positionals.length})`);
  if (v.stop?.includes('')) throw new UsageError('cli', '--stop is empty; give the text to stop at');
  const condition = v.condition ?? 'synth,cot';
  flagValue(() => parseConditions(condition)); // refused before the model loads
  const opts = {
    condition,
    maxTokens: number('max-tokens', v['max-tokens'], 128, (n) => Number.isInteger(n) && n > 0, 'a positive integer'),
    sampler: {
      temperature: number('temperature', v.temperature, 0, (n) => n >= 0, 'a number >= 0'),
      topP: number('top-p', v['top-p'], 1, (n) => n > 0 && n <= 1, 'a number in (0, 1]'),
      seed: number('seed', v.seed, 0, Number.isInteger, 'an integer'),
    },
    cache: { kv: flagValue(() => kvStorage(v.kv, '--kv')) },
    stop: v.stop,
  };
  const dtype = choice('dtype', v.dtype, ['f32', 'bf16'] as const, 'f32');
  const quantize = quantOpt(v);
  const gpu = await Gpu.create();
  const lm = await loadModel(modelFiles(v.model || undefined, netOptions()), { gpu, dtype, quantize, warn });
  await streamGenerate(gpu, lm, positionals[0], opts, { out, err });
  gpu.destroy();
}

/** `--ids 6,12,495`: every piece a token id (an empty piece is an error, not id 0). */
function tokenIds(s: string): number[] {
  return s.split(',').map((p) => {
    const n = Number(p);
    if (p.trim() === '' || !Number.isInteger(n) || n < 0) throw new UsageError('cli',
      `--ids ${JSON.stringify(s)}: ${JSON.stringify(p)} is not a token id`);
    return n;
  });
}

async function cmdLogits(args: string[]): Promise<void> {
  const { values: v } = parseFlags(args, {
    model: { type: 'string' }, ids: { type: 'string' }, mode: { type: 'string' }, dtype: { type: 'string' },
    kv: { type: 'string' }, out: { type: 'string' }, ...Q_OPTS,
  });
  if (v.ids === undefined) throw new UsageError('logits', '--ids is required (comma-separated token ids)');
  if (v.out === undefined) throw new UsageError('logits', '--out is required (a .safetensors path)');
  const ids = tokenIds(v.ids);
  const mode = choice('mode', v.mode, ['prefix', 'causal'] as const, 'prefix');
  const dtype = choice('dtype', v.dtype, ['f32', 'bf16'] as const, 'f32');
  const kv = flagValue(() => kvStorage(v.kv, '--kv'));
  const quantize = quantOpt(v);
  await checkWritable('out', v.out);
  const gpu = await Gpu.create();
  const lm = await loadModel(modelFiles(v.model || undefined, netOptions()), { gpu, dtype, quantize, warn });
  const logits = await lm.model.logits(ids, { mask: mode, kv });
  await writeFile(v.out,
    encodeSafetensors({ logits: { dtype: 'F32', shape: [ids.length, lm.config.vocab_size], data: logits } },
    { tool: 'hrm logits', mode, dtype, kv: v.kv ?? 'ctk=f16,ctv=f16', model: lm.name,
      ...(quantize ? { quantize: `q${quantize.bits} g${quantize.groupSize}` } : {}) }));
  err(`wrote ${v.out}: logits [${ids.length}, ${lm.config.vocab_size}] (${mode}, ${dtype})\n`);
  gpu.destroy();
}

async function cmdCompare(args: string[]): Promise<void> {
  const { positionals } = parseFlags(args, {}, true);
  if (positionals.length !== 2) throw new UsageError('compare',
    `give two .safetensors files (got ${positionals.length})`);
  const [a, b] = await Promise.all(positionals.map(async (p) => {
    const f = await SafetensorsFile.open(bytesSource(p, await readFile(p)));
    if (!f.entries.has('logits')) throw new FormatError('compare',
      `${p} has no tensor 'logits' (has: ${f.names.join(', ')})`);
    return { data: await f.array('logits'), shape: f.entry('logits').shape };
  }));
  const r = compareLogits(a.data, b.data, a.shape, b.shape);
  out(`positions      ${r.positions}\nvocab          ${r.vocab}\nmax |diff|     ${r.maxAbsDiff.toExponential(3)}\n` +
    `mean KL(A||B)  ${r.meanKl.toExponential(3)}\nmax KL         ${r.maxKl.toExponential(3)}\n` +
    `top-1 agree    ${(100 * r.top1Agreement).toFixed(2)} %\n`);
}

async function cmdInfo(args: string[]): Promise<void> {
  const { values: v } = parseFlags(args, { model: { type: 'string' }, ctx: { type: 'string' }, ...Q_OPTS });
  number('ctx', v.ctx, 1, (n) => Number.isInteger(n) && n > 0, 'a positive integer');
  const requested = quantOpt(v);
  const files = modelFiles(v.model || undefined, netOptions());
  const { config: c, quantization } = await loadConfigs(files, warn);
  const ctx = number('ctx', v.ctx, c.max_position_embeddings);
  const params = parameterCount(c);
  // Quantized (stored so, or --quantize): packed levels plus a scale and a bias per group.
  const spec = quantization?.default ?? requested ?? null;
  const weights = spec ? checkpointBytes(c, spec) : params * 2;
  out(`model          ${files.name}\n`);
  out(`parameters     ${(params / 1e6).toFixed(2)} M (${fmtBytes(params * 2)} in bf16)\n`);
  if (spec) {
    const stored = quantization ? ' (as stored)' : ' (--quantize)';
    out(`weights        q${spec.bits} group ${spec.groupSize}${stored}: ${fmtBytes(weights)} ` +
      `(levels, and scales and biases in bf16 as MLX stores a bf16 model's)\n`);
  }
  out(`shape          vocab ${c.vocab_size}, hidden ${c.hidden_size}, intermediate ${c.intermediate_size}, ` +
    `${c.num_layers_per_stack} layers per stack, ` +
    `${c.num_attention_heads} heads x ${c.head_dim}, H_cycles ${c.H_cycles}, L_cycles ${c.L_cycles}\n`);
  out(`cache slots    ${cacheSlots(c)} (each token runs ${c.H_cycles * (c.L_cycles + 1)} stack passes)\n`);
  out(`rope theta     ${c.rope_theta}; embedding scale ${c.embedding_scale.toFixed(4)}; eps ${c.rms_norm_eps}; ` +
    `context ${c.max_position_embeddings}\n`);
  // Sized as asked, past the context too (a what-if), but said so: generation never fills more than the context.
  const n = c.max_position_embeddings;
  if (ctx > n) {
    out(`note           --ctx ${ctx} is past the model's context of ${n} tokens; a generation fills ${n} at most\n`);
  }
  // Bits a value: a token's cache bytes over the values it caches (K and V of every head in every slot); TurboQuant
  // pads each head to whole 128-value blocks, so at head_dim 64 it pays for 128.
  const values = cacheSlots(c) * 2 * c.num_attention_heads * c.head_dim;
  for (const label of ['bf16', 'q8', 'q4', 'turbo4', 'turbo3', 'turbo2'] as const) {
    const kv = kvStorage(label === 'bf16' ? 'ctk=bf16,ctv=bf16' : `ctk=${label},ctv=${label}`);
    const perToken = cacheBytes(c, 1, 'bf16', kv);
    const bytes = cacheBytes(c, ctx, 'bf16', kv);
    out(`cache @${ctx}    ${label.padEnd(6)} ${fmtBytes(bytes)}; weights + cache ${fmtBytes(weights + bytes)}; ` +
      `${perToken} B a token, ${((perToken * 8) / values).toFixed(2)} bits a value\n`);
  }
}

async function cmdConvert(args: string[]): Promise<void> {
  const { values: v } = parseFlags(args, { model: { type: 'string' }, out: { type: 'string' }, ...Q_OPTS });
  if (v.out === undefined) throw new UsageError('convert',
    '--out is required (the folder to write the quantized checkpoint to)');
  const spec = quantOpt(v);
  if (!spec) throw new UsageError('convert', '--quantize 4|8 is required');
  const files = modelFiles(v.model || undefined, netOptions());
  const fs = await fsp();
  await fs.mkdir(v.out, { recursive: true });
  for (const f of ['model.safetensors', 'config.json']) await checkWritable('out', `${v.out}/${f}`);
  const gpu = await Gpu.create();
  const conv = await convertQuantized(gpu, files, spec);
  gpu.destroy();
  await writeFile(`${v.out}/model.safetensors`, conv.safetensors);
  await writeFile(`${v.out}/config.json`, conv.config);
  for (const f of ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json']) {
    const text = await files.text(f);
    if (text !== null) await writeFile(`${v.out}/${f}`, text);
  }
  err(`wrote ${v.out}: q${spec.bits} group ${spec.groupSize}, model.safetensors ` +
    `${fmtBytes(conv.safetensors.byteLength)}\n`);
}

const COMMANDS: Record<string, (a: string[]) => Promise<void>> = { generate: cmdGenerate, logits: cmdLogits,
  compare: cmdCompare, info: cmdInfo, convert: cmdConvert };

await run(async (argv) => {
  const [cmd, ...rest] = argv;
  if (cmd === '--help' || cmd === '-h' || cmd === 'help') { out(HELP); return; }
  // No command is a usage error (exit 2), as refract's: a script that forgot it must not pass.
  if (!cmd) throw new UsageError('hrm', `give a command (${Object.keys(COMMANDS).join(', ')})`);
  const f = COMMANDS[cmd];
  if (!f) throw new UsageError('hrm', `unknown command '${cmd}' (commands: ${Object.keys(COMMANDS).join(', ')})`);
  await f(rest);
}, (cmd) => (cmd && USAGE[cmd] ? `usage: ${USAGE[cmd]}` : HELP), 'hrm', Object.keys(COMMANDS));
