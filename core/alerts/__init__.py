"""Alerts (issue 34 items 1-3): rules judged from a run's snapshot, sent to webhooks, e-mail or a command
by a background dispatcher that never slows the watcher. Pure Python: no streamlit."""

from core.alerts.channels import Target, parse_target
from core.alerts.delivery import Dispatcher
from core.alerts.rules import Alert, Alerter, AlertRule, RuleSettings, judge

__all__ = ["Alert", "AlertRule", "Alerter", "Dispatcher", "RuleSettings", "Target", "judge", "parse_target"]
