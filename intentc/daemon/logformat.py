"""How the daemon's log lines look: text for a terminal, JSON lines for a log pipeline.

In a cluster the daemon's stderr goes to a collector (Loki, Elasticsearch,
Cloud Logging) that indexes fields; one JSON object per line, with the
level, logger and message as fields, needs no parsing rules there.  Field
names follow the common convention (`time`, `level`, `logger`, `msg`);
values a call passes in `extra=` are kept as fields too.
"""

from __future__ import annotations

import enum
import json
import logging
from datetime import datetime, timezone


class LogFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"


class LogLevel(str, enum.Enum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Attributes every LogRecord has; anything else was passed with `extra=`.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                doc[key] = value
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False, default=str)


def configure(level: LogLevel, fmt: LogFormat) -> None:
    """Set up the root logger's one handler (stderr) for `intentc daemon`."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt is LogFormat.JSON else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=getattr(logging, level.name), handlers=[handler], force=True)
