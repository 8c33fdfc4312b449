"""The boundary layer's commands: ``hookgate scan``, ``hookgate scrub``, ``hookgate pre-push``.

These run on every push, so this module imports only click at load time and the scanner
package when a command runs (never the engine, the store or the gateway).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from hookgate.boundary.policy import Policy
    from hookgate.boundary.scanner import ScanReport

SEVERITY_CHOICE = click.Choice(["info", "low", "medium", "high", "critical"])


def register(main: click.Group) -> None:
    main.add_command(scan)
    main.add_command(scrub)
    main.add_command(pre_push)


def _policy(path: str | None) -> Policy:
    from hookgate.boundary.policy import PolicyError, default_policy, load_policy

    try:
        return load_policy(path) if path else default_policy()
    except PolicyError as exc:
        for problem in exc.problems:
            click.echo(f"{exc.source}: {problem}", err=True)
        raise SystemExit(2) from None


policy_option = click.option(
    "--policy", "policy_path", type=click.Path(dir_okay=False), default=None,
    help="Policy file (YAML or JSON). Default: the shipped public-repo policy.")


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option("--stdin", "from_stdin", is_flag=True, help="Scan standard input.")
@click.option("--git-range", "git_ranges", multiple=True, metavar="A..B",
              help="Scan the lines added by the commits in A..B (repeatable).")
@policy_option
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif"]), default="text",
              show_default=True)
@click.option("--fail-on", type=SEVERITY_CHOICE, default=None,
              help="Exit 1 on findings at or above this severity (default: the policy's).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the report here instead of standard output.")
def scan(paths: tuple[str, ...], from_stdin: bool, git_ranges: tuple[str, ...],
         policy_path: str | None, fmt: str, fail_on: str | None, output: str | None) -> None:
    """Scan files, directories, stdin or git commits for secrets, private addresses and
    internal host names.

    Exit status: 0 clean, 1 findings at or above --fail-on, 2 bad usage or policy.
    """
    from hookgate.boundary.gitscan import GitError, scan_revisions, user_range
    from hookgate.boundary.scanner import Scanner, ScanReport, Skipped, looks_binary

    if not (paths or from_stdin or git_ranges):
        raise click.UsageError("give PATH..., --stdin or --git-range A..B")
    try:
        ranges = [user_range(git_range) for git_range in git_ranges]
    except GitError as exc:
        click.echo(f"hookgate scan: --git-range: {exc}", err=True)
        raise SystemExit(2) from None
    policy = _policy(policy_path)
    # The repository's own files and commits may carry `hookgate:allow` when the policy says
    # so; standard input is some program's output, and a marker in it accepts nothing.
    scanner = Scanner(policy, inline_allow=policy.inline_allow)
    report = ScanReport()
    if from_stdin:
        data = sys.stdin.buffer.read(policy.max_file_bytes + 1)
        if len(data) > policy.max_file_bytes:
            report.skipped.append(Skipped("<stdin>", f"larger than {policy.max_file_bytes} bytes"))
        elif looks_binary(data):
            report.skipped.append(Skipped("<stdin>", "binary"))
        else:
            report.scanned += 1
            report.findings.extend(Scanner(policy).scan_bytes(data, "<stdin>"))
    if paths:
        report.extend(scanner.scan_paths(paths))
    history_unscanned = False
    for revisions in ranges:
        try:
            scanned = scan_revisions(scanner, revisions)
        except GitError as exc:
            click.echo(f"hookgate scan: {exc}", err=True)
            raise SystemExit(2) from None
        history_unscanned = history_unscanned or bool(scanned.skipped)
        report.extend(scanned)
    _finish(report, policy, fmt, fail_on or policy.fail_on, output)
    if history_unscanned:  # as the pre-push guard: commits that could not be scanned fail
        click.echo("hookgate scan: some additions in --git-range could not be scanned (see "
                   "'skipped'); failing", err=True)
        raise SystemExit(1)
    raise SystemExit(1 if report.failing(fail_on or policy.fail_on) else 0)


def _finish(report: ScanReport, policy: Policy, fmt: str, fail_on: str,
            output: str | None, *, stream_err: bool = False) -> None:
    """Print or write the report (the caller decides the exit status)."""
    from hookgate.boundary.report import render

    text = render(report, policy, fmt, fail_on)
    if output:
        Path(output).write_text(text + "\n", encoding="utf-8")
    else:
        click.echo(text, err=stream_err)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@policy_option
@click.option("--apply", "apply_changes", is_flag=True,
              help="Rewrite the files in place (atomically). Without it: preview only.")
@click.option("--show-values", is_flag=True,
              help="Show the removed values in the preview (they are shortened by default).")
def scrub(paths: tuple[str, ...], policy_path: str | None, apply_changes: bool,
          show_values: bool) -> None:
    """Scrub what the policy finds from the files under PATHS.

    By default prints a unified diff of what would change and writes nothing; --apply
    rewrites each changed file in place. Replacements come from each rule's `replace:`
    (a mask of the value when it has none).
    """
    from hookgate.boundary.scanner import Scanner
    from hookgate.boundary.scrub import apply_plan, plan_scrub, render_preview

    policy = _policy(policy_path)
    # Staged artifacts are what pipelines and agents produced: no inline marker counts.
    plan = plan_scrub(Scanner(policy), paths)
    for skipped in plan.skipped:
        click.echo(f"note: skipped {skipped.path}: {skipped.reason}", err=True)
    if not plan.files:
        click.echo("nothing to scrub", err=True)
        return
    if not apply_changes:
        click.echo(render_preview(plan, show_values=show_values), nl=False)
        click.echo(f"{plan.replacements} replacement(s) in {len(plan.files)} file(s) would be "
                   "made; run again with --apply to write them", err=True)
        return
    conflicts = apply_plan(plan)
    for display in conflicts:
        click.echo(f"hookgate scrub: {display} changed while scrubbing; left as it is", err=True)
    written = len(plan.files) - len(conflicts)
    click.echo(f"scrubbed {written} file(s)", err=True)
    raise SystemExit(1 if conflicts else 0)


@click.group("pre-push")
def pre_push() -> None:
    """The git pre-push guard: block pushes whose commits add findings."""


@pre_push.command("install")
@click.option("--policy", "policy_path", default=None,
              help="Policy file, relative to the repository root (default: the shipped one).")
@click.option("--fail-on", type=SEVERITY_CHOICE, default=None)
@click.option("--force", is_flag=True,
              help="Replace a pre-push hook that is not ours (kept for uninstall), or remove a "
                   "core.hooksPath that is not ours.")
def pre_push_install(policy_path: str | None, fail_on: str | None, force: bool) -> None:
    """Write the pre-push hook into the repository's own hooks directory (.git/hooks)."""
    from hookgate.boundary.prepush import InstallError, install

    try:
        installed = install(Path.cwd(), policy=policy_path, fail_on=fail_on, force=force)
    except InstallError as exc:
        click.echo(f"hookgate pre-push install: {exc}", err=True)
        raise SystemExit(1) from None
    click.echo(f"wrote {installed.path}")
    if installed.hooks_path_removed is not None:
        click.echo(f"removed core.hooksPath={installed.hooks_path_removed}: git ran hooks from "
                   "a folder of the work tree, so any branch you checked out could run code "
                   "through it; hooks now run from the repository's own hooks directory only")
    if installed.saved is not None:
        click.echo(f"kept the previous pre-push hook as {installed.saved}; "
                   "'hookgate pre-push uninstall' puts it back")
    if installed.stale_tracked_hook is not None:
        click.echo(f"{installed.stale_tracked_hook} (the old layout) is no longer used: "
                   "remove it from the repository (git rm) so nobody switches it on again")
    click.echo("each clone runs 'hookgate pre-push install' once (git never installs hooks by "
               "cloning)")
    click.echo("git push --no-verify bypasses the hook: use it only when you know exactly "
               "what you are pushing")


@pre_push.command("uninstall")
def pre_push_uninstall() -> None:
    """Remove the pre-push hook; put back the one it replaced, if any."""
    from hookgate.boundary.prepush import InstallError, uninstall

    try:
        removed = uninstall(Path.cwd())
    except InstallError as exc:
        click.echo(f"hookgate pre-push uninstall: {exc}", err=True)
        raise SystemExit(1) from None
    if removed.restored is not None:
        click.echo(f"removed hookgate's hook and put the previous one back at {removed.path}")
    else:
        click.echo(f"removed {removed.path}")


@pre_push.command("run", hidden=True)
@click.argument("remote", default="origin")
@click.argument("url", required=False)
@policy_option
@click.option("--policy-sha256", default=None,
              help="The policy file's digest when install approved it; another blocks.")
@click.option("--fail-on", type=SEVERITY_CHOICE, default=None)
def pre_push_run(remote: str, url: str | None, policy_path: str | None,
                 policy_sha256: str | None, fail_on: str | None) -> None:
    """Called by the pre-push hook: scan the commits git says are being pushed (stdin)."""
    from hookgate.boundary.gitscan import GitError, parse_pre_push, push_revisions, scan_revisions
    from hookgate.boundary.report import render
    from hookgate.boundary.scanner import Scanner, ScanReport

    _warn_tracked_hooks_path()
    policy = _pinned_policy(policy_path, policy_sha256) if policy_sha256 else _policy(policy_path)
    threshold = fail_on or policy.fail_on
    scanner = Scanner(policy, inline_allow=policy.inline_allow)
    report = ScanReport()
    try:
        for ref in parse_pre_push(sys.stdin.read()):
            revisions = push_revisions(ref, remote)
            if revisions is not None:
                report.extend(scan_revisions(scanner, revisions))
    except GitError as exc:  # fail closed: an unscanned push does not go out
        click.echo(f"pre-push: cannot scan the pushed commits ({exc}); push blocked", err=True)
        click.echo("pre-push: 'git push --no-verify' bypasses this check", err=True)
        raise SystemExit(1) from None
    failing = report.failing(threshold)
    if report.findings or report.skipped:
        click.echo(render(report, policy, "text", threshold), err=True)
    if failing:
        allow_hint = ("the policy's allow-list or a 'hookgate:allow' comment"
                      if policy.inline_allow else "the policy's allow-list")
        click.echo(f"pre-push: push blocked by hookgate: {len(failing)} finding(s) at or above "
                   f"{threshold} in the commits being pushed. Remove them (rewrite the commits), "
                   f"accept them in {allow_hint}, or bypass with 'git push --no-verify' if you "
                   "know exactly what you are pushing.", err=True)
        raise SystemExit(1)
    if report.skipped:  # fail closed: what could not be scanned does not go out either
        click.echo(f"pre-push: push blocked by hookgate: {len(report.skipped)} change(s) in the "
                   "commits being pushed could not be scanned (see 'skipped' above). Split "
                   "them, raise the policy's max_file_bytes, accept their paths in the "
                   "policy's allow-list, or bypass with 'git push --no-verify' if you know "
                   "exactly what you are pushing.", err=True)
        raise SystemExit(1)


def _pinned_policy(path: str | None, sha256: str) -> Policy:
    """The policy file, only if its bytes are the ones install approved (a branch can edit a
    tracked file; it must not loosen the guard that scans that branch)."""
    import hashlib

    from hookgate.boundary.policy import PolicyError, policy_from_bytes

    source = path or "<policy>"
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        click.echo(f"pre-push: cannot read the policy {source}: {exc.strerror or exc}; "
                   "push blocked", err=True)
        raise SystemExit(1) from None
    if hashlib.sha256(data).hexdigest() != sha256.lower():
        click.echo(f"pre-push: the policy file {source} is not the one 'hookgate pre-push "
                   "install' approved (a commit or a checked-out branch changed it). Review the "
                   f"change, then run 'hookgate pre-push install --policy {source}' again. "
                   "Push blocked.", err=True)
        raise SystemExit(1)
    try:
        return policy_from_bytes(data, source)
    except PolicyError as exc:
        for problem in exc.problems:
            click.echo(f"{exc.source}: {problem}", err=True)
        raise SystemExit(2) from None


def _warn_tracked_hooks_path() -> None:
    """Say so when git runs hooks from a folder of the work tree (the old layout)."""
    from hookgate.boundary.prepush import InstallError, tracked_hooks_path

    try:
        value = tracked_hooks_path(Path.cwd())
    except InstallError:
        return
    if value is not None:
        click.echo(f"pre-push: warning: core.hooksPath is {value!r}, a folder of the work tree: "
                   "any branch you check out can run code through it. Run 'hookgate pre-push "
                   "install' to move the guard into the repository's own hooks directory.",
                   err=True)
