"""The Python package against a real wavecrest-server (run by ctest with Debian's python3; the
package from client/python on PYTHONPATH, and once installed into a fresh venv with pip)."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

import wavecrest
from wavecrest import AdvisorClient, WavecrestError, advisor_pb2, load_model, model_pb2, to_json

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


class BuildBackendTest(unittest.TestCase):
    """The offline build backend reads pyproject.toml without tomllib on Python 3.10 exactly as
    tomllib reads it."""

    def test_project_table_without_tomllib_equals_tomllib(self):
        import tomllib
        sys.path.insert(0, os.path.join(SOURCE, "client", "python", "_build"))
        try:
            import wavecrest_build
        finally:
            sys.path.pop(0)
        with open(os.path.join(SOURCE, "client", "python", "pyproject.toml")) as f:
            text = f.read()
        self.assertEqual(wavecrest_build._project_table(text), tomllib.loads(text)["project"])
        self.assertEqual(wavecrest_build._project_table(text)["requires-python"], ">=3.10")


class TokenTest(unittest.TestCase):
    def test_token_goes_with_every_call_unary_and_streaming(self):
        with tempfile.TemporaryDirectory() as tmp:
            token = "python-client-token-0123456789"
            with open(os.path.join(tmp, "tokens"), "w") as f:
                f.write(f"{token} client\n")
            os.chmod(os.path.join(tmp, "tokens"), 0o600)  # the server refuses a world-readable one
            server, log, address = start_server(tmp, f"--auth_tokens_file={tmp}/tokens")
            try:
                anonymous = AdvisorClient(address, timeout_s=10)
                deadline = time.monotonic() + 30
                while anonymous.health() != "SERVING" and time.monotonic() < deadline:
                    time.sleep(0.02)
                with self.assertRaises(WavecrestError) as cm:
                    anonymous.list_devices()
                self.assertEqual(cm.exception.code, grpc.StatusCode.UNAUTHENTICATED)
                client = AdvisorClient(address, timeout_s=10, token=token)
                self.assertTrue(client.list_devices().catalog)
                self.assertEqual(len(client.time_gemms("h100-sxm", gemms=[(512, 512, 512)],
                                                       mode="predicted")), 1)
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=30)
                log.close()


class MeasuringBudgetTest(unittest.TestCase):
    """Issue 21: a measured recommendation through a worker slowed to 1.2 s per GEMM answers within
    its budget (the client's deadline follows it: nothing to pass), with what was measured, the
    rest predicted, and a note saying so."""

    def test_a_measured_recommend_answers_within_its_budget_through_a_slow_worker(self):
        with tempfile.TemporaryDirectory() as tmp:
            server, log, address = start_server(
                tmp, "--workers=1", "--worker_backend=analytic",
                f"--worker_socket_dir={tmp}/sockets",
                "--worker_extra_args=--fault=slow --fault_slow_ms=1200")
            try:
                client = AdvisorClient(address)
                deadline = time.monotonic() + 60
                while (client.health("wavecrest.v1.Advisor/measure") != "SERVING"
                       and time.monotonic() < deadline):
                    time.sleep(0.05)
                progress = []
                start = time.monotonic()
                r = client.recommend(os.path.join(SOURCE, "examples/models/pythia-2.8b.json"),
                                     "h100-sxm", mode="measured", max_gpu_seconds=4,
                                     on_progress=progress.append)
                took = time.monotonic() - start
                self.assertLess(took, 4 + 10)
                self.assertTrue(progress)
                self.assertGreater(r.gemms_predicted, 0)
                notes = " ".join(r.notes)
                # The worker timed some GEMMs before the budget ran out (an emulating worker's
                # times are predictions, so they count as predicted, and a note says so).
                m = re.search(r"the measuring budget \(wall time\) ran out with (\d+) of (\d+) "
                              r"GEMMs not measured: they are PREDICTED", notes)
                self.assertIsNotNone(m, notes)
                self.assertLess(int(m.group(1)), int(m.group(2)))
                self.assertIn("emulates the GPU with the analytic model", notes)
                self.assertIn(r.verdict, ("KEEP", "CHANGE", "NO_CANDIDATES"))
                # Each row says how it was answered: predicted, with the share of its step that
                # was measured where the budget reached some of its GEMMs.
                self.assertTrue(r.candidates)
                for c in r.candidates:
                    self.assertGreaterEqual(c.measured_share, 0)
                    self.assertLess(c.measured_share, 1)
                    self.assertEqual(c.source, model_pb2.SOURCE_PREDICTED)
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
        cls.client = AdvisorClient(f"127.0.0.1:{port}", timeout_s=30)
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
        model = load_model(os.path.join(SOURCE, "examples/models/pythia-2.8b.json"))
        report = self.client.analyze(model, "a100-sxm-80gb")
        self.assertEqual(report.params.total_params, 2775208960)
        self.assertTrue(any(r.id == "head_dim_pow2" for r in report.rules))
        self.assertEqual(to_json(report)["gpu"], "a100-sxm-80gb")
        # A path works as well as a ModelSpec, and overrides are ModelSpec fields.
        by_path = self.client.analyze(os.path.join(SOURCE, "examples/models/pythia-2.8b.json"),
                                      "a100-sxm-80gb", seq_length=4096, dtype="fp16")
        self.assertEqual(by_path.model.seq_length, 4096)
        self.assertEqual(by_path.model.dtype, model_pb2.DTYPE_FP16)
        # The attention kernel as the CLI spells it: an older one is slower, and says why.
        triton = self.client.analyze(model, "a100-sxm-80gb", attention="flash1_triton")
        self.assertEqual(triton.model.attention, model_pb2.ATTENTION_FLASH1_TRITON)
        self.assertGreater(triton.step_time_s, report.step_time_s)
        fused = [g for g in triton.gemms if g.gemm.fused_attention]
        self.assertTrue(fused)
        self.assertTrue(all(any("flash1_triton kernel" in p for p in g.penalties) for g in fused))

    def test_hf_config_goes_through_the_server(self):
        hf = os.path.join(SOURCE, "examples/models/hf/llama-2-7b.json")
        with self.assertRaises(ValueError) as cm:
            load_model(hf)  # the mapping lives in the server; the message says what to do
        self.assertIn("model=", str(cm.exception))
        report = self.client.analyze(hf, "h100-sxm", seq_length=4096)
        self.assertEqual(report.model.hidden_size, 4096)
        self.assertEqual(report.model.ffn_hidden_size, 11008)
        self.assertEqual(report.model.seq_length, 4096)
        self.assertEqual(report.params.total_params, 6738415616)  # the CLI's figure for this file
        # One answer: parallelism beyond TP in the model is a run, and the top level is the run's.
        run = self.client.analyze(hf, "h100-sxm", tensor_parallel=2, pipeline_parallel=2,
                                  data_parallel=2)
        self.assertEqual(run.step.gpus, 8)
        self.assertEqual(run.step_time_s, run.step.step_time_s)
        self.assertEqual(run.mfu, run.step.mfu)
        self.assertLess(run.kernels.step_time_s, run.step_time_s)
        self.assertEqual(run.flop_count, "full")
        # Counted as Megatron-Core counts a causal mask: the same step, fewer model FLOPs.
        causal = self.client.analyze(hf, "h100-sxm", tensor_parallel=2, pipeline_parallel=2,
                                     data_parallel=2, flop_count="causal")
        self.assertEqual(causal.flop_count, "causal")
        self.assertEqual(causal.step_time_s, run.step_time_s)
        self.assertLess(causal.tflops_per_gpu, run.tflops_per_gpu)
        with self.assertRaises(ValueError):
            self.client.analyze(hf, "h100-sxm", flop_count="half")
        # The run's own knobs, as the CLI spells them: hiding tensor-parallel collectives
        # shortens the step by what they took, and the assumptions say how much was hidden.
        plain = self.client.analyze(hf, "h100-sxm", tensor_parallel=8,
                                    run={"num_gpus": 8, "recompute": "full"})
        hidden = self.client.analyze(hf, "h100-sxm", tensor_parallel=8,
                                     run={"num_gpus": 8, "recompute": "full", "tp_overlap": 0.5})
        self.assertGreater(plain.step.tp_comm_s, 0)
        self.assertAlmostEqual(hidden.step.tp_comm_s, plain.step.tp_comm_s / 2, places=9)
        self.assertLess(hidden.step_time_s, plain.step_time_s)
        self.assertTrue(any("50% of the tensor-parallel collectives hidden" in a
                            for a in hidden.step.assumptions))
        with self.assertRaises(ValueError):
            self.client.analyze(hf, "h100-sxm", run={"num_gpus": 8, "recompute": "most"})
        # Interleaved pipelines overlap their sends unless told not to, as Megatron-LM does.
        piped = dict(tensor_parallel=2, pipeline_parallel=4)
        sends = self.client.analyze(hf, "h100-sxm", run={"num_gpus": 8, "interleave": 2}, **piped)
        exposed = self.client.analyze(hf, "h100-sxm", run={"num_gpus": 8, "interleave": 2,
                                                          "no_pp_overlap": True}, **piped)
        self.assertLess(sends.step.pp_comm_s, exposed.step.pp_comm_s)
        self.assertTrue(any("overlap_p2p_comm off" in a for a in exposed.step.assumptions))
        # A named network across nodes, as the CLI's --network says it.
        across = dict(tensor_parallel=8, seq_length=4096)
        hdr = self.client.analyze(hf, "h100-sxm", run={"num_gpus": 32, "network": "hdr-ib"},
                                  **across)
        ndr = self.client.analyze(hf, "h100-sxm", run={"num_gpus": 32, "network": "ndr-ib"},
                                  **across)
        self.assertLess(ndr.step.dp_comm_s, hdr.step.dp_comm_s)
        with self.assertRaises(WavecrestError) as cm:
            self.client.analyze(hf, "h100-sxm", run={"num_gpus": 32, "network": "myrinet"})
        self.assertIn("run.network: unknown value \"myrinet\"; allowed: hdr-ib", str(cm.exception))
        # The expert-parallel dispatcher, as the CLI's --ep-dispatcher names it.
        moe = os.path.join(SOURCE, "examples/models/hf/qwen3-30b-a3b.json")
        ep16 = dict(expert_parallel=16, expert_tensor_parallel=1)
        plain = self.client.analyze(moe, "h100-sxm", run={"num_gpus": 16}, **ep16)
        flex = self.client.analyze(moe, "h100-sxm", run={"num_gpus": 16, "ep_dispatcher": "flex"},
                                   **ep16)
        self.assertLess(flex.step.ep_comm_s, plain.step.ep_comm_s / 2)
        self.assertTrue(any("flex dispatcher" in a for a in flex.step.assumptions))
        with self.assertRaises(WavecrestError) as cm:
            self.client.analyze(moe, "h100-sxm", run={"num_gpus": 16, "ep_dispatcher": "nccl"},
                                **ep16)
        self.assertIn("run.ep_dispatcher: unknown value \"nccl\"; allowed: alltoall",
                      str(cm.exception))
        # FP8 weights gathered in FP8, as the CLI's --fp8-param-gather says it.
        fp8 = dict(dtype="fp8_e4m3", tensor_parallel=8)
        bf16_gather = self.client.analyze(hf, "h100-sxm", run={"num_gpus": 64, "zero_stage": 1},
                                          **fp8)
        fp8_gather = self.client.analyze(hf, "h100-sxm", run={"num_gpus": 64, "zero_stage": 1,
                                                              "fp8_param_gather": True}, **fp8)
        self.assertLess(fp8_gather.step.memory.weights_bytes,
                        bf16_gather.step.memory.weights_bytes)
        with self.assertRaises(WavecrestError) as cm:
            self.client.analyze(hf, "h100-sxm", run={"num_gpus": 64, "fp8_param_gather": True},
                                tensor_parallel=8)
        self.assertIn("run.fp8_param_gather: needs dtype fp8_e4m3", str(cm.exception))
        # The FP8 recipe, as the CLI's --fp8-recipe names it: rowwise gathers TP in BF16.
        sp = {"num_gpus": 8, "sequence_parallel": True}
        tensorwise = self.client.analyze(hf, "h100-sxm", run=sp, **fp8)
        rowwise = self.client.analyze(hf, "h100-sxm", run=dict(sp, fp8_recipe="rowwise"), **fp8)
        self.assertGreater(rowwise.step.tp_comm_s, tensorwise.step.tp_comm_s)
        self.assertTrue(any("with rowwise scales" in a for a in rowwise.step.assumptions))
        with self.assertRaises(WavecrestError) as cm:
            self.client.analyze(hf, "h100-sxm", run=dict(sp, fp8_recipe="blockwise"), **fp8)
        self.assertIn("run.fp8_recipe: unknown value \"blockwise\"; allowed: tensorwise",
                      str(cm.exception))
        # The loss, as the CLI's --loss names it: eager holds more of the logits and says so;
        # the whole step's tokens beside the MFU of the other count.
        fused = self.client.analyze(hf, "h100-sxm", run=sp)
        eager = self.client.analyze(hf, "h100-sxm", run=dict(sp, loss="eager"))
        self.assertGreater(eager.step.memory.activations_bytes,
                           fused.step.memory.activations_bytes)
        self.assertGreater(eager.step.step_time_s, fused.step.step_time_s)
        self.assertTrue(any("eager cross_entropy" in a for a in eager.step.assumptions))
        self.assertGreater(fused.step.tokens_per_step, 0)
        self.assertGreater(fused.step.mfu_other_count, 0)
        with self.assertRaises(WavecrestError) as cm:
            self.client.analyze(hf, "h100-sxm", run=dict(sp, loss="chunked"))
        self.assertIn("run.loss: unknown value \"chunked\"; allowed: fused, eager",
                      str(cm.exception))
        # The context-parallel ring, as the CLI's --cp-ring names it: PyTorch's moves the query
        # heads' K and V and carries its own error band.
        ring = {"num_gpus": 64, "recompute": "full"}
        long = dict(seq_length=131072, context_parallel=8, tensor_parallel=8)
        te = self.client.analyze(hf, "h100-sxm", run=ring, **long)
        torch = self.client.analyze(hf, "h100-sxm", run=dict(ring, cp_ring="torch"), **long)
        self.assertGreater(torch.step.cp_comm_s, te.step.cp_comm_s)
        self.assertEqual(torch.step.error_band_kind, "PyTorch-ring context parallel")
        self.assertTrue(any("PyTorch's ring" in a for a in torch.step.assumptions))
        with self.assertRaises(WavecrestError) as cm:
            self.client.analyze(hf, "h100-sxm", run=dict(ring, cp_ring="ulysses"), **long)
        self.assertIn("run.cp_ring: unknown value \"ulysses\"; allowed: te", str(cm.exception))

    def test_plan_searches_the_layout_and_a_run_that_does_not_fit_is_not_the_answer(self):
        model = os.path.join(SOURCE, "examples/models/llama-3-70b.json")
        planned = self.client.analyze(model, "h100-sxm", run={
            "num_gpus": 512, "global_batch": 1024, "plan": True, "train_tokens": 15e12})
        self.assertGreater(len(planned.layouts), 1)
        best = planned.layouts[0]
        self.assertEqual(best.rank, 1)
        self.assertTrue(best.step.memory.fits)
        self.assertEqual(planned.step.step_time_s, best.step.step_time_s)
        self.assertEqual(planned.step.tensor_parallel * planned.step.pipeline_parallel *
                         planned.step.data_parallel * planned.step.context_parallel, 512)
        self.assertTrue(all(o.why for o in planned.layouts[1:]))
        self.assertGreater(planned.step.time_to_train_s, 0)
        self.assertAlmostEqual(planned.step.gpu_hours,
                               planned.step.time_to_train_s * 512 / 3600, delta=1)
        # Degrees held: one combination.
        kept = self.client.analyze(model, "h100-sxm", tensor_parallel=8, pipeline_parallel=8,
                                   run={"num_gpus": 512, "global_batch": 1024, "plan": True,
                                        "keep_degrees": True})
        self.assertEqual(kept.step.tensor_parallel, 8)
        self.assertEqual(len(kept.layouts), 0)

    def test_answers_are_typed_with_enums_by_name_and_their_assumptions(self):
        hf = os.path.join(SOURCE, "examples/models/hf/llama-3-8b.json")
        report = self.client.analyze(hf, "h100-sxm", tensor_parallel=8)
        self.assertIsInstance(report, wavecrest.results.AnalyzeResponse)
        self.assertIsInstance(report.gemms[0], wavecrest.results.GemmAnalysis)
        # Enums print by name, and still equal the protobuf numbers and their names.
        source = report.provenance.source
        self.assertEqual(str(source), "PREDICTED")
        self.assertEqual(f"{source}", "PREDICTED")
        self.assertIn("Source.PREDICTED", repr(report.provenance))
        self.assertEqual(source, model_pb2.SOURCE_PREDICTED)
        self.assertEqual(source, "PREDICTED")
        self.assertEqual(source, "SOURCE_PREDICTED")
        self.assertNotEqual(source, "MEASURED")
        self.assertEqual(str(report.model.workload), "TRAINING")
        self.assertEqual(to_json(report)["provenance"]["source"], "SOURCE_PREDICTED")
        # Every answer states its assumptions; without a run at TP 8 the kernels' MFU (the
        # answer) has the run's beside it, with its TP communication.
        self.assertEqual(report.assumed.tensor_parallel, 8)
        self.assertEqual(report.assumed.seq_length, 2048)
        self.assertEqual(report.assumed.micro_batch_size, 1)
        self.assertIn("training: micro-batch 1 of 2048-token sequences; TP 8",
                      report.assumed.summary)
        self.assertIsNone(report.step)
        self.assertIsNotNone(report.tensor_parallel_run)
        self.assertEqual(report.mfu, report.kernels.mfu)
        self.assertEqual(report.tensor_parallel_run.gpus, 8)
        self.assertGreater(report.tensor_parallel_run.tp_comm_s, 0)
        self.assertLess(report.tensor_parallel_run.mfu, report.kernels.mfu)
        as_run = self.client.analyze(hf, "h100-sxm", tensor_parallel=8, run={"num_gpus": 8})
        self.assertAlmostEqual(report.tensor_parallel_run.mfu, as_run.mfu, places=9)
        one = self.client.analyze(hf, "h100-sxm")
        self.assertIsNone(one.tensor_parallel_run)
        # Decode says its batch and KV length.
        decode = self.client.analyze(hf, "h100-sxm", workload="decode", micro_batch_size=8,
                                     kv_cache_length=4096)
        self.assertEqual(decode.assumed.workload, "DECODE")
        self.assertEqual(decode.assumed.kv_cache_length, 4096)
        self.assertIn("decode: batch 8, 4096 tokens of KV cache per sequence",
                      decode.assumed.summary)
        sweep = self.client.sweep(hf, "h100-sxm", vary="hidden", start=4096, stop=4224, step=64)
        self.assertIsInstance(sweep.points[0], wavecrest.results.SweepPoint)
        self.assertEqual(str(sweep.points[0].source), "PREDICTED")
        self.assertEqual(sweep.assumed.summary, one.assumed.summary)
        timings = self.client.time_gemms("h100-sxm", gemms=[(512, 512, 512)], mode="predicted")
        self.assertEqual(str(timings[0].provenance.source), "PREDICTED")

    def test_recommend_rows_say_which_tensor_parallel_degrees_they_meet(self):
        # A 30-head 7B asked for TP 1, 2, 4, 8: the baseline breaks 4 and 8, every candidate
        # meets all four (heads moved to a count that divides), and each row says so.
        model = {"name": "h30-7b", "hidden_size": 3840, "num_attention_heads": 30,
                 "num_kv_heads": 30, "num_layers": 40, "ffn_hidden_size": 10240,
                 "mlp": "MLP_SWIGLU", "vocab_size": 32000, "norm": "NORM_RMSNORM"}
        r = self.client.recommend(model, "h100-sxm", mode="predicted",
                                  tensor_parallel_options=[1, 2, 4, 8])
        self.assertEqual(r.tensor_parallel_degrees, [1, 2, 4, 8])
        self.assertEqual(r.verdict, "CHANGE")
        others = [c for c in r.candidates if not c.baseline]
        self.assertTrue(others)
        for c in others:
            self.assertEqual(c.tensor_parallel_legal, [1, 2, 4, 8])
            self.assertEqual(c.model.num_attention_heads % 8, 0)
        base = [c for c in r.candidates if c.baseline][0]
        self.assertEqual(base.tensor_parallel_legal, [1, 2])
        self.assertEqual(base.rank, len(r.candidates))  # after what was asked for
        self.assertTrue(any(g.required for g in r.candidates[0].knob_gains))

    def test_recommend_and_sweep_take_enums_as_the_cli_spells_them(self):
        model = os.path.join(SOURCE, "examples/models/pythia-2.8b.json")
        progress = []
        best = self.client.recommend(model, "h100-sxm", mode="predicted", vary=["heads"], top=3,
                                     on_progress=progress.append)
        self.assertTrue(best.done)
        ranked = [c for c in best.candidates if not c.baseline]
        self.assertTrue(ranked)
        for c in ranked:  # only the heads moved
            self.assertEqual(c.model.hidden_size, 2560)
        # The verdict by name, and the same model overrides as analyze() takes.
        self.assertIn(best.verdict, ("KEEP", "CHANGE"))
        self.assertEqual(best.verdict,
                         advisor_pb2.Verdict.Name(best.response.verdict)[len("VERDICT_"):])
        longer = self.client.recommend(model, "h100-sxm", mode="predicted", top=3,
                                       seq_length=4096, tensor_parallel=2, param_tolerance=0.03)
        base = [c for c in longer.candidates if c.baseline][0]
        self.assertEqual(base.model.seq_length, 4096)
        self.assertEqual(base.model.tensor_parallel, 2)
        with self.assertRaises(ValueError) as cm:
            self.client.recommend(model, "h100-sxm", mode="predicted", sequence_len=4096)
        self.assertIn("model.sequence_len: not a ModelSpec field", str(cm.exception))
        gpt2 = self.client.recommend(os.path.join(SOURCE, "examples/models/hf/gpt2.json"),
                                     "h100-sxm", mode="predicted")
        self.assertEqual(gpt2.verdict, "CHANGE")
        self.assertIsNotNone(gpt2.best)
        self.assertEqual(gpt2.best.model.num_attention_heads, 12)
        self.assertEqual(gpt2.best.model.vocab_size % 64, 0)
        self.assertEqual(to_json(gpt2)["verdict"], "VERDICT_CHANGE")
        # What every candidate held of the model, and what vary released, as the CLI says it:
        # `held` the response's list, `kept` and `released` by name.
        self.assertIn("kv_group", gpt2.kept)
        self.assertIn("kv_cache", gpt2.kept)
        self.assertEqual([h.name for h in gpt2.held if not h.released], list(gpt2.kept))
        self.assertEqual(gpt2.released, {})
        loose = self.client.recommend(model, "h100-sxm", mode="predicted", top=3,
                                      vary=["heads", "head-dim"])
        self.assertIn("head_dim", loose.released)
        self.assertNotIn("head_dim", loose.kept)
        self.assertIn("kept=", repr(loose))
        sweep = self.client.sweep(model, "h100-sxm", vary="hidden", start=2048, stop=2304,
                                  step=64)
        self.assertEqual([p.value for p in sweep.points], [2048, 2112, 2176, 2240, 2304])
        with self.assertRaises(ValueError) as cm:
            self.client.recommend(model, "h100-sxm", mode="predicted", vary=["width"])
        self.assertIn("vary: unknown value 'width'; allowed: heads", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            self.client.sweep(model, "h100-sxm", vary="hidden", start=1, stop=2, step=1,
                              mode="fast")
        self.assertIn("mode: unknown value 'fast'; allowed: auto, measured, predicted",
                      str(cm.exception))

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
        model = load_model(os.path.join(SOURCE, "examples/models/pythia-2.8b.json"))
        model.tensor_parallel = 3
        with self.assertRaises(WavecrestError) as cm:
            self.client.analyze(model, "h100-sxm")
        self.assertEqual(cm.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("model.tensor_parallel", [f for f, _ in cm.exception.violations])
        # MEASURED on a server with no worker configured: retrying cannot help.
        with self.assertRaises(WavecrestError) as cm:
            self.client.time_gemms("h100-sxm", gemms=[(64, 64, 64)], mode="measured")
        self.assertEqual(cm.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
        self.assertFalse(cm.exception.retryable)

    def test_example_launcher_runs(self):
        out = subprocess.run(
            [sys.executable, os.path.join(SOURCE, "client/python/examples/launcher.py"),
             self.client.channel._channel.target().decode(),
             os.path.join(SOURCE, "examples/models/pythia-2.8b.json"), "h100-sxm"],
            capture_output=True, text=True, env=os.environ, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("rule broken: h/a = 80", out.stdout)
        self.assertIn("PREDICTED", out.stdout)


class RetryTest(unittest.TestCase):
    """Retries follow the server's RetryInfo, and only for retryable codes."""

    def test_queue_full_is_retried_after_the_servers_delay_then_succeeds(self):
        calls = []

        class Full(grpc.RpcError):
            def code(self):
                return grpc.StatusCode.RESOURCE_EXHAUSTED

            def details(self):
                return "queue full"

            def trailing_metadata(self):
                # google.rpc.Status{code 8, details [RetryInfo{retry_delay {nanos: 50 ms}}]}
                retry = b"\x0a\x05\x10\x80\xe1\xeb\x17"
                url = b"type.googleapis.com/google.rpc.RetryInfo"
                any_ = b"\x0a" + bytes([len(url)]) + url + b"\x12" + bytes([len(retry)]) + retry
                status = b"\x08\x08\x1a" + bytes([len(any_)]) + any_
                return (("grpc-status-details-bin", status),)

        def method(request, timeout):
            calls.append(time.monotonic())
            if len(calls) < 3:
                raise Full()
            return "answer"

        client = AdvisorClient("127.0.0.1:1", timeout_s=10, retries=3)
        self.assertEqual(client._unary(method, None), "answer")
        self.assertEqual(len(calls), 3)
        self.assertGreaterEqual(calls[1] - calls[0], 0.045)  # the delay the server asked for

    def test_deadline_follows_the_measuring_budget(self):
        """Without timeout_s, a call that may measure waits for its budget plus 30 s (as the
        CLI does), so the server's answer, with what it measured, comes first."""
        client = AdvisorClient("127.0.0.1:1")
        seen = []

        def method(request, timeout):
            seen.append(timeout)
            return iter([advisor_pb2.RecommendResponse(done=True)])

        for request, expected in [
                (advisor_pb2.RecommendRequest(mode=advisor_pb2.MODE_MEASURED), 90),
                (advisor_pb2.RecommendRequest(mode=advisor_pb2.MODE_AUTO, max_gpu_seconds=10), 40),
                (advisor_pb2.RecommendRequest(mode=advisor_pb2.MODE_PREDICTED), 60)]:
            seen.clear()
            client._stream(method, request, None)
            self.assertAlmostEqual(seen[0], expected, delta=1)
        fixed = AdvisorClient("127.0.0.1:1", timeout_s=5)
        seen.clear()
        fixed._stream(method, advisor_pb2.RecommendRequest(mode=advisor_pb2.MODE_MEASURED), None)
        self.assertAlmostEqual(seen[0], 5, delta=1)

    def test_invalid_argument_is_not_retried(self):
        calls = []

        class Bad(grpc.RpcError):
            def code(self):
                return grpc.StatusCode.INVALID_ARGUMENT

            def details(self):
                return "bad"

            def trailing_metadata(self):
                return ()

        def method(request, timeout):
            calls.append(1)
            raise Bad()

        client = AdvisorClient("127.0.0.1:1", timeout_s=10, retries=3)
        with self.assertRaises(WavecrestError) as cm:
            client._unary(method, None)
        self.assertEqual(len(calls), 1)
        self.assertFalse(cm.exception.retryable)


def readme_install_line():
    """The README's install command for the Python package, as it is written there: the one line
    of a code block that runs `pip install ./client/python`."""
    with open(os.path.join(SOURCE, "README.md")) as f:
        text = f.read()
    lines = [line for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
             for line in block.splitlines()
             if "pip install ./client/python" in line and not line.lstrip().startswith("#")]
    assert len(lines) == 1, lines
    return lines[0].strip()


class InstallTest(unittest.TestCase):
    """The README's `pip install ./client/python` line, run as written (from a directory holding
    the checkout's client/), offline: then the package imports without PYTHONPATH and the
    launcher example gets a recommendation for a Hugging Face config from a real server."""

    def test_readme_install_line_works_offline_then_launcher(self):
        line = readme_install_line()
        self.assertIn("pip install ./client/python", line)
        with tempfile.TemporaryDirectory() as tmp:
            os.symlink(os.path.join(SOURCE, "client"), os.path.join(tmp, "client"))
            # No package index can be reached: pip would fail if it asked one for anything.
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            env.update(PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_NO_INPUT="1",
                       PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_RETRIES="0", PIP_TIMEOUT="2")
            pip = subprocess.run(["bash", "-c", line], capture_output=True, text=True, env=env,
                                 cwd=tmp, timeout=300)
            self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
            self.assertIn("Successfully installed wavecrest", pip.stdout)
            venv = os.path.join(tmp, ".venv")
            python = os.path.join(venv, "bin", "python")
            probe = subprocess.run(
                [python, "-c", "import wavecrest, sys; print(wavecrest.__version__, wavecrest.__file__)"],
                capture_output=True, text=True, env=env, cwd=tmp, timeout=60)
            self.assertEqual(probe.returncode, 0, probe.stderr)
            self.assertIn(os.path.realpath(venv), os.path.realpath(probe.stdout.split()[1]))
            server, log, address = start_server(tmp)
            try:
                out = subprocess.run(
                    [python, os.path.join(SOURCE, "client/python/examples/launcher.py"), address,
                     os.path.join(SOURCE, "examples/models/hf/llama-3-8b.json"), "h100-sxm"],
                    capture_output=True, text=True, env=env, cwd=tmp, timeout=120)
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertIn("MFU", out.stdout)
                # The assumptions first, and the source by name.
                self.assertIn("training: micro-batch 1 of 4096-token sequences", out.stdout)
                self.assertIn("(PREDICTED)", out.stdout)
                # The verdict first; under CHANGE the candidates that beat the model follow.
                self.assertRegex(out.stdout, r"verdict: (KEEP|CHANGE|NO_CANDIDATES): ")
                if "verdict: CHANGE" in out.stdout:
                    self.assertRegex(out.stdout, r"#1: h=\d+ a=\d+ kv=\d+")
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=30)
                log.close()


if __name__ == "__main__":
    unittest.main()
