#!/usr/bin/env python3
"""Load zonealloc `results.json` files into pandas and print each one's headline table.

    python3 docs/results_pandas.py lab-report/latest/results.json replay-report/results.json

A lab run (`zonealloc lab`) prints its verdicts (one row per seed claim), then each
experiment's paired change: per metric, the median over repetitions of each variant's value
divided by the baseline's value *of the same repetition* (samples of one `repetition` ran on
the same seed, their `seed` column; the script refuses samples that do not pair). A trace
replay (`zonealloc trace replay`) prints one row per metric, with its unit, and one column
per variant. The layout is docs/results-schema.md; `.ci/run` runs this
on the lab run and a replay it makes, where pandas is installed.
"""

import json
import sys

import pandas as pd

SCHEMA_VERSION = 1


def load(path):
    """The document at `path`, refused unless it is the schema version this script reads."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    version = doc.get("schema_version", 0)
    if version != SCHEMA_VERSION:
        sys.exit(f"{path}: schema_version {version}; this script reads {SCHEMA_VERSION}")
    return doc


def samples(doc):
    """Every sample of every experiment, one row each (its unit joined, its pairing explicit)."""
    rows = [dict(experiment=e["name"], baseline=e["baseline"], **s)
            for e in doc["experiments"] for s in e["samples"]]
    cols = ["experiment", "baseline", "variant", "metric", "repetition", "seed", "value", "unit"]
    df = pd.DataFrame(rows, columns=cols)
    # One repetition of one metric ran on one seed under every variant: that is the pairing.
    seeds = df.groupby(["experiment", "metric", "repetition"], dropna=False)["seed"]
    unpaired = seeds.nunique(dropna=False) > 1
    if unpaired.any():
        sys.exit(f"samples of one repetition on different seeds: {list(unpaired[unpaired].index)}")
    return df


def paired_change(df, experiment, baseline):
    """Metric x variant: the median over repetitions of value / the baseline's, pair by pair."""
    block = df[df["experiment"] == experiment]
    wide = block.pivot_table(index=["metric", "unit", "repetition"], columns="variant",
                             values="value", sort=False)
    ratios = wide.div(wide[baseline], axis=0).drop(columns=baseline)
    return ratios.groupby(level=["metric", "unit"], sort=False).median()


def headline(path):
    doc = load(path)
    df = samples(doc)
    print(f"== {path}: {doc['command']}")
    if doc["verdicts"]:
        verdicts = pd.DataFrame(doc["verdicts"])
        print(verdicts[["seed", "experiment", "verdict", "lab_figure"]].to_string(index=False))
        for e in doc["experiments"]:
            print(f"\n-- {e['name']}: median ratio to {e['baseline']}, repetition by repetition")
            table = paired_change(df, e["name"], e["baseline"])
            print(table.to_string(float_format="{:.3f}".format))
    else:
        table = df.pivot_table(index=["metric", "unit"], columns="variant", values="value",
                               sort=False)
        print(table.to_string(float_format="{:.2f}".format))
    print()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    pd.set_option("display.width", 200)
    pd.set_option("display.max_colwidth", 70)
    for p in sys.argv[1:]:
        headline(p)
