// hrm-greedy: greedy decoding through llama.cpp's C API from a prompt given as token ids (no tokenizer involved),
// for the token check of issue 44: the same prompt ids and weights as our own greedy run, causal attention (the only
// mode llama.cpp's hrm_text has). Built by bench/peers/llama-cpp/build.sh against the packed llama.cpp's libllama.
//   hrm-greedy -m MODEL.gguf --ids FILE [-n 128] [--fa on|off|auto] [--ctk f16] [--ctv f16] [-ngl 99] [-t THREADS]
//              [--top 5] [--ubatch 512]
// FILE holds the prompt's ids: the first "ids" array of a JSON object (make.py's prompts.json), or ids separated by
// anything that is not a digit (a JSON array, commas, lines). Prints one
// JSON line: the generated ids, each step's top-k (id, logit) pairs, the prefill and decode milliseconds (the
// prompt in one llama_decode, then one token a call, each synchronized), and the settings.
#include "llama.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static ggml_type parse_type(const std::string & s) {
    static const struct { const char * name; ggml_type type; } types[] = {
        {"f32", GGML_TYPE_F32}, {"f16", GGML_TYPE_F16}, {"bf16", GGML_TYPE_BF16}, {"q8_0", GGML_TYPE_Q8_0},
        {"q4_0", GGML_TYPE_Q4_0}, {"q4_1", GGML_TYPE_Q4_1}, {"q5_0", GGML_TYPE_Q5_0}, {"q5_1", GGML_TYPE_Q5_1},
        {"iq4_nl", GGML_TYPE_IQ4_NL},
    };
    for (const auto & t : types) if (s == t.name) return t.type;
    fprintf(stderr, "hrm-greedy: unknown cache type '%s'\n", s.c_str());
    exit(2);
}

static std::vector<llama_token> read_ids(const std::string & path) {
    std::ifstream f(path);
    if (!f) { fprintf(stderr, "hrm-greedy: cannot read %s\n", path.c_str()); exit(2); }
    std::stringstream ss;
    ss << f.rdbuf();
    std::vector<llama_token> ids;
    std::string s = ss.str(), cur;
    // a JSON object (make.py's prompts.json): the first "ids" array only
    const size_t key = s.find("\"ids\"");
    if (key != std::string::npos) {
        const size_t open = s.find('[', key), close = s.find(']', open);
        if (open == std::string::npos || close == std::string::npos) { fprintf(stderr, "hrm-greedy: %s: no ids array\n", path.c_str()); exit(2); }
        s = s.substr(open + 1, close - open - 1);
    }
    for (char c : s + " ") {
        if (c >= '0' && c <= '9') cur += c;
        else if (!cur.empty()) { ids.push_back((llama_token) std::stol(cur)); cur.clear(); }
    }
    return ids;
}

static double ms_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int main(int argc, char ** argv) {
    std::string model_path, ids_path, fa = "on", ctk = "f16", ctv = "f16";
    int n_gen = 128, ngl = 99, threads = 0, top = 5, ubatch = 512;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) { fprintf(stderr, "hrm-greedy: %s needs a value\n", a.c_str()); exit(2); }
            return argv[++i];
        };
        if (a == "-m") model_path = next();
        else if (a == "--ids") ids_path = next();
        else if (a == "-n") n_gen = std::stoi(next());
        else if (a == "--fa") fa = next();
        else if (a == "--ctk") ctk = next();
        else if (a == "--ctv") ctv = next();
        else if (a == "-ngl") ngl = std::stoi(next());
        else if (a == "-t") threads = std::stoi(next());
        else if (a == "--top") top = std::stoi(next());
        else if (a == "--ubatch") ubatch = std::stoi(next());
        else { fprintf(stderr, "hrm-greedy: unknown argument %s\n", a.c_str()); return 2; }
    }
    if (model_path.empty() || ids_path.empty()) {
        fprintf(stderr, "usage: hrm-greedy -m MODEL.gguf --ids FILE [-n 128] [--fa on|off|auto] [--ctk f16] [--ctv f16]\n");
        return 2;
    }
    const std::vector<llama_token> prompt = read_ids(ids_path);
    if (prompt.empty()) { fprintf(stderr, "hrm-greedy: no ids in %s\n", ids_path.c_str()); return 2; }

    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = ngl;
    llama_model * model = llama_model_load_from_file(model_path.c_str(), mp);
    if (!model) { fprintf(stderr, "hrm-greedy: cannot load %s\n", model_path.c_str()); return 1; }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    for (llama_token t : prompt) {
        if (t < 0 || t >= n_vocab) { fprintf(stderr, "hrm-greedy: id %d outside the vocabulary (%d)\n", t, n_vocab); return 2; }
    }

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t) (prompt.size() + n_gen + 8);
    cp.n_batch = (uint32_t) std::max<size_t>(prompt.size(), 1);
    cp.n_ubatch = (uint32_t) std::min<int>(ubatch, (int) cp.n_batch);
    cp.n_seq_max = 1;
    cp.flash_attn_type = fa == "on" ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                       : fa == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_AUTO;
    cp.type_k = parse_type(ctk);
    cp.type_v = parse_type(ctv);
    if (threads > 0) { cp.n_threads = threads; cp.n_threads_batch = threads; }
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "hrm-greedy: cannot create a context (fa %s, ctk %s, ctv %s)\n", fa.c_str(), ctk.c_str(), ctv.c_str()); return 1; }

    std::vector<llama_token> out;
    std::vector<std::vector<std::pair<int, float>>> tops;
    auto pick = [&]() {
        const float * logits = llama_get_logits_ith(ctx, -1);
        std::vector<int> idx(n_vocab);
        for (int v = 0; v < n_vocab; v++) idx[v] = v;
        const int k = std::min(top, n_vocab);
        // ties to the lowest id, as an argmax over the row in order does (ours and torch's argmax alike)
        std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) {
            return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
        });
        std::vector<std::pair<int, float>> row;
        for (int j = 0; j < k; j++) row.emplace_back(idx[j], logits[idx[j]]);
        tops.push_back(row);
        return (llama_token) idx[0];
    };

    std::vector<llama_token> p = prompt;
    auto t0 = std::chrono::steady_clock::now();
    if (llama_decode(ctx, llama_batch_get_one(p.data(), (int32_t) p.size())) != 0) {
        fprintf(stderr, "hrm-greedy: llama_decode failed on the prompt\n");
        return 1;
    }
    llama_synchronize(ctx);
    const double prompt_ms = ms_since(t0);
    llama_token tok = pick();
    out.push_back(tok);
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 1; i < n_gen; i++) {
        if (llama_decode(ctx, llama_batch_get_one(&tok, 1)) != 0) { fprintf(stderr, "hrm-greedy: llama_decode failed at step %d\n", i); return 1; }
        llama_synchronize(ctx);
        tok = pick();
        out.push_back(tok);
    }
    const double decode_ms = ms_since(t1);

    printf("{\"engine\":\"llama.cpp\",\"model\":\"%s\",\"fa\":\"%s\",\"ctk\":\"%s\",\"ctv\":\"%s\",\"prompt_tokens\":%zu,"
           "\"prompt_ms\":%.3f,\"decode_tokens\":%d,\"decode_ms\":%.3f,\"ids\":[",
           model_path.c_str(), fa.c_str(), ctk.c_str(), ctv.c_str(), prompt.size(), prompt_ms, n_gen - 1, decode_ms);
    for (size_t i = 0; i < out.size(); i++) printf("%s%d", i ? "," : "", out[i]);
    printf("],\"top\":[");
    for (size_t i = 0; i < tops.size(); i++) {
        printf("%s[", i ? "," : "");
        for (size_t j = 0; j < tops[i].size(); j++) printf("%s[%d,%.6g]", j ? "," : "", tops[i][j].first, tops[i][j].second);
        printf("]");
    }
    printf("]}\n");
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
