#!/usr/bin/env python3
"""Writes the binary seeds of tests/fuzz/corpus (serialized requests and cache rows). Run with the
stubs the Python package ships: PYTHONPATH=client/python /usr/bin/python3 tests/fuzz/make_seeds.py"""
import os

from wavecrest.v1 import advisor_pb2, model_pb2

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    with open(os.path.join(HERE, target, name), "wb") as f:
        f.write(data)


model = model_pb2.ModelSpec(hidden_size=2560, num_attention_heads=32, num_layers=32,
                            vocab_size=50304)
write("fuzz_requests", "analyze", b"\x00" + advisor_pb2.AnalyzeRequest(
    model=model, gpu="h100-sxm").SerializeToString())
time = advisor_pb2.TimeGemmsRequest(gpu="a100-sxm-80gb", mode=advisor_pb2.MODE_PREDICTED)
time.gemms.add(m=8192, n=12288, k=4096)
time.gemms.add(m=2048, n=2048, k=80, batch=64)
write("fuzz_requests", "time-gemms", b"\x01" + time.SerializeToString())
write("fuzz_requests", "time-model", b"\x01" + advisor_pb2.TimeGemmsRequest(
    gpu="h100-sxm", model=model).SerializeToString())
rec = advisor_pb2.RecommendRequest(model=model, gpu="h100-sxm", mode=advisor_pb2.MODE_PREDICTED,
                                   param_tolerance=0.02, top=5)
rec.vary.extend([advisor_pb2.KNOB_HEADS, advisor_pb2.KNOB_FFN])
rec.allowed_head_dims.extend([64, 128])
rec.tensor_parallel_options.extend([2, 4])
write("fuzz_requests", "recommend", b"\x02" + rec.SerializeToString())
timing = advisor_pb2.GemmTiming(time_s=0.000123, tflops=700.0)
timing.shape.m, timing.shape.n, timing.shape.k, timing.shape.batch = 4096, 4096, 4096, 1
timing.layout = model_pb2.LAYOUT_TN
timing.dtype = model_pb2.DTYPE_BF16
timing.provenance.source = model_pb2.SOURCE_MEASURED
timing.provenance.method = "cublaslt-timing-v2 cold-L2 heuristic"
write("fuzz_cache_row", "gemm-timing", timing.SerializeToString())
