"""Running hook programs as child processes: `runner` (the plumbing shared by ``command``,
``process`` and quality-gate hooks) and `sandbox` (bubblewrap around them). Modules here
import the standard library's ``subprocess`` absolutely."""
