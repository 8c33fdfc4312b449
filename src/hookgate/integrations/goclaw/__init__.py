"""GoClaw's quality gates: the gate objects and their retry loop (`gates`), the
``quality_gate`` handler type (`handler`) and the hooks-file format that finds gates in
GoClaw's configuration (`config`)."""
