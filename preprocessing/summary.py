"""Preprocess's summary: each host's part (``summary-<host>.json``), the merge of every part, and reading it back.

Hosts cannot see each other's output, so each writes its own part; the next step (or a single host itself) merges
them: :func:`load_summary` reads ``summary.json`` or merges the parts (:func:`merge_summaries`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from containerlib.names import SPLIT_CODES, SPLITS, SUMMARY_FORMAT

if TYPE_CHECKING:  # the job's types: reading a summary back (llpipe's own process) imports no pandas through them
    from containerlib.hosts import Host
    from preprocessing.labels import LabelSpec
    from preprocessing.layout import Schema
    from preprocessing.settings import Settings
    from preprocessing.stats import SplitStats


def build_summary(
    settings: Settings,
    host: Host,
    schema: Schema,
    labels: LabelSpec,
    stats: dict[str, SplitStats],
    input_files: list[str],
    rows_read: int,
    rows_dropped: int,
    fractions: tuple[float, float, float],
) -> dict[str, Any]:
    """This host's summary part."""
    classification = labels.predictor_type != "regressor"
    return {
        "format": SUMMARY_FORMAT,
        "host": host.name,
        "hosts": list(host.hosts),
        "predictor_type": labels.predictor_type,
        "label_column": schema.label_column,
        "id_column": schema.id_column,
        "feature_dim": schema.feature_dim,
        "feature_names": schema.feature_names,
        "categorical": {
            "columns": list(schema.categorical_columns),
            "hash_buckets": schema.hash_buckets,
            "hash": "blake2b(digest_size=8, little-endian) of 'column=value' mod hash_buckets",
            "encodings": {encoding.column: encoding.to_json() for encoding in schema.layout.columns},
        },
        "label_values": list(labels.values) if labels.values else None,
        "label_mapping": _label_mapping(labels, stats) if classification else None,
        "num_classes": _num_classes(labels, stats) if labels.predictor_type == "multiclass_classifier" else None,
        "missing_policy": settings.missing,
        "seed": settings.seed,
        "data_version": settings.data_version or None,
        "fractions": {split: fractions[code] for split, code in SPLIT_CODES.items()},
        "rows": {split: stats[split].rows for split in SPLITS},
        "rows_read": rows_read,
        "rows_dropped": rows_dropped,
        "label_counts": (
            {split: {str(k): v for k, v in sorted(stats[split].label_counts.items())} for split in SPLITS}
            if classification
            else None
        ),
        "label_stats": {split: _label_stats(stats[split]) for split in SPLITS},
        "files": {split: stats[split].files for split in SPLITS},
        "input_files": input_files,
    }


def _label_stats(stats: SplitStats) -> dict[str, float | int | None]:
    return {
        "count": stats.rows,
        "sum": stats.label_sum,
        "sum_sq": stats.label_sum_sq,
        "min": stats.label_min if stats.rows else None,
        "max": stats.label_max if stats.rows else None,
    }


def _num_classes(labels: LabelSpec, stats: dict[str, SplitStats]) -> int:
    if labels.values:
        return len(labels.values)
    if labels.num_classes:
        return labels.num_classes
    seen = [label for split in SPLITS for label in stats[split].label_counts]
    return max(seen) + 1 if seen else 0


def _label_mapping(labels: LabelSpec, stats: dict[str, SplitStats]) -> dict[str, int]:
    """Original label text -> index; identity when labels are already numeric."""
    if labels.values:
        return labels.mapping() or {}
    count = 2 if labels.predictor_type == "binary_classifier" else _num_classes(labels, stats)
    return {str(index): index for index in range(count)}


_MUST_AGREE = (
    "format",
    "hosts",
    "predictor_type",
    "label_column",
    "id_column",
    "feature_dim",
    "feature_names",
    "categorical",
    "label_values",
    "missing_policy",
    "seed",
    "data_version",
    "fractions",
)


def merge_summaries(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One summary from every host's part.

    Rule: the parts must come from exactly the hosts they name, once each, and agree on everything that defines the
    data layout (feature_dim, feature names, categorical hashing, predictor type, label values, seed, fractions,
    missing policy); no input file may appear in two parts (that would duplicate rows, e.g. FullyReplicated input);
    a split with a positive fraction must have rows somewhere.
    Rows, label counts and label moments are summed, min/max combined, file lists concatenated in sorted order;
    multiclass num_classes without declared label values is the largest over the parts.
    """
    if not parts:
        raise ValueError("no summary parts to merge")
    first = parts[0]
    for part in parts[1:]:
        for key in _MUST_AGREE:
            if part.get(key) != first.get(key):
                raise ValueError(
                    f"summary parts disagree on {key}: {first.get('host')} has {first.get(key)!r}, "
                    f"{part.get('host')} has {part.get(key)!r}"
                )
    hosts = [part["host"] for part in parts]
    if sorted(hosts) != sorted(first["hosts"]):
        missing = sorted(set(first["hosts"]) - set(hosts))
        extra = sorted({h for h in hosts if hosts.count(h) > 1} | (set(hosts) - set(first["hosts"])))
        raise ValueError(f"summary parts cover hosts {sorted(hosts)}; missing {missing}, duplicated or unknown {extra}")
    seen_by: dict[str, str] = {}
    for part in parts:
        for name in part["input_files"]:
            if name in seen_by:
                raise ValueError(
                    f"input file {name} was processed by both {seen_by[name]} and {part['host']}: "
                    "each input object must reach one host (use ShardedByS3Key)"
                )
            seen_by[name] = part["host"]

    merged = {key: first[key] for key in _MUST_AGREE}
    merged["parts"] = sorted(hosts)
    merged["rows"] = {split: sum(part["rows"][split] for part in parts) for split in SPLITS}
    empty = [split for split in SPLITS if first["fractions"][split] > 0 and merged["rows"][split] == 0]
    if empty:
        raise ValueError(f"the {' and '.join(empty)} split(s) are empty over all hosts despite a positive fraction")
    merged["rows_read"] = sum(part["rows_read"] for part in parts)
    merged["rows_dropped"] = sum(part["rows_dropped"] for part in parts)
    merged["files"] = {split: sorted(name for part in parts for name in part["files"][split]) for split in SPLITS}
    merged["input_files"] = sorted(seen_by)
    merged["label_stats"] = {
        split: _merge_label_stats([part["label_stats"][split] for part in parts]) for split in SPLITS
    }
    if first["label_counts"] is None:
        merged["label_counts"] = None
    else:
        merged["label_counts"] = {}
        for split in SPLITS:
            counts: dict[int, int] = {}
            for part in parts:
                for label, count in part["label_counts"][split].items():
                    counts[int(label)] = counts.get(int(label), 0) + count
            merged["label_counts"][split] = {str(label): counts[label] for label in sorted(counts)}
    merged["num_classes"] = None
    if first["predictor_type"] == "multiclass_classifier":
        merged["num_classes"] = max(part["num_classes"] for part in parts)
    merged["label_mapping"] = first["label_mapping"]
    if first["predictor_type"] == "multiclass_classifier" and not first["label_values"]:
        merged["label_mapping"] = {str(index): index for index in range(merged["num_classes"])}
    merged["categorical_stats"] = _merge_category_stats([part.get("categorical_stats") or {} for part in parts])
    for key in ("unseen_values", "imputed_values"):  # rows per column, summed over the hosts
        totals: dict[str, int] = {}
        for part in parts:
            for column, count in (part.get(key) or {}).items():
                totals[column] = totals.get(column, 0) + int(count)
        merged[key] = dict(sorted(totals.items()))
    return merged


def _merge_category_stats(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Per categorical column: buckets used over all hosts (union of the bitmaps); distinct values and values in
    shared buckets as the largest count of one host (a lower bound: hosts do not share their value sets)."""
    merged: dict[str, Any] = {}
    for column in sorted({name for part in parts for name in part}):
        seen = [part[column] for part in parts if column in part]
        bitmaps = [np.frombuffer(bytes.fromhex(item["used_buckets_bitmap"]), np.uint8) for item in seen]
        bitmap = np.bitwise_or.reduce(bitmaps)
        merged[column] = {
            "distinct_values": max(item["distinct_values"] for item in seen),
            "distinct_values_capped": any(item["distinct_values_capped"] for item in seen),
            "buckets_used": int(np.unpackbits(bitmap).sum()),
            "values_in_shared_buckets": max(item["values_in_shared_buckets"] for item in seen),
            "used_buckets_bitmap": bitmap.tobytes().hex(),
        }
    return merged


def _merge_label_stats(parts: list[dict[str, Any]]) -> dict[str, Any]:
    count = sum(part["count"] for part in parts)
    total = sum(part["sum"] for part in parts)
    total_sq = sum(part["sum_sq"] for part in parts)
    mins = [part["min"] for part in parts if part["min"] is not None]
    maxes = [part["max"] for part in parts if part["max"] is not None]
    mean = total / count if count else None
    variance = max(total_sq / count - mean * mean, 0.0) if count else None
    return {
        "count": count,
        "sum": total,
        "sum_sq": total_sq,
        "min": min(mins) if mins else None,
        "max": max(maxes) if maxes else None,
        "mean": mean,
        "std": math.sqrt(variance) if variance is not None else None,
    }


def load_summary(summary_dir: Path) -> dict[str, Any]:
    """The merged summary of a Preprocess output: ``summary.json`` if present, else the merge of every part."""
    merged = summary_dir / "summary.json"
    if merged.exists():
        return json.loads(merged.read_text())
    parts = sorted(summary_dir.glob("summary-*.json"))
    if not parts:
        raise FileNotFoundError(f"no summary.json or summary-<host>.json under {summary_dir}")
    return merge_summaries([json.loads(path.read_text()) for path in parts])
