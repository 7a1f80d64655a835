#!/usr/bin/env python3
"""Writes the seed corpus fuzz/corpus/<target>/ from protocol/vectors and a few hand-written
inputs (run from the repository root: python3 fuzz/seeds.py). The seeds are committed; a fuzz run
adds what it finds to a scratch copy (scripts/fuzz.sh), never to these directories."""

import hashlib
import json
import os
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def vectors(name):
    with open(os.path.join(ROOT, "protocol", "vectors", name), encoding="utf-8") as f:
        return json.load(f)["cases"]


def write(target, seeds):
    directory = os.path.join(CORPUS, target)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for text in dict.fromkeys(seeds):  # unique, in order
        data = text.encode("utf-8")
        name = hashlib.sha1(data).hexdigest()[:16]
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    print(f"{target}: {len(dict.fromkeys(seeds))} seeds")


def lines(configmap):
    return "".join(f"{k}={v}\n" for k, v in configmap.items())


def configmap_seeds():
    cms = [c["configmap"] for c in vectors("configmaps.json")]
    seeds = [lines(cm) for cm in cms]
    decisions = vectors("decisions.json")
    seeds += [lines(c["configmap"]) for c in decisions[::40]]
    # Pairs (the state a gate holds, the state it is offered next).
    valid = [c["configmap"] for c in vectors("configmaps.json") if "state" in c["expect"]]
    seeds += [lines(a) + "---\n" + lines(b) for a, b in zip(valid, valid[1:])]
    seeds += [c["line"] for c in vectors("gate-reports.json")]
    return seeds


def sidecar_seeds():
    return [
        "/v1/state",
        "/v1/state?since=18c2f1a2b3c4d5e6-2a.7&wait=30000ms",
        "/v1/state?wait=30s",
        "/v1/state?wait=250",
        "/v1/state?since=a%2Eb%20c+d&other=1",
        "/v1/state?wait=1.5s",
        "/v1/state?wait=1s&wait=2s",
        "/v1/decide?color=BLUE&ts=123",
        "/v1/decide?ts=-9223372036854775808",
        "/v1/decide?color=GREEN&ts=9223372036854775807",
        "/v1/decide?color=RED&ts=1",
        "/v1/decide?ts=1e3",
        "http://127.0.0.1:8787/v1/decide?ts=5#frag",
        "/metrics",
    ]


def jni_seeds():
    cms = [c["configmap"] for c in vectors("configmaps.json")]
    seeds = []
    for i, cm in enumerate(cms[::4]):
        color = ["BLUE", "GREEN", "RED", ""][i % 4]
        times = [-9223372036854775808, 0, 999, 1000, 1001, 1700000000000, 9223372036854775807]
        numbers = f"{i} {100 * i} {len(times) - i % 3} {len(times) + i % 2}"
        seeds.append("\n".join([color, json.dumps(cm), numbers] + [str(t) for t in times]) + "\n")
    seeds.append('GREEN\n{"epoch": 3}\n0 0 1 1\n5\n')
    seeds.append('BLUE\n[1, 2]\n-1 -1 -5 3\n1\n2\n')
    return seeds


SPEC = {
    "template": {
        "spec": {
            "image": "example.com/orders:v2",
            "flinkVersion": "v1_20",
            "flinkConfiguration": {"state.checkpoints.num-retained": "2"},
            "job": {
                "jarURI": "local:///opt/flink/usrlib/orders.jar",
                "parallelism": 4,
                "upgradeMode": "savepoint",
            },
            "jobManager": {"resource": {"memory": "2048m", "cpu": 1}},
            "taskManager": {"resource": {"memory": "4096m", "cpu": 2}},
        }
    },
    "coordination": {
        "toggle": {"offset": "1m"},
        "deploymentDeletionDelay": "0s",
        "abortGracePeriod": "10m",
        "restoreFrom": "savepoint",
        "promotion": "auto",
        "health": {"minCheckpoints": 1, "maxLag": "30s"},
        "savepoint": {"maxAttempts": 3, "backoff": "10s", "timeout": "10m"},
        "onDelete": "delete",
    },
}

SPEC_YAML = """template:
  spec:
    image: example.com/orders:v2
    flinkVersion: v1_20
    mode: native
    job: {jarURI: local:///opt/flink/usrlib/orders.jar, parallelism: 4, upgradeMode: last-state, state: running}
    jobManager: {resource: {memory: 2048m, cpu: 1}, replicas: 1}
    taskManager:
      resource: {memory: 4096m, cpu: 2}
      podTemplate:
        spec:
          containers:
          - name: flink-main-container
            ports: [{containerPort: 9249, name: metrics}]
coordination:
  toggle: {value: 1700000000000}
  restoreFrom: lastCheckpoint
  promotion: manual
  savepoint: {maxAttempts: 7, backoff: 1s, timeout: 1h}
  onDelete: savepointThenDelete
"""


def spec_seeds():
    def variant(edit, name=None):
        spec = json.loads(json.dumps(SPEC))
        edit(spec)
        text = json.dumps(spec, indent=1)
        return f"#name: {name}\n{text}" if name else text

    c = lambda key, value: lambda s: s["coordination"].__setitem__(key, value)
    j = lambda key, value: lambda s: s["template"]["spec"]["job"].__setitem__(key, value)
    t = lambda key, value: lambda s: s["template"]["spec"].__setitem__(key, value)
    return [
        json.dumps(SPEC),
        SPEC_YAML,
        variant(lambda s: None, "orders-with-a-name-that-is-far-too-long0"),
        variant(lambda s: None, "orders.v2"),
        variant(j("parallelism", 0)),
        variant(j("upgradeMode", "stateless")),
        variant(j("state", "paused")),
        variant(t("mode", "cluster")),
        variant(t("taskManager", {"replicas": "two", "podTemplate": {"spec": {"volumes": {}}}})),
        variant(c("abortGracePeriod", "-5m")),
        variant(c("deploymentDeletionDelay", "10000h")),
        variant(c("toggle", {"offset": "1m", "value": 5})),
        variant(c("toggle", {"value": -9223372036854775808})),
        variant(c("savepoint", {"maxAttempts": 4294967295, "backoff": "168h", "timeout": "PT10M"})),
        variant(c("restoreFrom", "stateless")),
    ]


if __name__ == "__main__":
    write("configmap", configmap_seeds())
    write("sidecar_request", sidecar_seeds())
    write("jni_inputs", jni_seeds())
    write("spec", spec_seeds())
