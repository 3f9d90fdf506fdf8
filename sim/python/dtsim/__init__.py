"""dtsim from Python: a discrete-event simulator of distributed deep-learning training.

Each function takes a scenario (a dict of the YAML file's sections, keyword arguments naming those sections, or a
path to a YAML file), calls the library's driver for it (no program is run, nothing is printed) and returns result
objects: the fields of `./dtsim COMMAND --format json`, as attributes (units in their names: `step_time_s`,
`memory.total_bytes`) and as keys, with `.to_dict()` for plain Python data. A scenario with sweep axes gives a list
of them. Bad input raises dtsim.InputError (a ValueError) with the program's one-line message.

    import dtsim
    row = dtsim.run("scenarios/models/gpt-22b-tp8.yaml")
    row.step_time_s, row.mfu, row.breakdown_s.exposed_comm
    rows = dtsim.run(cluster={"gpu": "h100-sxm5-80gb"}, model={"preset": "llama3-8b"},
                     training={"global_batch": 64}, sweep={"parallelism.tp": [1, 2, 4, 8]})
    dtsim.to_frame(rows)   # a pandas DataFrame with the columns of result.csv
"""

import io
import json
import os
import tempfile

from . import _dtsim

InputError = _dtsim.InputError

__all__ = ["InputError", "Result", "scenario", "run", "serve", "sweep", "memory", "plan", "compare", "collective",
           "catalog", "validate", "to_frame"]


class Result(dict):
    """A result object: a dict whose keys are also attributes (`r.step_time_s` is `r["step_time_s"]`); nested
    objects are Results too. `to_dict()` gives plain dicts and lists, as `json.loads` of the program's output."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r} (fields: {', '.join(self)})") from None

    def __dir__(self):
        return list(super().__dir__()) + [k for k in self if k.isidentifier()]

    def to_dict(self):
        return _plain(self)


def _wrap(value):
    if isinstance(value, dict):
        return Result({k: _wrap(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def scenario(**sections):
    """A scenario as a dict from its sections: scenario(cluster={...}, model={...}, training={...}, sweep={...})."""
    return {k: v for k, v in sections.items() if v is not None}


def _source(given, sections):
    """(path, text) for the compiled half: a path as given, a dict (or keyword sections) as JSON, which YAML reads."""
    if given is not None and sections:
        raise TypeError("a scenario is given both as an argument and as keyword sections: " + ", ".join(sections))
    if given is None and sections:
        given = scenario(**sections)
    if given is None:
        return None, None
    if isinstance(given, (str, os.PathLike)):
        return os.fspath(given), None
    if isinstance(given, dict):
        return None, json.dumps(_plain(given))
    raise TypeError(f"scenario: a dict or a path to a YAML file, not {type(given).__name__}")


def _sets(overrides):
    """--set's "key=value" strings, from a dict {"parallelism.tp": 4} or a list of such strings."""
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        return [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in overrides.items()]
    return [str(s) for s in overrides]


def _one_or_list(rows, swept):
    rows = _wrap(rows)
    return rows if swept or len(rows) != 1 else rows[0]


def run(scenario=None, set=None, **sections):
    """Simulate one step of each point of `scenario` (None and no sections: the embedded default scenario), with
    `set`'s keys overridden: a Result (DESIGN.md's result object), or a list of them for a sweep or several
    documents."""
    path, text = _source(scenario, sections)
    rows, swept = _dtsim.run(path, text, _sets(set), False)
    return _one_or_list(rows, swept)


def serve(scenario=None, set=None, **sections):
    """Serve a batch or a stream of requests (`inference:`): as run(), for scenarios with an inference section."""
    path, text = _source(scenario, sections)
    rows, swept = _dtsim.run(path, text, _sets(set), True)
    return _one_or_list(rows, swept)


def sweep(scenario=None, set=None, jobs=1, out=None, resume=False, **sections):
    """Every point of a scenario with sweep axes, as `./dtsim sweep` runs them (`jobs` worker processes): a list of
    Results in sweep order, a point that cannot run an error row ({"name", "point", "error"}) rather than an
    exception. The rows are also left in `out`/results.jsonl and results.csv when `out` is given; `resume` keeps
    the rows already there and runs the rest. Ctrl-C stops the workers and raises KeyboardInterrupt."""
    path, text = _source(scenario, sections)
    with tempfile.TemporaryDirectory(prefix="dtsim-sweep-") as scratch:
        where = os.fspath(out) if out is not None else scratch
        _dtsim.sweep(path, text, _sets(set), jobs, where, bool(resume))
        with open(os.path.join(where, "results.jsonl")) as rows:
            return [_wrap(json.loads(line)) for line in rows if line.strip()]


def memory(scenario=None, set=None, **sections):
    """The memory plan per GPU (`./dtsim memory --format json`): a Result, or a list of them."""
    path, text = _source(scenario, sections)
    rows = _dtsim.memory(path, text, _sets(set))
    return _one_or_list(rows, False)


def plan(scenario=None, top=5, confirm=5, objective="time", set=None, **sections):
    """The best `top` parallel plans for the scenario's job (`./dtsim plan --format json`): the first `confirm` of
    the analytic ranking run on the SimGrid engine, ranked by `objective` (time, cost or energy)."""
    path, text = _source(scenario, sections)
    return _one_or_list(_dtsim.plan(path, text, _sets(set), top, confirm, objective), False)


def compare(scenario=None, confirm=5, objective="time", set=None, **sections):
    """Each cluster of the scenario's sweep with its best plan (`./dtsim compare --format json`): a Result with
    `clusters`, one row each (time, cost and energy to train, capital, `pareto`)."""
    path, text = _source(scenario, sections)
    return _wrap(_dtsim.compare(path, text, _sets(set), confirm, objective))


def collective(gpu, gpus=8, op="allreduce", algo="auto", min="8", max="8G", step_factor=2.0, intra="nvswitch",
               intra_link="", nodes=1, inter="none", inter_link="", nics_per_node=0, routing="", max_channels=0,
               datatype="float", redop="sum", root=0):
    """One collective timed at sizes from `min` to `max` (bytes, or a string with a K, M or G suffix): a Result
    with the run's header and `rows`, each with size_bytes, count, type, redop, root, time_us, algbw_GBps,
    busbw_GBps, algorithm and protocol (`./dtsim collective --format json`)."""
    return _wrap(_dtsim.collective(gpu, gpus, intra, intra_link, nodes, inter, inter_link, nics_per_node, routing,
                                   max_channels, op, algo, str(min), str(max), float(step_factor), datatype, redop,
                                   root))


def validate(files=None, set=None, only=None):
    """Published measurements against dtsim (`./dtsim validate --format json`): `files` (paths; None: the twelve
    embedded tables, about 90 s), `set` overriding keys on every row, `only` some rows by name. A Result with each
    table's rows (published beside dtsim's figure, the error) and its mean and max."""
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    if isinstance(only, str):
        only = [only]
    return _wrap(_dtsim.validate([os.fspath(f) for f in files or []], _sets(set), list(only or [])))


def catalog():
    """The GPUs, links and model presets dtsim knows (`./dtsim catalog --format json`)."""
    return _wrap(_dtsim.catalog())


def to_frame(rows):
    """Run or sweep results (a Result or a list of them) as a pandas DataFrame with the columns of result.csv and
    results.csv, in their order, one row each (error rows keep their name, point and error). Values keep their
    types: numbers are numbers (the CSV quotes a leading minus sign for spreadsheets; the frame does not)."""
    import csv
    import pandas as pd

    if isinstance(rows, dict):
        rows = [rows]
    rows = _plain(list(rows))
    text = _dtsim.run_csv(json.dumps(rows))
    if not text:
        return pd.DataFrame()
    columns = next(csv.reader(io.StringIO(text)))
    return pd.json_normalize(rows, sep=".").reindex(columns=columns)
