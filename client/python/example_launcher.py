"""What a training launcher does before it starts a job: ask wavecrest about the model.

    PYTHONPATH=build/python:client/python /usr/bin/python3 client/python/example_launcher.py \
        127.0.0.1:50051 examples/models/pythia-2.8b.json h100-sxm
"""
import sys

from wavecrest.v1 import model_pb2
from wavecrest_client import WavecrestClient, WavecrestError

address, spec_path, gpu = sys.argv[1], sys.argv[2], sys.argv[3]
client = WavecrestClient(address, timeout_s=30)
model = WavecrestClient.load_model(spec_path)
try:
    report = client.analyze(model, gpu)
except WavecrestError as e:
    sys.exit(f"wavecrest refused the model: {e} {e.violations}")
print(f"{model.name}: predicted {report.step_time_s * 1e3:.1f} ms/step, MFU {report.mfu:.1%}")
for rule in report.rules:
    print("  rule broken:", rule.message)
timings = client.time_gemms(gpu, gemms=[(8192, 8192, 8192)])
source = model_pb2.Source.Name(timings[0].provenance.source)
print(f"8192^3 bf16: {timings[0].tflops:.0f} TFLOP/s ({source})")
