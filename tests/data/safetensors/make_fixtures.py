#!/usr/bin/env python3
"""make_fixtures.py - writes the tiny safetensors checkpoints the tests read.

Each file is laid out as the safetensors format says: an 8-byte little-endian header
length, the JSON header ({name: {dtype, shape, data_offsets}}, padded with spaces to a
multiple of 8 as the reference writer does), then the tensors' bytes (zeros here: only
the header is ever read). Run from this directory: python3 make_fixtures.py
"""
import json
import os
import struct

SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F16": 2, "BF16": 2, "I32": 4, "F32": 4, "I64": 8}

# A tiny Llama: hidden 64, 2 layers, 4 heads of 16 (2 KV heads), MLP 128, vocab 128.
H, L, A, G, D, I, V = 64, 2, 4, 2, 16, 128, 128
CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
    "num_hidden_layers": L, "num_attention_heads": A, "num_key_value_heads": G,
    "head_dim": D, "intermediate_size": I, "vocab_size": V,
    "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def write(path, tensors, metadata=None, header_len=None, data_len=None):
    """tensors: [(name, dtype, shape)] in data order."""
    header, off = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        n = SIZES[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text) if header_len is None else header_len))
        f.write(text)
        f.write(bytes(off if data_len is None else data_len))
    return off


def linears():
    """(name, out, in) of each linear layer of the tiny Llama's blocks."""
    for i in range(L):
        p = "model.layers.%d." % i
        yield p + "self_attn.q_proj", A * D, H
        yield p + "self_attn.k_proj", G * D, H
        yield p + "self_attn.v_proj", G * D, H
        yield p + "self_attn.o_proj", H, A * D
        yield p + "mlp.gate_proj", I, H
        yield p + "mlp.up_proj", I, H
        yield p + "mlp.down_proj", H, I


def others(dtype):
    t = [("model.embed_tokens.weight", dtype, [V, H])]
    for i in range(L):
        p = "model.layers.%d." % i
        t += [(p + "input_layernorm.weight", dtype, [H]),
              (p + "post_attention_layernorm.weight", dtype, [H])]
    return t + [("model.norm.weight", dtype, [H]), ("lm_head.weight", dtype, [V, H])]


def dense():
    return others("BF16") + [(n + ".weight", "BF16", [o, i]) for n, o, i in linears()]


def save_config(d, extra=None):
    os.makedirs(d, exist_ok=True)
    c = dict(CONFIG)
    c.update(extra or {})
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")


def main():
    # 1. One file.
    save_config("tiny-llama")
    write("tiny-llama/model.safetensors", dense(), {"format": "pt"})
    # 2. Two shards and their index.
    t = dense()
    save_config("tiny-llama-sharded")
    shards = {"model-00001-of-00002.safetensors": t[:9], "model-00002-of-00002.safetensors": t[9:]}
    total, wm = 0, {}
    for fn, ts in shards.items():
        total += write("tiny-llama-sharded/" + fn, ts, {"format": "pt"})
        wm.update({n: fn for n, _, _ in ts})
    with open("tiny-llama-sharded/model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2, sort_keys=True)
        f.write("\n")
    # 3. GPTQ 4-bit, group size 32: qweight int32 [in/8, out], qzeros int32 [in/32, out/8],
    #    scales fp16 [in/32, out], g_idx int32 [in]; the rest fp16.
    q = others("F16")
    for n, o, i in linears():
        q += [(n + ".qweight", "I32", [i // 8, o]), (n + ".qzeros", "I32", [i // 32, o // 8]),
              (n + ".scales", "F16", [i // 32, o]), (n + ".g_idx", "I32", [i])]
    save_config("tiny-gptq", {"torch_dtype": "float16", "quantization_config": {
        "quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False}})
    write("tiny-gptq/model.safetensors", q)
    # 4. bitsandbytes NF4 with double quantization, as save_pretrained writes it: the weight
    #    uint8 [out*in/2, 1], absmax uint8 per 64 values, nested_absmax fp32 per 256 blocks,
    #    the two code books and the packed quant_state.
    b = others("BF16")
    for n, o, i in linears():
        k = o * i
        b += [(n + ".weight", "U8", [k // 2, 1]), (n + ".weight.absmax", "U8", [k // 64]),
              (n + ".weight.nested_absmax", "F32", [max(1, k // 64 // 256)]),
              (n + ".weight.nested_quant_map", "F32", [256]),
              (n + ".weight.quant_map", "F32", [16]),
              (n + ".weight.quant_state.bitsandbytes__nf4", "U8", [125])]
    save_config("tiny-nf4", {"quantization_config": {
        "quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_use_double_quant": True}})
    write("tiny-nf4/model.safetensors", b)
    # 5. A Hugging Face cache: hub/models--ORG--NAME/{refs/main, snapshots/COMMIT/}.
    repo = "hfcache/hub/models--tiny-org--tiny-llama"
    commit = "0123456789abcdef0123456789abcdef01234567"
    os.makedirs(repo + "/refs", exist_ok=True)
    with open(repo + "/refs/main", "w") as f:
        f.write(commit)
    save_config(repo + "/snapshots/" + commit)
    write(repo + "/snapshots/" + commit + "/model.safetensors", dense(), {"format": "pt"})
    # 6. Broken files.
    small = [("w", "F32", [2, 3])]
    write("bad/absurd_length.safetensors", small, header_len=1 << 40)
    write("bad/truncated.safetensors", small, data_len=8)
    write("bad/bad_dtype.safetensors", [("w", "F32", [2, 3])])
    with open("bad/bad_dtype.safetensors", "r+b") as f:
        s = f.read().replace(b'"F32"', b'"Q77"')
        f.seek(0)
        f.write(s)
    with open("bad/not_json.safetensors", "wb") as f:
        f.write(struct.pack("<Q", 8) + b"{\"w\":[1," + bytes(4))
    with open("bad/short.safetensors", "wb") as f:
        f.write(b"\x10\x00\x00")
    # 7. A checkpoint folder whose file announces an absurd header.
    save_config("bad-checkpoint")
    write("bad-checkpoint/model.safetensors", small, header_len=1 << 40)


if __name__ == "__main__":
    main()
