"""The workspace's alert settings: `alerts.json` (mode 0600: it holds the SMTP password and the webhooks'
signing secrets), with rule defaults a run may override. Secrets are never shown back in full.

    {"rules": {"hang_s": 600, "spike_factor": 5, "enabled": ["rank_failed", "hang"]},
     "runs": {"pretrain-64": {"hang_s": 1800}},
     "smtp": {"host": "smtp.example.com", "port": 587, "user": "bot", "password": "...", "sender": "bot@x"},
     "secrets": {"https://open.feishu.cn/open-apis/bot/v2/hook/abc": "signing secret"},
     "targets": [{"to": "https://hooks.slack.com/services/T0/B0/X", "format": "slack"}, {"to": "mailto:a@b.org"}]}

`targets` are the standing targets of every launched run: its supervisor starts a watch that sends to them
(`watch --alert-targets-of-workspace`), so a launched run alerts with no tab and no command of its own.
"""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from core.alerts.channels import AlertTargetError, SmtpSettings, Target, mask, parse_target
from core.alerts.formats import Format
from core.alerts.rules import AlertRule, RuleSettings
from core.files import write_replacing
from core.workspace import ALERTS_FILE, short

__all__ = ["ALERTS_FILE", "AlertSettings", "load", "parse_targets", "rule_settings", "save"]

MAX_BYTES = 64 << 10
MAX_TARGETS = 16  # standing targets of launched runs: a handful of channels, not a mailing list
TARGET_KEYS = ("to", "format")


@dataclass(frozen=True)
class AlertSettings:
    rules: RuleSettings = field(default_factory=RuleSettings)
    smtp: SmtpSettings | None = None
    secrets: dict[str, str] = field(default_factory=dict)  # webhook URL -> signing secret
    runs: dict[str, RuleSettings] = field(default_factory=dict)  # a run's own rules (over the defaults)
    targets: tuple[Target, ...] = ()  # where every launched run's alerts go (its supervisor's watch)

    def rules_for(self, run: str) -> RuleSettings:
        """The run's own rules when alerts.json names it, else the workspace's defaults."""
        return self.runs.get(run, self.rules)

    def describe(self) -> str:
        """What the settings hold, secrets shown as their last 4 characters."""
        smtp = self.smtp.describe() if self.smtp else "none"
        hooks = ", ".join(f"{short(u)} {mask(s)}" for u, s in self.secrets.items()) or "none"
        targets = ", ".join(t.describe() for t in self.targets) or "none"
        return f"smtp: {smtp}; signing secrets: {hooks}; targets: {targets}"


def rule_settings(data: object, base: RuleSettings | None = None, where: str = ALERTS_FILE) -> RuleSettings:
    """`{"hang_s": 30, "enabled": [...]}` over `base` (the workspace's defaults for a run's own rules)."""
    base = base or RuleSettings()
    if data is None:
        return base
    if not isinstance(data, dict):
        raise AlertTargetError(f"{where}: rules must be an object, not {short(data)}")
    known = {f.name: f.type for f in fields(RuleSettings)}
    changes: dict = {}
    for key, value in data.items():
        if key not in known:
            raise AlertTargetError(f"{where}: unknown rule setting {short(key)} (known: {', '.join(known)})")
        if key == "enabled":
            try:
                changes[key] = frozenset(AlertRule(v) for v in value)
            except (TypeError, ValueError):
                names = ", ".join(r.value for r in AlertRule)
                raise AlertTargetError(f"{where}: enabled {short(value)} is not a list of {names}") from None
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise AlertTargetError(f"{where}: {key} {short(value)} is not a number")
        else:
            changes[key] = int(value) if key in ("spike_window", "straggler_steps") else float(value)
    try:
        return replace(base, **changes)
    except ValueError as exc:
        raise AlertTargetError(f"{where}: {exc}") from None


def _smtp(data: object, where: str) -> SmtpSettings | None:
    if data is None:
        return None
    ok = isinstance(data, dict) and isinstance(data.get("host"), str) and data["host"]
    port = data.get("port", 587) if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or not ok
        or isinstance(port, bool)
        or not isinstance(port, int)
        or not 0 < port < 65536
    ):
        raise AlertTargetError(f"{where}: smtp needs a host and a port 1-65535, got {short(data)}")
    text = {k: data.get(k, "") for k in ("user", "password", "sender", "cafile")}
    if not all(isinstance(v, str) for v in text.values()):
        raise AlertTargetError(f"{where}: smtp user, password, sender and cafile must be strings")
    sender = text["sender"] or "shardscope@localhost"
    return SmtpSettings(data["host"], port, text["user"], text["password"], sender, cafile=text["cafile"])


def parse_targets(
    data: object, secrets: dict[str, str], smtp: SmtpSettings | None, where: str = ALERTS_FILE
) -> tuple[Target, ...]:
    """`[{"to": "https://...", "format": "slack"}, {"to": "mailto:a@b"}, {"to": "exec:/path"}]` -> Targets
    (a webhook's signing secret from `secrets`, e-mail through `smtp`); a bad entry is one line naming it."""
    if data is None:
        return ()
    if not isinstance(data, list) or len(data) > MAX_TARGETS:
        raise AlertTargetError(f"{where}: targets must be a list of at most {MAX_TARGETS} objects, not {short(data)}")
    out = []
    for i, item in enumerate(data):
        at = f"{where}: targets[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("to"), str):
            raise AlertTargetError(f'{at} must be an object with a "to" string, not {short(item)}')
        unknown = [k for k in item if k not in TARGET_KEYS]
        if unknown:
            raise AlertTargetError(f"{at}: unknown key {short(unknown[0])} (known: {', '.join(TARGET_KEYS)})")
        fmt = item.get("format", "json")
        if not isinstance(fmt, str) or fmt not in {f.value for f in Format}:
            raise AlertTargetError(f"{at}: format {short(fmt)} is not one of {', '.join(f.value for f in Format)}")
        try:
            out.append(parse_target(item["to"], fmt, secrets.get(item["to"]), smtp))
        except AlertTargetError as exc:  # "--alert 'x': why" -> "alerts.json: targets[i] 'x': why"
            raise AlertTargetError(f"{at} {short(item['to'])}: {str(exc).split(': ', 1)[-1]}") from None
    return tuple(out)


def load(workspace: Path) -> AlertSettings:
    """The workspace's alert settings (none: the defaults). A file others may read is refused: it holds secrets."""
    path = workspace / ALERTS_FILE
    try:
        st = path.lstat()
    except FileNotFoundError:
        return AlertSettings()
    except OSError as exc:
        raise AlertTargetError(f"{path}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
        raise AlertTargetError(f"{path}: not a regular file of at most {MAX_BYTES // 1024} KiB")
    if st.st_mode & 0o077:
        raise AlertTargetError(f"{path}: mode {stat.S_IMODE(st.st_mode):o} lets others read its secrets: chmod 600 it")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AlertTargetError(f"{path}: not valid JSON ({short(str(exc))})") from None
    if not isinstance(data, dict):
        raise AlertTargetError(f"{path}: must hold a JSON object")
    secrets = data.get("secrets", {})
    if not isinstance(secrets, dict) or not all(isinstance(v, str) for v in secrets.values()):
        raise AlertTargetError(f"{path}: secrets must map webhook URLs to strings")
    rules = rule_settings(data.get("rules"), where=str(path))
    runs = data.get("runs", {})
    if not isinstance(runs, dict):
        raise AlertTargetError(f"{path}: runs must map run names to rule settings")
    per_run = {str(k): rule_settings(v, rules, f"{path}: runs.{short(k)}") for k, v in runs.items()}
    smtp = _smtp(data.get("smtp"), str(path))
    targets = parse_targets(data.get("targets"), secrets, smtp, str(path))
    return AlertSettings(rules, smtp, secrets, per_run, targets)


def save(workspace: Path, data: dict) -> Path:
    """Write `alerts.json` atomically with mode 0600 (created so: never readable by others, even briefly)."""
    workspace.mkdir(parents=True, exist_ok=True)
    return write_replacing(workspace / ALERTS_FILE, json.dumps(data, indent=1).encode("utf-8"), mode=0o600)
