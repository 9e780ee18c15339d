"""paddle.jit.dy2static.program_translator.ProgramTranslator: the process-wide switch of
to_static conversion (a singleton), as Paddle 3.3's; enable(False) makes every to_static
function run eagerly, exactly as oar.jit.enable_to_static(False)."""

__all__ = ["ProgramTranslator"]


class ProgramTranslator:
    """The one translator of the process: ProgramTranslator() and get_instance() return it."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @classmethod
    def get_instance(cls):
        return cls()

    @classmethod
    def reset(cls):
        """Back to the default state: conversion on."""
        cls.get_instance().enable(True)

    def enable(self, enable_to_static):
        """Switches to_static conversion on (True) or off (False: decorated code runs
        eagerly)."""
        if not isinstance(enable_to_static, bool):
            raise TypeError(f"ProgramTranslator.enable: enable_to_static must be a bool, got "
                            f"{type(enable_to_static).__name__}")
        from .. import api
        api.enable_to_static(enable_to_static)

    @property
    def enable_to_static(self):
        from .. import api
        return api._enabled
