"""Text made safe to show: secrets redacted (:func:`redact`) and control characters escaped (:func:`printable`).

Every error the project renders goes through :func:`redact` (``LlpipeError.worded``, the CLI's other messages, the
serving log), so a credential in ``AWS_ENDPOINT_URL=http://user:secret@host`` or in a botocore message never reaches
a terminal or a log. Stored text (a model description, a failure reason, a registry field) can hold anything a
caller wrote, terminal escape sequences included; the CLI's renderers print it through :func:`printable`.
"""

from __future__ import annotations

import logging
import re

MASK = "***"

# scheme://user[:password]@host: the user info, up to the last @ before the host's end
_USER_INFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<info>[^/\s@'\"<>]+)@")
# name=value, name: value, "name": "value" for names that hold a secret (aws_secret_access_key, SecretAccessKey,
# X-Amz-Signature, password, token, api_key ...), not a path's last part (/etc/passwd); the value up to a delimiter
_SECRET_NAME = (
    r"(?:aws[_-]?)?(?:secret(?:[_-]?access)?[_-]?key|session[_-]?token|security[_-]?token|password|passwd|pwd|api[_-]?key|"
    r"access[_-]?token|auth[_-]?token|token|secret|x-amz-signature|x-amz-credential|x-amz-security-token)"
)
_KEY_VALUE = re.compile(
    rf"(?P<name>(?<![\w/.\\-])(?:[a-z0-9]+[_-])*{_SECRET_NAME}\b)(?P<sep>[\"']?\s*[:=]\s*[\"']?)(?P<value>[^\s\"'&,;}}\])]+)",
    re.IGNORECASE,
)
# an AWS access key id (AKIA... long-term, ASIA... temporary)
_ACCESS_KEY_ID = re.compile(r"\b(?P<prefix>A(?:KIA|SIA))[A-Z0-9]{12,}\b")


def redact(text: str) -> str:
    """``text`` with secrets replaced by ``***``: a URL's user info (``http://***@host``), the value of a
    secret-named key (``aws_secret_access_key=***``, ``"SessionToken": "***"``, ``X-Amz-Signature=***``) and AWS
    access key ids (``AKIA***``)."""
    text = _USER_INFO.sub(lambda match: f"{match.group('scheme')}{MASK}@", text)
    text = _KEY_VALUE.sub(lambda match: f"{match.group('name')}{match.group('sep')}{MASK}", text)
    return _ACCESS_KEY_ID.sub(lambda match: f"{match.group('prefix')}{MASK}", text)


# C0 controls, DEL, C1 controls, and the invisible format characters that reorder or hide text (bidi overrides
# and isolates, zero-width joiners, the BOM): what a terminal acts on instead of showing
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: object, newlines: bool = False) -> str:
    """``text`` (any value, shown as ``str``) with every control character escaped as Python writes it (``\\x1b``,
    ``\\n``, ``\\u202e``), so stored text cannot move the cursor, recolour or clear a terminal, or forge lines;
    with ``newlines`` a line break is kept (a multi-line description) and only the rest escaped."""

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        if newlines and char == "\n":
            return char
        if char in _NAMED:
            return _NAMED[char]
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _CONTROLS.sub(escape, str(text))


class RedactingFilter(logging.Filter):
    """A logging filter that redacts a record's message and its traceback text before any handler writes them."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True
