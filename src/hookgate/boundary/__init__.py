"""The boundary layer: one content scanner for ``hookgate scan``, ``hookgate scrub``, the git
pre-push guard and the ``content-guard`` builtin hook.

Kept apart from the engine so the commands that run on every push import only this package.
"""

from __future__ import annotations

from hookgate.boundary.policy import Policy, PolicyError, default_policy, load_policy, parse_policy
from hookgate.boundary.scanner import Finding, Scanner, ScanReport, mask_value

__all__ = [
    "Finding",
    "Policy",
    "PolicyError",
    "ScanReport",
    "Scanner",
    "default_policy",
    "load_policy",
    "mask_value",
    "parse_policy",
]
