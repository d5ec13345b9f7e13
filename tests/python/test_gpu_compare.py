#!/usr/bin/env python3
"""bench/gpu/compare.py without a GPU: per-shape directories as compare_torch.sh writes them, from
the emulating worker, beside a torch file with a missing row, an error and a NaN. The comparison
must list each problem and still judge the targets it has figures for."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ["WAVECREST_SOURCE_DIR"]
WORKER = os.environ["WAVECREST_WORKER_BIN"]
SHAPES = ["8192,8192,8192,1,TN", "4096,4096,4096,1,NN", "1000,1537,771,1,TN", "2048,2048,64,8,NT"]


class CompareTest(unittest.TestCase):
    def test_problems_are_listed_and_targets_judged(self):
        with tempfile.TemporaryDirectory() as out:
            for i, row in enumerate(SHAPES, 1):
                d = os.path.join(out, f"shape-{i:03d}")
                os.makedirs(d)
                with open(os.path.join(d, "shape.csv"), "w") as f:
                    f.write(row + "\n")
                for run in (1, 2):
                    if i == 4 and run == 2:
                        continue  # a second run that never happened
                    subprocess.run([WORKER, "bench", "--backend", "analytic", "--emulate",
                                    "h100-sxm", "--gemms", os.path.join(d, "shape.csv"),
                                    "--json", os.path.join(d, f"wavecrest-{run}.json")],
                                   check=True, capture_output=True)
                m, n, k, b, lay = row.split(",")
                g = {"m": int(m), "n": int(n), "k": int(k), "batch": int(b), "layout": lay}
                if i == 1:
                    g.update(time_s=0.0016, tflops=687.0)
                elif i == 2:
                    g.update(error="CUDA out of memory")
                elif i == 3:
                    g.update(time_s=float("nan"), tflops=float("nan"))
                else:
                    continue  # torch never wrote this shape
                with open(os.path.join(d, "torch.json"), "w") as f:
                    json.dump({"torch": "test", "cuda": "13.0", "wall_s": 1.0, "gemms": [g]}, f)
            r = subprocess.run([sys.executable, os.path.join(SRC, "bench/gpu/compare.py"), out],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            text = r.stdout
            self.assertIn("PREDICTED by the analytic backend", text)
            self.assertIn("torch CUDA out of memory", text)
            self.assertIn("missing: (2048, 2048, 64, 8, 'NT'): torch missing", text)
            self.assertIn("second wavecrest run missing", text)
            self.assertIn("% of the ", text)  # 8192^3 judged against the catalogued peak
            self.assertIn("large aligned GEMMs", text)
            self.assertNotIn("Traceback", text + r.stderr)


if __name__ == "__main__":
    unittest.main()
