"""dtsim from Python: a discrete-event simulator of distributed deep-learning training.

Each function takes a scenario as a dict (the YAML file's structure) or a path to a YAML file, runs the same
command as the program, and returns plain Python data: the JSON `./dtsim COMMAND --format json` prints (a dict,
or a list of dicts for a scenario with sweep axes). Bad input raises dtsim.InputError (a ValueError) with the
program's one-line message.

    import dtsim
    row = dtsim.run("scenarios/models/gpt-22b-tp8.yaml")
    row["step_time_s"], row["mfu"]
    rows = dtsim.run({"cluster": {"gpu": "h100-sxm5-80gb"}, "model": {"preset": "llama3-8b"},
                      "training": {"global_batch": 64}, "sweep": {"parallelism.tp": [1, 2, 4, 8]}})
"""

import json
import os
import tempfile

from . import _dtsim

InputError = _dtsim.InputError

__all__ = ["InputError", "run", "sweep", "memory", "plan", "collective", "catalog"]


def _scenario(scenario):
    """(path, text) for the compiled half: a path as given, a dict as JSON (which YAML reads)."""
    if scenario is None:
        return None, None
    if isinstance(scenario, (str, os.PathLike)):
        return os.fspath(scenario), None
    if isinstance(scenario, dict):
        return None, json.dumps(scenario)
    raise TypeError(f"scenario: a dict or a path to a YAML file, not {type(scenario).__name__}")


def _sets(overrides):
    """--set's "key=value" strings, from a dict {"parallelism.tp": 4} or a list of such strings."""
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        return [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in overrides.items()]
    return [str(s) for s in overrides]


def run(scenario=None, set=None):
    """Simulate one step of each point of `scenario` (None: the embedded default scenario), with `set`'s keys
    overridden. The result object of `./dtsim run --format json`: a dict, or a list for a sweep."""
    path, text = _scenario(scenario)
    return json.loads(_dtsim.run(path, text, _sets(set)))


def sweep(scenario, set=None, jobs=1, out=None, resume=False):
    """Every point of a scenario with sweep axes, as `./dtsim sweep` runs them (`jobs` worker processes): a list of
    dicts in sweep order, a point that cannot run an error row ({"name", "point", "error"}) rather than an exception.
    The rows are also left in `out`/results.jsonl and results.csv when `out` is given; `resume` keeps the rows
    already there and runs the rest. Ctrl-C stops the workers and raises KeyboardInterrupt."""
    path, text = _scenario(scenario)
    with tempfile.TemporaryDirectory(prefix="dtsim-sweep-") as scratch:
        where = os.fspath(out) if out is not None else scratch
        _dtsim.sweep(path, text, _sets(set), jobs, where, bool(resume))
        with open(os.path.join(where, "results.jsonl")) as rows:
            return [json.loads(line) for line in rows if line.strip()]


def memory(scenario, set=None):
    """The memory plan per GPU (`./dtsim memory --format json`)."""
    path, text = _scenario(scenario)
    return json.loads(_dtsim.memory(path, text, _sets(set)))


def plan(scenario, top=5, confirm=5, objective="time", set=None):
    """The best `top` parallel plans for the scenario's job (`./dtsim plan --format json`): the first `confirm` of
    the analytic ranking run on the SimGrid engine, ranked by `objective` (time, cost or energy)."""
    path, text = _scenario(scenario)
    return json.loads(_dtsim.plan(path, text, _sets(set), top, confirm, objective))


def collective(gpu, gpus=8, op="allreduce", algo="auto", min="8", max="8G", step_factor=2.0, intra="nvswitch",
               intra_link="", nodes=1, inter="none", inter_link="", nics_per_node=0, routing="", max_channels=0,
               datatype="float", redop="sum", root=0):
    """One collective timed at sizes from `min` to `max` (bytes, or a string with a K, M or G suffix): the rows
    of `./dtsim collective --format json`, each with size_bytes, count, type, redop, root, time_us, algbw_GBps,
    busbw_GBps, algorithm and protocol."""
    return json.loads(_dtsim.collective(gpu, gpus, intra, intra_link, nodes, inter, inter_link, nics_per_node, routing,
                                        max_channels, op, algo, str(min), str(max), float(step_factor), datatype,
                                        redop, root))


def catalog():
    """The GPUs, links and model presets dtsim knows (`./dtsim catalog --format json`)."""
    return json.loads(_dtsim.catalog())
