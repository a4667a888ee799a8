"""structlog set-up: JSON lines to stderr for services, readable lines for people at a terminal.

Every line of work carries the context bound where the work starts (`runtime_id`,
`scheduling_id`, `correlation_id`, `component`). Callers pass identifiers, never kubeconfigs or
configuration values; and because messages from elsewhere (an apiserver's rejection, an
exception) may quote one, every line written inside `util.secrecy.scrubbing(...)` is scrubbed
last, exception text included.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

import structlog

from reconciler.util import secrecy


class _CurrentStderr:
    """Whatever `sys.stderr` is at write time (test runners and the CLI's runner swap it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def scrub_secrets(
    _logger: object, _method: str, event: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    """Remove the secrets of the work at hand (the active scrubber) from every value."""
    scrub = secrecy.active()
    return scrub.data(event) if scrub else event


LogSink = Callable[[structlog.typing.EventDict], None]
_OURS = "_reconciler_handler"


def configure_logging(
    *, json_lines: bool = True, level: str = "INFO", sink: LogSink | None = None
) -> None:
    """`sink`: hand every (scrubbed) line to it instead of writing it: a CLI showing people a
    table gathers its log lines and tells them in plain words at the end."""
    processors: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor = (
        _gather(sink)
        if sink is not None
        else structlog.processors.JSONRenderer()
        if json_lines
        else structlog.dev.ConsoleRenderer(
            colors=sys.stderr.isatty(),
            # rich tracebacks would print local variables: request bodies, secret values
            exception_formatter=structlog.dev.plain_traceback,
        )
    )
    numeric = logging.getLevelName(level.upper())
    structlog.configure(
        processors=[
            *processors,
            structlog.processors.format_exc_info,
            scrub_secrets,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
    _route_standard_logging(numeric, processors, renderer, sink)


class _ToSink(logging.Handler):
    def __init__(self, sink: LogSink) -> None:
        super().__init__()
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink(
            {"event": record.getMessage(), "level": record.levelname.lower(), "logger": record.name}
        )


def _route_standard_logging(
    level: int,
    processors: list[structlog.types.Processor],
    renderer: structlog.types.Processor,
    sink: LogSink | None,
) -> None:
    """What libraries log through the standard library (uvicorn, kopf, httpx, asyncio) from
    warning up comes out in the same schema as our own lines, scrubbed: one handler on the root
    logger, replacing any earlier one of ours."""
    handler: logging.Handler
    if sink is not None:
        handler = _ToSink(sink)
    else:
        handler = logging.StreamHandler(_CurrentStderr())
        handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                foreign_pre_chain=[structlog.stdlib.add_logger_name, *processors],
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info,
                    scrub_secrets,
                    renderer,
                ],
            )
        )
    setattr(handler, _OURS, True)
    root = logging.getLogger()
    root.handlers = [h for h in root.handlers if not getattr(h, _OURS, False)] + [handler]
    # libraries only from warning up, whatever our level: their debug lines (aiosqlite's and
    # SQLAlchemy's statements with parameters, httpx's requests) come from threads our
    # scrubber does not see, and their info lines are one per request, what metrics are for
    root.setLevel(max(level, logging.WARNING))


def reset_standard_logging() -> None:
    """Remove what `configure_logging` did to the standard library's root logger (tests)."""
    root = logging.getLogger()
    root.handlers = [h for h in root.handlers if not getattr(h, _OURS, False)]
    root.setLevel(logging.WARNING)


def _gather(sink: LogSink) -> structlog.types.Processor:
    def gather(
        _logger: object, _method: str, event: structlog.typing.EventDict
    ) -> structlog.typing.EventDict:
        sink(event)
        raise structlog.DropEvent

    return gather


def get_logger(**context: object) -> structlog.typing.FilteringBoundLogger:
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger().bind(**context)
    return logger


_TROUBLE = {"Error", "Failed", "Warning"}


def log_state_change(
    log: structlog.typing.FilteringBoundLogger,
    kind: str,
    previous: object,
    state: str,
    message: str = "",
) -> None:
    """One line when a resource's `status.state` changes (none when it stays): what a person
    follows in a controller's log. Troubled states are warnings."""
    before = str(previous or "")
    if before == state:
        return
    line = log.warning if state in _TROUBLE else log.info
    line(f"{kind} state changed", state=state, previous=before or None, message=message or None)
