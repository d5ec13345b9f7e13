"""The Python client against a real wavecrest-server (run by ctest with Debian's python3)."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

from wavecrest_client import WavecrestClient, WavecrestError

SERVER = os.environ["WAVECREST_SERVER_BIN"]
SOURCE = os.environ["WAVECREST_SOURCE_DIR"]


def start_server(tmp, *flags):
    ports = os.path.join(tmp, "ports.json")
    log = open(os.path.join(tmp, "server.log"), "w")
    server = subprocess.Popen(
        [SERVER, "--listen=127.0.0.1:0", "--metrics_listen=", f"--port_file={ports}", *flags],
        stdout=log, stderr=log)
    deadline = time.monotonic() + 30
    while not os.path.exists(ports):
        if time.monotonic() > deadline:
            raise RuntimeError("server did not start")
        time.sleep(0.02)
    with open(ports) as f:
        port = json.load(f)["grpc"]
    return server, log, f"127.0.0.1:{port}"


class TokenTest(unittest.TestCase):
    def test_token_goes_with_every_call_unary_and_streaming(self):
        with tempfile.TemporaryDirectory() as tmp:
            token = "python-client-token-0123456789"
            with open(os.path.join(tmp, "tokens"), "w") as f:
                f.write(f"{token} client\n")
            server, log, address = start_server(tmp, f"--auth_tokens_file={tmp}/tokens")
            try:
                anonymous = WavecrestClient(address, timeout_s=10)
                deadline = time.monotonic() + 30
                while anonymous.health() != "SERVING" and time.monotonic() < deadline:
                    time.sleep(0.02)
                with self.assertRaises(WavecrestError) as cm:
                    anonymous.list_devices()
                self.assertEqual(cm.exception.code, grpc.StatusCode.UNAUTHENTICATED)
                client = WavecrestClient(address, timeout_s=10, token=token)
                self.assertTrue(client.list_devices().catalog)
                self.assertEqual(len(client.time_gemms("h100-sxm", gemms=[(512, 512, 512)],
                                                       mode="MODE_PREDICTED")), 1)
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=30)
                log.close()


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        ports = os.path.join(cls.tmp.name, "ports.json")
        cls.log = open(os.path.join(cls.tmp.name, "server.log"), "w")
        cls.server = subprocess.Popen(
            [SERVER, "--listen=127.0.0.1:0", "--metrics_listen=", f"--port_file={ports}"],
            stdout=cls.log, stderr=cls.log)
        deadline = time.monotonic() + 30
        while not os.path.exists(ports):
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.02)
        port = json.load(open(ports))["grpc"]
        cls.client = WavecrestClient(f"127.0.0.1:{port}", timeout_s=30)
        while time.monotonic() < deadline:
            try:
                if cls.client.health() == "SERVING":
                    break
            except WavecrestError:
                pass
            time.sleep(0.02)

    @classmethod
    def tearDownClass(cls):
        cls.server.send_signal(signal.SIGTERM)
        assert cls.server.wait(timeout=30) == 0
        cls.log.close()
        cls.tmp.cleanup()

    def test_health(self):
        self.assertEqual(self.client.health(), "SERVING")
        self.assertEqual(self.client.health("wavecrest.v1.Advisor"), "SERVING")
        self.assertEqual(self.client.health("wavecrest.v1.Advisor/measure"), "NOT_SERVING")

    def test_analyze(self):
        model = WavecrestClient.load_model(os.path.join(SOURCE, "examples/models/pythia-2.8b.json"))
        report = self.client.analyze(model, "a100-sxm-80gb")
        self.assertEqual(report.params.total_params, 2775208960)
        self.assertTrue(any(r.id == "head_dim_pow2" for r in report.rules))
        self.assertEqual(WavecrestClient.to_json(report)["gpu"], "a100-sxm-80gb")

    def test_time_gemms_with_progress(self):
        progress = []
        timings = self.client.time_gemms("h100-sxm", gemms=[(8192, 12288, 4096), (4096, 4096, 4095)],
                                         on_progress=progress.append)
        self.assertEqual(len(timings), 2)
        self.assertGreater(timings[0].tflops, timings[1].tflops)
        self.assertTrue(progress)

    def test_devices(self):
        names = [g.name for g in self.client.list_devices().catalog]
        self.assertIn("h100-sxm", names)

    def test_errors_carry_field_violations(self):
        model = WavecrestClient.load_model(os.path.join(SOURCE, "examples/models/pythia-2.8b.json"))
        model.tensor_parallel = 3
        with self.assertRaises(WavecrestError) as cm:
            self.client.analyze(model, "h100-sxm")
        self.assertEqual(cm.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("model.tensor_parallel", [f for f, _ in cm.exception.violations])
        # MEASURED on a server with no worker configured: retrying cannot help.
        with self.assertRaises(WavecrestError) as cm:
            self.client.time_gemms("h100-sxm", gemms=[(64, 64, 64)], mode="MODE_MEASURED")
        self.assertEqual(cm.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
        self.assertFalse(cm.exception.retryable)

    def test_example_launcher_runs(self):
        out = subprocess.run(
            [sys.executable, os.path.join(SOURCE, "client/python/example_launcher.py"),
             self.client.channel._channel.target().decode(),
             os.path.join(SOURCE, "examples/models/pythia-2.8b.json"), "h100-sxm"],
            capture_output=True, text=True, env=os.environ, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("rule broken: h/a = 80", out.stdout)
        self.assertIn("PREDICTED", out.stdout)


if __name__ == "__main__":
    unittest.main()
