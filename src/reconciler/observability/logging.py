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
    structlog.configure(
        processors=[
            *processors,
            structlog.processors.format_exc_info,
            scrub_secrets,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )


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
