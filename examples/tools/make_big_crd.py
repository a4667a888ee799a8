"""Generate the sample set's oversized CRD (`prometheuses.monitoring.example.io`).

Real monitoring stacks ship CRDs larger than 256 KiB: too big for the
`kubectl.kubernetes.io/last-applied-configuration` annotation of client-side apply (annotations may
hold 256 KiB in all), so only a server-side apply can install them. This script builds such a CRD
deterministically (no randomness, no clock): a valid, structural apiextensions.k8s.io/v1 schema
(Kubernetes 1.20 features only) with many documented properties, larger than 256 KiB both as YAML
and as compact JSON (the annotation's form). Run it after editing and commit its output:

    python examples/tools/make_big_crd.py  # rewrites the file below
    python examples/tools/make_big_crd.py --check  # exit 1 when the committed file is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

Schema = dict[str, Any]

OUTPUT = (
    Path(__file__).resolve().parent.parent
    / "kyma-like/installation/resources/crds/monitoring/prometheuses.monitoring.example.io.yaml"
)
GROUP = "monitoring.example.io"
MIN_BYTES = 256 * 1024 + 1
MAX_BYTES = 400 * 1024

DURATION_PATTERN = (
    r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
)
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?"
    r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

# Sub-systems of the imaginary Prometheus server; each becomes one documented object in `spec`.
SECTIONS = (
    ("alerting", "delivery of firing alerts to the Alertmanager instances of the cluster"),
    ("remoteWrite", "streaming of every ingested sample to long-term remote storage endpoints"),
    ("remoteRead", "federated queries that read historical samples back from remote storage"),
    ("scrape", "discovery of targets and the periodic collection of their metrics endpoints"),
    ("storage", "the local time-series database: block layout, retention and compaction"),
    ("query", "the PromQL engine: concurrency, timeouts, lookback and sample limits"),
    ("rules", "selection and evaluation of recording and alerting rule groups"),
    ("web", "the HTTP server: listen address, route prefix, TLS and page title"),
    ("thanos", "the Thanos sidecar that uploads blocks and serves the StoreAPI"),
    ("tracing", "export of the server's own spans to an OpenTelemetry collector"),
    ("exemplars", "in-memory storage of exemplars that link samples to traces"),
    ("sharding", "horizontal distribution of scrape targets over several server shards"),
    ("serviceMonitors", "selection of ServiceMonitor objects that describe scrape targets"),
    ("podMonitors", "selection of PodMonitor objects that describe scrape targets"),
    ("probes", "selection of Probe objects that describe black-box probing targets"),
    ("scrapeConfigs", "selection of raw ScrapeConfig objects merged into the configuration"),
    ("agent", "the agent mode that only forwards samples and keeps no local queries"),
    ("admission", "validation of rule groups before the server is asked to reload them"),
    ("configReloader", "the side container that watches configuration and triggers reloads"),
    ("logging", "the format and verbosity of the logs written by the server"),
    ("networking", "host networking, DNS policy and the ports the server listens on"),
    ("persistence", "the volume claim template that keeps the database across restarts"),
    ("security", "the pod and container security contexts of the server and its sidecars"),
    ("scheduling", "placement of server pods: affinity, tolerations and spread constraints"),
)


def described(text: str, section: str, purpose: str) -> str:
    return (
        f"{text} This setting belongs to the `{section}` section, which configures {purpose}. "
        "When the field is omitted the operator applies its built-in default, which is chosen to "
        "be safe for a small evaluation cluster; production clusters usually set it explicitly. "
        "Changing it triggers a rolling restart of the server pods unless noted otherwise."
    )


def resources_schema(section: str, purpose: str) -> Schema:
    quantity: Schema = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
    }
    return {
        "description": described(
            "Compute resources (CPU, memory) requested by and limited for the container.",
            section,
            purpose,
        ),
        "type": "object",
        "properties": {
            "limits": {
                "description": described(
                    "Limits describe the maximum amount of compute resources allowed.",
                    section,
                    purpose,
                ),
                "type": "object",
                "additionalProperties": quantity,
            },
            "requests": {
                "description": described(
                    "Requests describe the minimum amount of compute resources required.",
                    section,
                    purpose,
                ),
                "type": "object",
                "additionalProperties": quantity,
            },
        },
    }


def selector_schema(section: str, purpose: str) -> Schema:
    return {
        "description": described(
            "A label selector; an empty selector matches every object, a missing one none.",
            section,
            purpose,
        ),
        "type": "object",
        "properties": {
            "matchLabels": {
                "description": "Labels that must all be present with exactly these values.",
                "type": "object",
                "additionalProperties": {"type": "string"},
            },
            "matchExpressions": {
                "description": "Set-based requirements; all of them must be satisfied.",
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["key", "operator"],
                    "properties": {
                        "key": {"description": "The label key.", "type": "string"},
                        "operator": {
                            "description": "How the key relates to the values.",
                            "type": "string",
                            "enum": ["In", "NotIn", "Exists", "DoesNotExist"],
                        },
                        "values": {
                            "description": "Values for In and NotIn; empty otherwise.",
                            "type": "array",
                            "items": {"type": "string"},
                        },
                    },
                },
            },
        },
    }


def endpoint_list_schema(section: str, purpose: str) -> Schema:
    return {
        "description": described(
            "Named endpoints this section talks to; the name is the list's merge key.",
            section,
            purpose,
        ),
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {
            "type": "object",
            "required": ["name", "url"],
            "properties": {
                "name": {
                    "description": described("Unique name of the endpoint.", section, purpose),
                    "type": "string",
                    "maxLength": 63,
                },
                "url": {
                    "description": described(
                        "URL of the endpoint, including scheme and path.", section, purpose
                    ),
                    "type": "string",
                },
                "timeout": {
                    "description": described(
                        "Timeout of one request to the endpoint.", section, purpose
                    ),
                    "type": "string",
                    "pattern": DURATION_PATTERN,
                },
                "headers": {
                    "description": described(
                        "Extra HTTP headers sent with every request.", section, purpose
                    ),
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                },
                "bearerTokenSecret": {
                    "description": described(
                        "Key of a Secret in the object's namespace holding a bearer token.",
                        section,
                        purpose,
                    ),
                    "type": "object",
                    "required": ["key"],
                    "properties": {
                        "name": {"description": "Name of the Secret.", "type": "string"},
                        "key": {"description": "Key inside the Secret.", "type": "string"},
                        "optional": {
                            "description": "Whether the Secret may be missing.",
                            "type": "boolean",
                        },
                    },
                },
            },
        },
    }


def section_schema(section: str, purpose: str) -> Schema:
    def field(text: str, schema: Schema) -> Schema:
        return {"description": described(text, section, purpose), **schema}

    return {
        "description": described(
            f"Settings of the server's {section} sub-system.", section, purpose
        ),
        "type": "object",
        "properties": {
            "enabled": field(
                "Whether this sub-system runs at all.", {"type": "boolean", "default": True}
            ),
            "interval": field(
                "How often the sub-system does its periodic work.",
                {"type": "string", "pattern": DURATION_PATTERN, "default": "30s"},
            ),
            "timeout": field(
                "How long one unit of work may take before it is abandoned.",
                {"type": "string", "pattern": DURATION_PATTERN},
            ),
            "concurrency": field(
                "How many units of work run at the same time.",
                {"type": "integer", "format": "int32", "minimum": 1, "maximum": 1024},
            ),
            "logLevel": field(
                "Verbosity of the sub-system's own log lines.",
                {"type": "string", "enum": ["debug", "info", "warn", "error"]},
            ),
            "port": field(
                "A port number or a named port of the server container.",
                {"x-kubernetes-int-or-string": True},
            ),
            "labels": field(
                "Labels added to every object this sub-system creates.",
                {"type": "object", "additionalProperties": {"type": "string"}},
            ),
            "extraArgs": field(
                "Additional command-line flags, each given once.",
                {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set",
                },
            ),
            "selector": selector_schema(section, purpose),
            "endpoints": endpoint_list_schema(section, purpose),
            "resources": resources_schema(section, purpose),
        },
    }


def spec_schema() -> Schema:
    properties: Schema = {
        "replicas": {
            "description": "Number of server replicas; each scrapes every target.",
            "type": "integer",
            "format": "int32",
            "minimum": 0,
        },
        "version": {"description": "Version of the server image.", "type": "string"},
        "image": {"description": "Full image reference; overrides version.", "type": "string"},
        "retention": {
            "description": "How long samples are kept in the local database.",
            "type": "string",
            "pattern": DURATION_PATTERN,
            "default": "24h",
        },
        "serviceAccountName": {
            "description": "ServiceAccount the server pods run as.",
            "type": "string",
        },
        "paused": {
            "description": "When true the operator stops reconciling this object.",
            "type": "boolean",
        },
    }
    for section, purpose in SECTIONS:
        properties[section] = section_schema(section, purpose)
    return {
        "description": "Desired state of the Prometheus server.",
        "type": "object",
        "properties": properties,
    }


def status_schema() -> Schema:
    return {
        "description": "Observed state of the Prometheus server, written by the operator.",
        "type": "object",
        "properties": {
            "availableReplicas": {"type": "integer", "format": "int32"},
            "replicas": {"type": "integer", "format": "int32"},
            "paused": {"type": "boolean"},
            "conditions": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
                "items": {
                    "type": "object",
                    "required": ["type", "status"],
                    "properties": {
                        "type": {"type": "string"},
                        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                        "reason": {"type": "string"},
                        "message": {"type": "string"},
                        "lastTransitionTime": {"type": "string", "format": "date-time"},
                    },
                },
            },
        },
    }


def build_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"prometheuses.{GROUP}",
            "labels": {
                "app.kubernetes.io/name": "monitoring",
                "app.kubernetes.io/part-of": "kyma",
            },
            "annotations": {
                "example.io/generated-by": "examples/tools/make_big_crd.py",
            },
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": "Prometheus",
                "listKind": "PrometheusList",
                "plural": "prometheuses",
                "singular": "prometheus",
                "shortNames": ["prom"],
                "categories": ["kyma-monitoring"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                        },
                    },
                    "additionalPrinterColumns": [
                        {"name": "Version", "type": "string", "jsonPath": ".spec.version"},
                        {"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas"},
                        {
                            "name": "Available",
                            "type": "integer",
                            "jsonPath": ".status.availableReplicas",
                        },
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "description": "Prometheus describes one monitoring server.",
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec_schema(),
                                "status": status_schema(),
                            },
                        }
                    },
                }
            ],
        },
    }


def render() -> str:
    crd = build_crd()
    header = "# Generated by examples/tools/make_big_crd.py; do not edit by hand.\n"
    # One line per description (no wrapping) keeps the YAML close to the JSON size.
    body = yaml.safe_dump(crd, sort_keys=False, default_flow_style=False, width=1_000_000)
    text = header + body
    sizes = {
        "YAML": len(text.encode()),
        "compact JSON": len(json.dumps(crd, separators=(",", ":")).encode()),
    }
    for form, size in sizes.items():
        if not MIN_BYTES <= size <= MAX_BYTES:
            raise SystemExit(
                f"generated CRD is {size} bytes as {form}; want {MIN_BYTES}..{MAX_BYTES}"
            )
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="only compare with the file")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale; run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"wrote {args.output} ({len(text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
