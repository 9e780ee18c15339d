"""paddle.base.log_helper (also paddle.static.log_helper): a logger writing to stderr."""
import logging


def get_logger(name, level, fmt=None):
    """The logger `name` at `level`, with one stream handler formatted by `fmt` (added
    once: asking again for the same logger does not duplicate its lines)."""
    if not isinstance(name, str):
        raise TypeError(f"get_logger: name must be a str, got {type(name).__name__}")
    logger = logging.getLogger(name)
    logger.setLevel(level)
    if not any(getattr(h, "_oar_log_helper", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler._oar_log_helper = True
        if fmt:
            handler.setFormatter(logging.Formatter(fmt=fmt))
        logger.addHandler(handler)
    logger.propagate = False
    return logger
