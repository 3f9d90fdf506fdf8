"""The Python module against the program: the same JSON fields and values, the same one-line errors.

Run by ctest (tests/CMakeLists.txt) with PYTHONPATH at build/python, DTSIM_BINARY the program and DTSIM_SOURCE_DIR
the repository."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import dtsim

BINARY = os.environ["DTSIM_BINARY"]
SOURCE = os.environ["DTSIM_SOURCE_DIR"]
SMALL = os.path.join(SOURCE, "tests/data/scenarios/small-tp4.yaml")
TP8 = os.path.join(SOURCE, "scenarios/models/gpt-22b-tp8.yaml")


def program(*args):
    """The program's exit status, stdout and stderr."""
    p = subprocess.run([BINARY, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


class Run(unittest.TestCase):
    def test_a_path_gives_the_programs_json(self):
        status, out, _ = program("run", TP8, "--format", "json")
        self.assertEqual(status, 0)
        self.assertEqual(dtsim.run(TP8), json.loads(out))

    def test_a_dict_and_overrides_give_what_the_file_and_set_give(self):
        scenario = {"name": "dict", "cluster": {"gpu": "a100-sxm4-80gb", "gpus_per_node": 4},
                    "model": {"preset": "gpt-1.7b"}, "training": {"global_batch": 8, "micro_batch": 1},
                    "parallelism": {"tp": 4}}
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            json.dump(scenario, f)   # JSON is YAML
        try:
            status, out, _ = program("run", f.name, "--set", "training.micro_batch=2", "--set", "parallelism.zero=1",
                                     "--format", "json")
        finally:
            os.unlink(f.name)
        self.assertEqual(status, 0)
        want = json.loads(out)
        row = dtsim.run(scenario, set={"training.micro_batch": 2, "parallelism.zero": 1})
        self.assertEqual(row["step_time_s"], want["step_time_s"])
        self.assertEqual(row["memory"], want["memory"])
        self.assertEqual(set(row), set(want))
        self.assertEqual(row["scenario"]["training"]["micro_batch"], 2)

    def test_a_sweep_is_a_list_of_plain_rows(self):
        rows = dtsim.run(SMALL)
        self.assertIsInstance(rows, list)
        self.assertEqual(len(rows), 3)
        for r in rows:
            self.assertIsInstance(r["step_time_s"], float)
            self.assertGreater(r["step_time_s"], 0)
            self.assertIn("breakdown_s", r)

    def test_sweep_keeps_the_points_that_cannot_run_as_error_rows(self):
        rows = dtsim.sweep(os.path.join(SOURCE, "tests/data/scenarios/sweep-invalid.yaml"), jobs=2)
        self.assertEqual(len(rows), 4)
        self.assertGreater(rows[0]["step_time_s"], 0)
        self.assertIn("parallelism.dp", rows[1]["error"])
        with tempfile.TemporaryDirectory() as out:
            again = dtsim.sweep(os.path.join(SOURCE, "tests/data/scenarios/sweep-invalid.yaml"), out=out)
            self.assertTrue(os.path.exists(os.path.join(out, "results.csv")))
        self.assertEqual([r["name"] for r in again], [r["name"] for r in rows])

    def test_the_default_scenario(self):
        rows = dtsim.run()
        self.assertEqual([r["name"] for r in rows][:2], ["8xa100-nvswitch", "8xa100-full-mesh"])


class Commands(unittest.TestCase):
    def test_memory_plan_collective_catalog_match_the_program(self):
        for args, got in [
            (("memory", TP8), dtsim.memory(TP8)),
            (("plan", TP8, "--top", "2", "--confirm", "0"), dtsim.plan(TP8, top=2, confirm=0)),
            (("collective", "--gpu", "h100-sxm5-80gb", "-g", "8", "-b", "1M", "-e", "4M", "-d", "bfloat16"),
             dtsim.collective("h100-sxm5-80gb", gpus=8, min="1M", max=4 * 1024 * 1024, datatype="bfloat16")),
            (("catalog",), dtsim.catalog()),
        ]:
            with self.subTest(command=args[0]):
                status, out, _ = program(*args, "--format", "json")
                self.assertEqual(status, 0)
                self.assertEqual(got, json.loads(out))

    def test_plan_rows_carry_the_plan(self):
        plans = dtsim.plan(TP8, top=3, confirm=0)["plans"]
        self.assertLessEqual(len(plans), 3)
        self.assertIn("tp", plans[0]["parallelism"])

    def test_a_serving_plan_is_the_program_s(self):
        serving = os.path.join(SOURCE, "scenarios/plan/llama3-70b-serving-8xh100.yaml")
        got = dtsim.plan(serving, top=3, confirm=0)
        status, out, _ = program("plan", serving, "--top", "3", "--confirm", "0", "--format", "json")
        self.assertEqual(status, 0)
        self.assertEqual(got, json.loads(out))
        self.assertTrue(got["serving"])
        self.assertEqual(len(got["plans"]), 3)


def yaml_file(scenario):
    """A temporary scenario file holding `scenario` (JSON is YAML); the caller removes it."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        json.dump(scenario, f)
    return f.name


SMALL_COMPARE = {"name": "two-gpus", "cluster": {"gpu": "a100-sxm4-80gb", "gpus_per_node": 8},
                 "model": {"preset": "gpt-1.7b"}, "training": {"global_batch": 32},
                 "sweep": {"cluster.gpu": ["a100-sxm4-80gb", "h100-sxm5-80gb"]}}


class ResultObjects(unittest.TestCase):
    def test_fields_are_attributes_and_to_dict_is_the_programs_json(self):
        status, out, _ = program("run", TP8, "--format", "json")
        self.assertEqual(status, 0)
        row = dtsim.run(TP8)
        self.assertIsInstance(row, dtsim.Result)
        self.assertEqual(row.step_time_s, row["step_time_s"])
        self.assertEqual(row.breakdown_s.exposed_comm, json.loads(out)["breakdown_s"]["exposed_comm"])
        self.assertIs(type(row.to_dict()), dict)
        self.assertIs(type(row.to_dict()["memory"]), dict)
        self.assertEqual(row.to_dict(), json.loads(out))
        with self.assertRaises(AttributeError) as caught:
            row.step_time
        self.assertIn("step_time_s", str(caught.exception))

    def test_a_whole_training_run_is_an_object_and_its_sampled_run_repeats_by_seed(self):
        sets = {"training.tokens": 1e11, "reliability.seed": 3}
        status, out, _ = program("run", TP8, "--format", "json", "--set", "training.tokens=1e11",
                                 "--set", "reliability.seed=3")
        self.assertEqual(status, 0)
        row = dtsim.run(TP8, set=sets)
        self.assertEqual(row.training_run.to_dict(), json.loads(out)["training_run"])
        self.assertGreater(row.training_run.wall_days, row.cost.days)
        self.assertAlmostEqual(row.training_run.wall_days * row.training_run.goodput, row.cost.days, places=9)
        self.assertEqual(dtsim.run(TP8, set=sets).training_run.sampled, row.training_run.sampled)
        slowed = dtsim.run(TP8, set={"training.tokens": 1e11, "reliability.stragglers.ranks.3": 1.2})
        self.assertGreater(slowed.stragglers.slowdown, 1.1)
        self.assertAlmostEqual(slowed.stragglers.step_time_s, slowed.step_time_s)
        with self.assertRaises(dtsim.InputError) as caught:
            dtsim.run(TP8, set={"training.tokens": 1e11, "reliability.stragglers.ranks.8": 1.2})
        self.assertIn("reliability.stragglers.ranks: no such rank '8'", str(caught.exception))

    def test_keyword_sections_are_the_dict(self):
        sections = {"cluster": {"gpu": "a100-sxm4-80gb", "gpus_per_node": 4}, "model": {"preset": "gpt-1.7b"},
                    "training": {"global_batch": 8}, "parallelism": {"tp": 4}}
        self.assertEqual(dtsim.run(**sections), dtsim.run(sections))
        self.assertEqual(dtsim.run(**sections), dtsim.run(dtsim.scenario(**sections)))
        with self.assertRaises(TypeError):
            dtsim.run(TP8, model={"preset": "gpt-1.7b"})

    def test_serve_gives_the_programs_serving_rows_and_refuses_a_training_step(self):
        serving = os.path.join(SOURCE, "scenarios/serving/llama2-70b-8xh100.yaml")
        status, out, _ = program("run", serving, "--format", "json")
        self.assertEqual(status, 0)
        self.assertEqual(dtsim.serve(serving), json.loads(out))
        with self.assertRaises(dtsim.InputError) as caught:
            dtsim.serve(TP8)
        self.assertIn("inference", str(caught.exception))

    def test_compare_gives_the_programs_document(self):
        path = yaml_file(SMALL_COMPARE)
        try:
            status, out, _ = program("compare", path, "--confirm", "0", "--format", "json")
        finally:
            os.unlink(path)
        self.assertEqual(status, 0)
        got = dtsim.compare(SMALL_COMPARE, confirm=0)
        self.assertEqual(got, json.loads(out))
        self.assertEqual([c.gpu for c in got.clusters], ["a100-sxm4-80gb", "h100-sxm5-80gb"])

    def test_validate_gives_the_programs_tables(self):
        table = os.path.join(SOURCE, "tests/data/scenarios/validation-small.yaml")
        status, out, _ = program("validate", table, "--format", "json")
        self.assertEqual(status, 0)
        self.assertEqual(dtsim.validate(table), json.loads(out))
        with self.assertRaises(dtsim.InputError):
            dtsim.validate(table, only="no-such-row")

    def test_a_call_prints_nothing(self):
        code = ("import dtsim; dtsim.run({0!r}); dtsim.memory({0!r}); dtsim.plan({0!r}, top=1, confirm=0); "
                "dtsim.catalog()").format(TP8)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr, "")


class Frames(unittest.TestCase):
    def setUp(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("python3-pandas not installed (./dtsim test installs it as root)")

    def test_to_frame_has_the_csv_columns_and_values(self):
        import csv
        import io
        status, out, _ = program("run", SMALL, "--format", "csv")
        self.assertEqual(status, 0)
        table = list(csv.DictReader(io.StringIO(out)))
        frame = dtsim.to_frame(dtsim.run(SMALL))
        self.assertEqual(list(frame.columns), list(table[0].keys()))
        self.assertEqual(len(frame), len(table))
        for i, want in enumerate(table):
            for column in ("step_time_s", "mfu", "breakdown_s.exposed_comm", "memory.margin_bytes"):
                self.assertAlmostEqual(float(frame[column][i]), float(want[column].lstrip("'")), places=9)
            self.assertEqual(frame["name"][i], want["name"])
        self.assertEqual(frame["step_time_s"].dtype.kind, "f")


class Errors(unittest.TestCase):
    def test_bad_input_raises_input_error_with_the_programs_line(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("cluster: {gpu: h100-sxm-80gb}\nmodel: {preset: llama3-8b}\ntraining: {global_batch: 8}\n")
        try:
            status, _, err = program("run", f.name)
            self.assertEqual(status, 2)
            with self.assertRaises(dtsim.InputError) as caught:
                dtsim.run(f.name)
            self.assertEqual("dtsim: error: " + str(caught.exception) + "\n", err)
            self.assertIn("did you mean 'h100-sxm5-80gb'?", str(caught.exception))
        finally:
            os.unlink(f.name)

    def test_a_dict_is_named_in_the_message_and_input_error_is_a_value_error(self):
        with self.assertRaises(ValueError) as caught:
            dtsim.run({"cluster": {"gpu": "h100-sxm5-80gb"}, "model": {"preset": "llama3-8b", "hiden": 4},
                       "training": {"global_batch": 8}})
        self.assertTrue(str(caught.exception).startswith("<dict>:1: model.hiden: unknown key 'hiden'"))
        with self.assertRaises(dtsim.InputError):
            dtsim.collective("a100-sxm4-80gb", gpus=8, op="allreduc")
        with self.assertRaises(TypeError):
            dtsim.run(42)


class Examples(unittest.TestCase):
    def test_the_python_page_shows_the_example_as_it_is(self):
        with open(os.path.join(SOURCE, "docs/python.md")) as f:
            page = f.read()
        with open(os.path.join(SOURCE, "docs/examples/tp_two_clusters.py")) as f:
            example = f.read()
        self.assertIn("```python\n" + example + "```\n", page)

    def test_tp_on_two_clusters_draws_its_chart(self):
        try:
            import matplotlib  # noqa: F401
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("python3-pandas or python3-matplotlib not installed (./dtsim test installs them as root)")
        with tempfile.TemporaryDirectory() as out:
            chart = os.path.join(out, "tp.png")
            p = subprocess.run([sys.executable, os.path.join(SOURCE, "docs/examples/tp_two_clusters.py"), chart],
                               cwd=out, capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            lines = p.stdout.splitlines()
            self.assertTrue(lines[0].startswith("fastest: "), p.stdout)
            self.assertEqual(sum(1 for line in lines if line.split()[:1] in (["nvswitch"], ["pcie"])), 8, p.stdout)
            with open(chart, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main()
