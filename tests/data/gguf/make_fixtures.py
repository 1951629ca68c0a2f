"""make_fixtures.py - writes the GGUF test files (python3 tests/data/gguf/make_fixtures.py),
byte by byte from the format (ggml docs/gguf.md, version 3): tiny-llama.gguf, a 2-layer
Llama in Q4_K / Q6_K / F32 whose tensor data is zeros (only the header is ever read), and
the malformed headers the parser must refuse. The tensor sizes follow ggml's block
layouts: Q4_0 18 bytes per 32 values, Q8_0 34 per 32, Q4_K 144 per 256, Q6_K 210 per 256,
F32 4 a value."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
TYPES = {"F32": (0, 1, 4), "Q4_0": (2, 32, 18), "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144),
         "Q6_K": (14, 256, 210)}


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def kv_u32(key, v):
    return s(key) + struct.pack("<II", 4, v)


def kv_str(key, v):
    return s(key) + struct.pack("<I", 8) + s(v)


def kv_str_array(key, items):
    return s(key) + struct.pack("<IIQ", 9, 8, len(items)) + b"".join(s(i) for i in items)


def gguf(metadata, tensors, version=3, align=32, magic=b"GGUF"):
    """tensors: (name, dims, type name); offsets laid out back to back, aligned."""
    infos, offset = [], 0
    for name, dims, t in tensors:
        code, block, size = TYPES[t]
        n = 1
        for d in dims:
            n *= d
        nbytes = n // block * size
        infos.append(s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) +
                     struct.pack("<IQ", code, offset))
        offset += (nbytes + align - 1) // align * align
    head = magic + struct.pack("<IQQ", version, len(tensors), len(metadata)) + b"".join(metadata) + b"".join(infos)
    pad = (align - len(head) % align) % align
    return head + b"\0" * pad + b"\0" * offset


def tiny_llama():
    h, kv, ffn, vocab = 64, 32, 128, 128
    meta = [kv_str("general.architecture", "llama"), kv_str("general.name", "tiny-llama"),
            kv_u32("general.alignment", 32), kv_u32("llama.block_count", 2),
            kv_u32("llama.context_length", 2048), kv_u32("llama.embedding_length", h),
            kv_u32("llama.feed_forward_length", ffn), kv_u32("llama.attention.head_count", 2),
            kv_u32("llama.attention.head_count_kv", 1),
            kv_str_array("tokenizer.ggml.tokens", ["t%d" % i for i in range(vocab)])]
    t = [("token_embd.weight", [h, vocab], "Q8_0")]
    for i in range(2):
        p = "blk.%d." % i
        t += [(p + "attn_norm.weight", [h], "F32"), (p + "attn_q.weight", [h, h], "Q4_0"),
              (p + "attn_k.weight", [h, kv], "Q4_0"), (p + "attn_v.weight", [h, kv], "Q6_K"),
              (p + "attn_output.weight", [h, h], "Q4_0"), (p + "ffn_norm.weight", [h], "F32"),
              (p + "ffn_gate.weight", [h, ffn], "Q4_K"), (p + "ffn_up.weight", [h, ffn], "Q4_K"),
              (p + "ffn_down.weight", [ffn, h], "Q6_K")]
    t += [("output_norm.weight", [h], "F32"), ("output.weight", [h, vocab], "Q6_K")]
    return meta, t


def main():
    meta, t = tiny_llama()
    good = gguf(meta, t)
    open(os.path.join(HERE, "tiny-llama.gguf"), "wb").write(good)
    bad = os.path.join(HERE, "bad")
    os.makedirs(bad, exist_ok=True)
    open(os.path.join(bad, "magic.gguf"), "wb").write(gguf(meta, t, magic=b"GGML")[:64])
    open(os.path.join(bad, "version.gguf"), "wb").write(gguf(meta, t, version=7)[:64])
    open(os.path.join(bad, "truncated.gguf"), "wb").write(good[:600])
    # a tensor whose data lies past the end of the file
    open(os.path.join(bad, "short-data.gguf"), "wb").write(good[:-4096])
    # no sizes in the metadata
    open(os.path.join(bad, "no-sizes.gguf"), "wb").write(gguf([kv_str("general.architecture", "llama")], t[:1]))


main()
