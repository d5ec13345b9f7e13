"""What a training launcher does before it starts a job: ask wavecrest about the model it was
given (a Hugging Face config.json or a wavecrest spec), and say what a better shape would be.

    pip install ./client/python            # in a venv made with --system-site-packages
    python client/python/examples/launcher.py 127.0.0.1:50051 path/to/config.json h100-sxm
"""
import sys

from wavecrest import AdvisorClient, WavecrestError


def main() -> int:
    address, model_path, gpu = sys.argv[1], sys.argv[2], sys.argv[3]
    with AdvisorClient(address) as client:  # deadlines follow each call's measuring budget
        try:
            report = client.analyze(model_path, gpu, seq_length=4096)
        except WavecrestError as e:
            print(f"wavecrest refused the model: {e} {e.violations}", file=sys.stderr)
            return 1
        # What the figures assume (batch, sequence, TP, ...), then the figures: enums print by
        # name (PREDICTED, MEASURED, CACHED).
        print(f"{report.model.name or model_path}: {report.assumed.summary}")
        print(f"  {report.step_time_s * 1e3:.1f} ms/step, MFU {report.mfu:.1%} "
              f"({report.provenance.source})")
        for rule in report.rules:
            print("  rule broken:", rule.message)
        best = client.recommend(model_path, gpu, mode="predicted", top=3, seq_length=4096,
                                on_progress=lambda p: None)
        # The verdict first: KEEP (nothing beats the model as given beyond the uncertainty),
        # CHANGE (the first candidate does) or NO_CANDIDATES (the constraints left none).
        print(f"  verdict: {best.verdict}: {best.verdict_reason}")
        for c in best.candidates:
            if c.baseline or not c.beats_baseline:
                continue
            m = c.model
            print(f"  #{c.rank}: h={m.hidden_size} a={m.num_attention_heads} "
                  f"kv={m.num_kv_heads} f={m.ffn_hidden_size} L={m.num_layers}: "
                  f"{c.speedup:.3f}x ± {c.speedup_uncertainty:.3f} "
                  f"({c.source})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
