"""Scan reports as text, JSON or SARIF 2.1.0. None of them carries a matched value, and the
text one shows control characters from paths and lines as escapes."""

from __future__ import annotations

import json
from typing import Any, Final

from hookgate.boundary.policy import Policy
from hookgate.boundary.scanner import ScanReport, visible

__all__ = ["FORMATS", "render"]

FORMATS: Final = ("text", "json", "sarif")
_SARIF_LEVEL: Final = {"info": "note", "low": "note", "medium": "warning", "high": "error",
                       "critical": "error"}


def render(report: ScanReport, policy: Policy, fmt: str, fail_on: str) -> str:
    if fmt == "json":
        return _json(report, policy, fail_on)
    if fmt == "sarif":
        return _sarif(report, policy)
    return _text(report, fail_on)


def _text(report: ScanReport, fail_on: str) -> str:
    lines = []
    for finding in report.findings:
        mark = "" if finding.at_least(fail_on) else " (below --fail-on)"
        lines.append(f"{visible(finding.location)}:{finding.column}: {finding.severity} "
                     f"[{finding.rule_id}] {visible(finding.message)}{mark}")
        lines.append(f"    {finding.excerpt}")
        lines.append(f"    fingerprint {finding.fingerprint}")
    for skipped in report.skipped:
        lines.append(f"note: skipped {visible(skipped.path)}: {visible(skipped.reason)}")
    failing = len(report.failing(fail_on))
    lines.append(f"{report.scanned} file(s) scanned, {len(report.findings)} finding(s), "
                 f"{failing} at or above {fail_on}, {len(report.skipped)} skipped")
    return "\n".join(lines)


def _json(report: ScanReport, policy: Policy, fail_on: str) -> str:
    document = {
        "policy": policy.name,
        "fail_on": fail_on,
        "scanned": report.scanned,
        "findings": [finding.to_dict() for finding in report.findings],
        "skipped": [{"path": item.path, "reason": item.reason} for item in report.skipped],
        "failed": bool(report.failing(fail_on)),
    }
    return json.dumps(document, indent=2, ensure_ascii=False)


def _sarif(report: ScanReport, policy: Policy) -> str:
    rules = [{
        "id": rule.id,
        "shortDescription": {"text": rule.message},
        "fullDescription": {"text": rule.matcher.detector.description},
        "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
        "properties": {"severity": rule.severity},
    } for rule in policy.rules]
    index = {rule.id: number for number, rule in enumerate(policy.rules)}
    results: list[dict[str, Any]] = []
    for finding in report.findings:
        result: dict[str, Any] = {
            "ruleId": finding.rule_id,
            "ruleIndex": index.get(finding.rule_id, 0),
            "level": _SARIF_LEVEL[finding.severity],
            "message": {"text": f"{finding.message}: {finding.excerpt}"},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": finding.path},
                "region": {"startLine": finding.line, "startColumn": finding.column},
            }}],
            "partialFingerprints": {"hookgate/v1": finding.fingerprint},
        }
        if finding.commit:
            result["properties"] = {"commit": finding.commit}
        results.append(result)
    notifications = [{"level": "note", "message": {"text": f"skipped {item.path}: {item.reason}"}}
                     for item in report.skipped]
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "hookgate", "rules": rules}},
            "results": results,
            "invocations": [{"executionSuccessful": True,
                             "toolExecutionNotifications": notifications}],
        }],
    }
    return json.dumps(document, indent=2, ensure_ascii=False)
