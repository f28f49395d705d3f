"""Webhook body formats and signatures, as each service documents them.

- slack: Slack incoming webhooks take a JSON payload with a `text` field
  (https://api.slack.com/messaging/webhooks; docs.slack.dev "Incoming webhooks": `{"text":"Hello, World!"}`).
- feishu: Feishu/Lark custom bots take `{"msg_type":"text","content":{"text":...}}`; with signature
  verification on, the body also carries `timestamp` (seconds) and
  `sign = base64(hmac_sha256(key=f"{timestamp}\\n{secret}", msg=b""))`
  (https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot, "签名校验").
- dingtalk: DingTalk custom robots take `{"msgtype":"text","text":{"content":...}}`; with signing on,
  `&timestamp=MS&sign=urlencode(base64(hmac_sha256(key=secret, msg=f"{timestamp}\\n{secret}")))` is
  appended to the webhook URL (https://open.dingtalk.com/document/robots/customize-robot-security-settings).
- wecom: WeCom group robots take `{"msgtype":"text","text":{"content":...}}`
  (https://developer.work.weixin.qq.com/document/path/91770; content at most 2,048 bytes).
- json: ours: `rule`, `run`, `ranks` (the first failing rank first), `count`, `step`, `message`, `evidence`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import urllib.parse
from enum import StrEnum

from core.alerts.rules import Alert

__all__ = ["Format", "body", "dingtalk_sign", "feishu_sign", "signed_url"]

WECOM_MAX_BYTES = 2048


class Format(StrEnum):
    JSON = "json"
    SLACK = "slack"
    FEISHU = "feishu"
    DINGTALK = "dingtalk"
    WECOM = "wecom"


def feishu_sign(timestamp: int, secret: str) -> str:
    """Feishu's signature: HMAC-SHA256 keyed by "timestamp\\nsecret" over an empty message, base64."""
    key = f"{timestamp}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


def dingtalk_sign(timestamp_ms: int, secret: str) -> str:
    """DingTalk's signature: HMAC-SHA256 keyed by the secret over "timestamp\\nsecret", base64, URL-quoted."""
    digest = hmac.new(secret.encode(), f"{timestamp_ms}\n{secret}".encode(), hashlib.sha256).digest()
    return urllib.parse.quote_plus(base64.b64encode(digest))


def _cut_bytes(text: str, limit: int) -> str:
    data = text.encode()
    return text if len(data) <= limit else data[: limit - 3].decode("utf-8", "ignore") + "…"


def body(alert: Alert, fmt: Format, secret: str | None = None, now: float | None = None) -> dict:
    """The JSON body of one alert in `fmt` (Feishu's signature goes in the body when a secret is given)."""
    text = alert.text()
    if fmt == Format.SLACK:
        return {"text": text}
    if fmt == Format.FEISHU:
        out: dict = {"msg_type": "text", "content": {"text": text}}
        if secret:
            ts = int(time.time() if now is None else now)
            out = {"timestamp": str(ts), "sign": feishu_sign(ts, secret), **out}
        return out
    if fmt == Format.DINGTALK:
        return {"msgtype": "text", "text": {"content": text}}
    if fmt == Format.WECOM:
        return {"msgtype": "text", "text": {"content": _cut_bytes(text, WECOM_MAX_BYTES)}}
    return alert.to_dict()


def signed_url(url: str, fmt: Format, secret: str | None, now: float | None = None) -> str:
    """DingTalk's signature goes in the URL (`&timestamp=...&sign=...`); the other formats keep the URL."""
    if fmt != Format.DINGTALK or not secret:
        return url
    ms = int((time.time() if now is None else now) * 1000)
    sep = "&" if urllib.parse.urlsplit(url).query else "?"
    return f"{url}{sep}timestamp={ms}&sign={dingtalk_sign(ms, secret)}"


def encode(payload: dict) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode()
